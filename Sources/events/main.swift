import LambdaAuth

HandlerMain.run(HandlerCatalogue.events)
