import LambdaAuth

HandlerMain.run(name: "well-known", factory: Startup.handler { WellKnownHandler(services: $0) })
