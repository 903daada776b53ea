import LambdaAuth

// `make bench`: every section measures one issue's targets and adds rows to one table.
// Usage: auth-bench [SECTION...]; no argument runs them all.
// `auth-bench startup-probe` is the child process of the startup section.
if CommandLine.arguments.dropFirst().first == "startup-probe" { StartupBench.probe() }
let requested = Set(CommandLine.arguments.dropFirst())
var table = BenchTable()
for section in BenchSections.all where requested.isEmpty || requested.contains(section.name) {
    writeStandardErrorLine("bench: \(section.name)…")
    section.run(&table)
}
table.print()
