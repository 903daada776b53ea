import LambdaAuth

HandlerMain.run(HandlerCatalogue.signin)
