import LambdaAuth
#if canImport(Glibc)
import Glibc
#endif

// `make bench`: every section measures one issue's targets and adds rows to one table.
// Usage: auth-bench [SECTION...]; no argument runs them all.
// `auth-bench startup-probe` is the child process of the startup section.
if CommandLine.arguments.dropFirst().first == "startup-probe" { StartupBench.probe() }
let requested = Set(CommandLine.arguments.dropFirst())
var table = BenchTable()
for section in BenchSections.all where requested.isEmpty || requested.contains(section.name) {
    writeStandardErrorLine("bench: \(section.name)…")
    // The sections before wrote hundreds of megabytes (the 100k-user store, 10,000 rotations);
    // written back while a section measures, they would stretch its own syncs.
    sync()
    section.run(&table)
}
table.print()
