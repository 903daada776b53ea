import LambdaAuth
import LambdaAuthTooling

/// `auth-bench symbol-order PATH` (`make symbol-order`): writes the link order of the zips'
/// handlers (Infra/handlers.order, read by lld's --symbol-ordering-file). Each handler answers one
/// request of `HandlerRequests` under callgrind; every function it ran is listed, signin's first,
/// then each other handler's new ones. Linked in that order, the code a request runs sits in a few
/// hundred contiguous kilobytes instead of being spread over 11 MB, and a new process maps it with
/// a few dozen page faults instead of a hundred (docs/packaging.md, "Size and start-up").
/// Needs valgrind (a development tool: the order file is committed, and a missing or stale name in
/// it only costs locality, never correctness).
enum SymbolOrder {
    static func write(to path: String) -> Bool {
        let world = FlowBench.makeWorld()
        defer { FileSystem.removeTree(world.directory) }
        guard let requests = HandlerRequests(world, count: 1) else {
            writeStandardErrorLine("auth-bench: the accounts the requests need could not be made")
            return false
        }
        var ordered: [String] = []
        var seen: Set<String> = []
        let signin = HandlerCatalogue.signin.name
        let handlers = [signin] + HandlerCatalogue.all.map(\.name).filter { $0 != signin }.sorted()
        for handler in handlers {
            guard let event = requests.events[handler] else {
                writeStandardErrorLine("auth-bench: no request for \(handler) in HandlerRequests")
                return false
            }
            // A returning user's sign-in, the one that matters: the first signs the user up.
            if handler == HandlerCatalogue.signin.name { _ = world.invoke(handler, event(0)) }
            let profile = world.directory + "/\(handler).callgrind", binary = world.directory + "/\(handler).symbols"
            // valgrind 3.19 cannot read the debug information Swift writes; the symbol table is all it needs.
            guard (try? ProcessRunner.run("/usr/bin/env", arguments: ["strip", "--strip-debug", "-o", binary, ProcessRunner.executable(handler)]))?
                .exitCode == 0 else {
                writeStandardErrorLine("auth-bench: strip --strip-debug failed for \(handler)")
                return false
            }
            let arguments = ["--tool=callgrind", "--demangle=no", "--compress-strings=no", "--callgrind-out-file=" + profile, binary]
            let output = try? ProcessRunner.run("/usr/bin/env", arguments: ["valgrind"] + arguments,
                                                environment: requests.environment(for: handler, world),
                                                stdin: event(0).serializedBytes())
            guard let output, output.exitCode == 0, output.json?["error"] == nil, let text = try? FileSystem.readFile(profile) else {
                writeStandardErrorLine("auth-bench: \(handler) did not answer under valgrind (is it installed?): "
                                       + String(output?.stdoutText.prefix(300) ?? "") + String(output?.stderrText.suffix(300) ?? ""))
                return false
            }
            var added = 0
            for line in String(decoding: text, as: UTF8.self).split(separator: "\n") {
                guard line.hasPrefix("fn=") || line.hasPrefix("cfn=") else { continue }
                let name = String(line.drop { $0 != "=" }.dropFirst())
                // Addresses without a symbol, and the loader's and libc's own.
                guard !name.hasPrefix("0x"), !name.hasPrefix("("), seen.insert(name).inserted else { continue }
                ordered.append(name)
                added += 1
            }
            writeStandardErrorLine("symbol-order: \(handler): \(added) more functions")
        }
        let header = "# The zips' handlers' link order (lld --symbol-ordering-file): the functions one request of each\n"
            + "# handler runs, signin's first. Written by `make symbol-order` (auth-bench symbol-order); see\n"
            + "# docs/packaging.md, \"Size and start-up\".\n"
        do {
            try FileSystem.writeAtomically(path, Array((header + ordered.joined(separator: "\n") + "\n").utf8))
        } catch {
            writeStandardErrorLine("auth-bench: \(error)")
            return false
        }
        writeStandardErrorLine("symbol-order: wrote \(ordered.count) functions to \(path)")
        return true
    }
}
