import LambdaAuth

HandlerMain.run(HandlerCatalogue.signout)
