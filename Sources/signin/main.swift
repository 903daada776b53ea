import LambdaAuth

HandlerMain.run(name: "signin", factory: Startup.handler { SignInHandler(services: $0) })
