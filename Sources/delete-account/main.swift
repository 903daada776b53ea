import LambdaAuth

HandlerMain.run(name: "delete-account", factory: Startup.handler { DeleteAccountHandler(services: $0) })
