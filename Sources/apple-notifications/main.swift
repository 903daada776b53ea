import LambdaAuth

HandlerMain.run(name: "apple-notifications", factory: Startup.handler { AppleNotificationsHandler(services: $0) })
