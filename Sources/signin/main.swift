import LambdaAuth

HandlerMain.run(name: "signin") { configuration, logger in
    SignInHandler(services: try AuthServices(configuration: configuration, logger: logger))
}
