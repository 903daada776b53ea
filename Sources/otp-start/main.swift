import LambdaAuth

HandlerMain.run(HandlerCatalogue.otpStart)
