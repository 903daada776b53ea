import LambdaAuth

HandlerMain.run(name: "delete-account") { configuration, logger in
    DeleteAccountHandler(services: try AuthServices(configuration: configuration, logger: logger))
}
