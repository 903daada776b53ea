import LambdaAuth

HandlerMain.run(name: "link-provider") { _, _ in UnavailableFlowHandler(flow: "link-provider") }
