import LambdaAuth

HandlerMain.run(name: "apple-notifications") { configuration, logger in
    AppleNotificationsHandler(services: try AuthServices(configuration: configuration, logger: logger))
}
