import LambdaAuth

HandlerMain.run(HandlerCatalogue.wellKnown)
