import LambdaAuth

HandlerMain.run(name: "refresh") { configuration, logger in
    RefreshHandler(services: try AuthServices(configuration: configuration, logger: logger))
}
