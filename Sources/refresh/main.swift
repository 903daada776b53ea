import LambdaAuth

HandlerMain.run(name: "refresh", factory: Startup.handler { RefreshHandler(services: $0) })
