import LambdaAuth

HandlerMain.run(HandlerCatalogue.refresh)
