import LambdaAuth

HandlerMain.run(HandlerCatalogue.passkey)
