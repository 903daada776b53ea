import LambdaAuth

HandlerMain.run(name: "signout", factory: Startup.handler { SignOutHandler(services: $0) })
