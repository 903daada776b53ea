import LambdaAuth

HandlerMain.run(HandlerCatalogue.authorizer)
