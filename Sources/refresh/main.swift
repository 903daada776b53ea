import LambdaAuth

HandlerMain.run(name: "refresh") { _, _ in UnavailableFlowHandler(flow: "refresh") }
