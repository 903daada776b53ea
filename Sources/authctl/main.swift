import LambdaAuth

AuthCtl.main(Array(CommandLine.arguments.dropFirst()))
