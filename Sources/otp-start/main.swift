import LambdaAuth

HandlerMain.run(name: "otp-start", factory: Startup.handler { OneTimeCodeStartHandler(services: $0) })
