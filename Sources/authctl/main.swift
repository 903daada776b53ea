AuthCtl.runCommandLine(Array(CommandLine.arguments.dropFirst()))
