import LambdaAuth

HandlerMain.run(HandlerCatalogue.appleNotifications)
