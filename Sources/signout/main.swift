import LambdaAuth

HandlerMain.run(name: "signout") { configuration, logger in
    SignOutHandler(services: try AuthServices(configuration: configuration, logger: logger))
}
