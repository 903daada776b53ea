import LambdaAuth

HandlerMain.run(name: "signin") { _, _ in UnavailableFlowHandler(flow: "signin") }
