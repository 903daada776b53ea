import LambdaAuth

HandlerMain.run(name: "otp-start") { configuration, logger in
    OneTimeCodeStartHandler(services: try AuthServices(configuration: configuration, logger: logger))
}
