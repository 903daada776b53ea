import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Testing

/// `Infra/bootstrap`, the script of a zip that holds several handlers: it runs the executable that
/// `_HANDLER` names beside it, whatever the catalogue holds, and nothing outside its folder.
@Suite struct BootstrapScriptTests {
    func run(_ handler: String?, in directory: String) throws -> ProcessRunner.Output {
        var environment = ["PATH": "/usr/bin:/bin"]
        if let handler { environment["_HANDLER"] = handler }
        return try ProcessRunner.run("/bin/sh", arguments: [directory + "/bootstrap", "--flag"], environment: environment)
    }

    @Test func itExecsTheNamedHandlerBesideItAndRefusesAnythingElse() throws {
        let directory = TestSupport.temporaryDirectory("bootstrap")
        defer { TestSupport.removeTree(directory) }
        try FileSystem.writeAtomically(directory + "/bootstrap", try FileSystem.readFile(TestSupport.packageRoot + "/Infra/bootstrap"), mode: 0o755)
        // Every catalogue name, and one the script has never heard of: a zip's executables decide.
        for name in HandlerCatalogue.all.map(\.name) + ["a-future-handler"] {
            try FileSystem.writeAtomically(directory + "/" + name, Array("#!/bin/sh\necho \"\(name) $*\"\n".utf8), mode: 0o755)
            let output = try run(name, in: directory)
            #expect(output.exitCode == 0 && output.stdoutText == "\(name) --flag\n", "\(name): \(output.stderrText)")
        }
        try FileSystem.writeAtomically(directory + "/not-executable", Array("#!/bin/sh\necho ran\n".utf8), mode: 0o644)
        try FileSystem.createDirectory(directory + "/folder")
        for refused in [nil, "", "missing", "not-executable", "folder", "../bin/sh", "/bin/sh", ".", "..", "folder/x"] {
            let output = try run(refused, in: directory)
            #expect(output.exitCode == 1 && output.stdoutText.isEmpty && output.stderrText.hasPrefix("bootstrap: "),
                    "\(refused ?? "unset"): \(output.stdoutText) \(output.stderrText)")
        }
    }
}
