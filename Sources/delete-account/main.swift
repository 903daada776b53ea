import LambdaAuth

HandlerMain.run(HandlerCatalogue.deleteAccount)
