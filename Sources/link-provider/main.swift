import LambdaAuth

HandlerMain.run(name: "link-provider") { configuration, logger in
    LinkProviderHandler(services: try AuthServices(configuration: configuration, logger: logger))
}
