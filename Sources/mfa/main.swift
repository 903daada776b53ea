import LambdaAuth

HandlerMain.run(HandlerCatalogue.mfa)
