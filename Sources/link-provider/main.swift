import LambdaAuth

HandlerMain.run(name: "link-provider", factory: Startup.handler { LinkProviderHandler(services: $0) })
