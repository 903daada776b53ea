import LambdaAuth

HandlerMain.run(HandlerCatalogue.linkProvider)
