import LambdaAuth
import LambdaAuthTooling
#if canImport(Glibc)
import Glibc
#endif

// `make bench`: every section measures one issue's targets and adds rows to one table.
// Usage: auth-bench [--markdown PATH] [SECTION...]; no section runs them all. The table is printed;
// with --markdown it is also written to PATH (docs/benchmarks.md, BenchReport) with the machine,
// the date and the commit. `auth-bench --markdown-placeholder PATH` writes the file's preamble and
// a "not yet measured" notice, without measuring.
// `auth-bench startup-probe` is the child process of the startup section.
if CommandLine.arguments.dropFirst().first == "startup-probe" { StartupBench.probe() }
// `auth-bench symbol-order PATH`: the zips' link order (SymbolOrder, `make symbol-order`).
if CommandLine.arguments.dropFirst().first == "symbol-order" {
    guard CommandLine.arguments.count == 3 else {
        writeStandardErrorLine("auth-bench: symbol-order needs the file to write")
        exit(2)
    }
    exit(SymbolOrder.write(to: CommandLine.arguments[2]) ? 0 : 1)
}

var arguments = Array(CommandLine.arguments.dropFirst())
func option(_ name: String, in arguments: inout [String]) -> String? {
    guard let index = arguments.firstIndex(of: name) else { return nil }
    guard index + 1 < arguments.count else {
        writeStandardErrorLine("auth-bench: \(name) needs a path")
        exit(2)
    }
    let value = arguments[index + 1]
    arguments.removeSubrange(index...(index + 1))
    return value
}
if let path = option("--markdown-placeholder", in: &arguments) {
    do { try BenchReport.write(BenchReport.placeholder, to: path) } catch {
        writeStandardErrorLine("auth-bench: \(error)")
        exit(1)
    }
    exit(0)
}
let markdownPath = option("--markdown", in: &arguments)
let requested = Set(arguments)
let unknown = requested.subtracting(BenchSections.all.map(\.name))
guard unknown.isEmpty else {
    writeStandardErrorLine("auth-bench: no section \(unknown.sorted().joined(separator: ", ")); the sections: "
                           + BenchSections.all.map(\.name).joined(separator: " "))
    exit(2)
}
let started = SystemClock().nowSeconds
var table = BenchTable()
var ran: [String] = []
for section in BenchSections.all where requested.isEmpty || requested.contains(section.name) {
    writeStandardErrorLine("bench: \(section.name)…")
    // The sections before wrote hundreds of megabytes (the 100k-user store, 10,000 rotations);
    // written back while a section measures, they would stretch its own syncs.
    sync()
    section.run(&table)
    ran.append(section.name)
}
table.print()
if let markdownPath {
    let report = BenchReport.markdown(rows: table.rows, sections: ran, machine: .current(),
                                      date: ISO8601.format(epochSeconds: started),
                                      commit: BenchReport.commit(in: FileSystem.parentDirectory(of: markdownPath)))
    do {
        try BenchReport.write(report, to: markdownPath)
        writeStandardErrorLine("bench: wrote \(markdownPath)")
    } catch {
        writeStandardErrorLine("auth-bench: \(error)")
        exit(1)
    }
}
