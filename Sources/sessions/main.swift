import LambdaAuth

HandlerMain.run(name: "sessions", factory: Startup.handler { SessionsHandler(services: $0) })
