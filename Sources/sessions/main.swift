import LambdaAuth

HandlerMain.run(HandlerCatalogue.sessions)
