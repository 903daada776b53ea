import LambdaAuth

HandlerMain.run(name: "sessions") { configuration, logger in
    SessionsHandler(services: try AuthServices(configuration: configuration, logger: logger))
}
