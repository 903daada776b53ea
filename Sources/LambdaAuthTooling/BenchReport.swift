#if canImport(Glibc)
import Glibc
#endif
import LambdaAuth

/// `docs/benchmarks.md` as `make bench` writes it (`auth-bench --markdown PATH`): a fixed preamble
/// saying what each section measures, then the table of the run, the machine, the date and the
/// commit. No figure is copied into any other document; they link here.
public enum BenchReport {
    /// One row of the bench's table.
    public struct Row: Sendable {
        public let section: String
        public let measurement: String
        public let value: String
        public let target: String

        public init(section: String, measurement: String, value: String, target: String) {
            self.section = section
            self.measurement = measurement
            self.value = value
            self.target = target
        }
    }

    /// What every version of the file starts with; `DocumentationTests` checks that the committed
    /// file still does, so the preamble changes only through a run (or `--markdown-placeholder`).
    public static let preamble = """
        # Benchmarks

        Written by `make bench` (`auth-bench --markdown docs/benchmarks.md`) from its own run: do not
        edit by hand, and do not copy a figure from here into another document (link here instead).
        Each section measures one earlier issue's targets; the `target` column states the target
        beside the measured value. Release binaries throughout (the shipped zips' flags), whole
        processes unless a row says warm (a resident handler fed by a loopback Runtime API peer, as
        under Lambda).

        | section | what it measures |
        | --- | --- |
        | `verify` | a whole ID-token verification on a warm key cache beside swift-crypto's bare RSA-2048 verify, on one thread (target: at least 60 % of its rate) |
        | `store` | the local store's `putItem` and GSI1 query on 100 and on 100,000 users (target: ratio ≤ 1.5), and the export and import of the large table |
        | `import` | `authctl users import` of a generated 100,000-user Firebase export into a new local store (target: under 60 s) and the same file again; on moto's DynamoDB, the requests and transactional item writes per user |
        | `runtime` | warm invocations through the Runtime API (median and p99), the tail over 1,000 and 10,000 rotations of one refresh chain (target: p99 ≤ 3× the median), and each zip's size (target: ≤ 7 MB) |
        | `floor` | each zipped bootstrap's cold start (exec to its first `/next`) and the libraries it maps then, beside a static C program that only exits; every handler's whole process and warm invocation |
        | `startup` | each step a handler takes before its first `/next`, timed in a fresh process |
        | `flows` | whole-process `signin`, `refresh`, `link-provider` on a warm JWKS cache, then with 100,000 users in the store |
        | `signing` | RS256 beside ES256 access tokens: warm sign-in and refresh, and a whole sign-in |
        | `oidc` | a returning user of a configured OpenID Connect provider beside a returning Google user, and the fetches the timed sign-ins made (target: 0) |
        | `passkeys` | a returning user's passkey sign-in (ES256, a fresh challenge and a higher sign count each time) beside a returning Google user, warm and whole process |
        | `mfa` | a returning sign-in beside the same sign-in of a user with a second factor (403 `MFA_REQUIRED`) and the `mfa` challenge that completes it, whole processes in turn; the DynamoDB requests of both are in `aws` (target: 3 each) |
        | `aws` | the flows on DynamoDB and STS as moto_server implements them, beside the local store (moto is a local Python process: the code path, not AWS's latency), and the DynamoDB requests each flow makes |
        | `serve` | sign-in and refresh through `authctl serve` beside the same through the Runtime API (`AUTH_BENCH_SERVE_ROUNDS` sign-ins, twice as many refreshes) |
        | `go-peer` | a returning user's Google sign-in beside the Go peer doing the same work (`../shared/peers/go_signin`, built with Debian's Go on its `log` store), 200 users each: whole processes alternating, then warm (ours through the Runtime API, the peer's resident loop), with ES256 and with RS256 access tokens (the peer signs ES256), and ours / Go (target: ≤ 0.8×) |
        | `revocation` | the `authorizer`'s warm invocation in process (median and p99) with 10 and with 10,000 revoked sessions listed, and `AccessTokenVerifier`'s per-token cost with the revocation feed beside without it (target: at most 5 % more) |

        """

    /// The file before any run on this commit: the preamble and a notice that the next
    /// `make bench` replaces.
    public static var placeholder: String {
        preamble + """

            ## Results

            Not yet measured on this commit: run `make bench` on a quiet machine to write the table, the
            machine and the commit here.

            """
    }

    /// The machine a run measured on, as `make bench` finds it.
    public struct Machine: Sendable {
        public var system: String
        public var processors: Int
        public var cpuModel: String
        public var memory: String

        public static func current() -> Machine {
            var system = "unknown"
            var names = utsname()
            if uname(&names) == 0 {
                func text<T>(_ field: inout T) -> String {
                    withUnsafeBytes(of: &field) { raw in
                        String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
                    }
                }
                system = "\(text(&names.sysname)) \(text(&names.release)) \(text(&names.machine))"
            }
            let processors = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
            return Machine(system: system, processors: processors,
                           cpuModel: procField("/proc/cpuinfo", "model name") ?? "unknown",
                           memory: procField("/proc/meminfo", "MemTotal") ?? "unknown")
        }

        /// The value of the first `name: value` line of a /proc file.
        static func procField(_ path: String, _ name: String) -> String? {
            guard let bytes = try? FileSystem.readFile(path, limit: 1 << 20) else { return nil }
            for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
                let parts = line.split(separator: ":", maxSplits: 1)
                if parts.count == 2, parts[0].trimmingCharacters(in: " \t") == name {
                    return parts[1].trimmingCharacters(in: " \t")
                }
            }
            return nil
        }
    }

    /// `git rev-parse HEAD` in `directory`, with " (uncommitted changes)" when tracked files
    /// differ from it; "unknown" outside a checkout.
    public static func commit(in directory: String) -> String {
        guard let head = try? ProcessRunner.run("/usr/bin/env", arguments: ["git", "-C", directory, "rev-parse", "HEAD"]),
              head.exitCode == 0 else { return "unknown" }
        let hash = head.stdoutText.trimmingCharacters(in: " \n")
        let status = try? ProcessRunner.run("/usr/bin/env", arguments: ["git", "-C", directory, "status", "--porcelain",
                                                                          "--untracked-files=no"])
        let dirty = status.map { $0.exitCode == 0 && !$0.stdout.isEmpty } ?? false
        return hash + (dirty ? " (uncommitted changes)" : "")
    }

    /// The whole file for one run.
    public static func markdown(rows: [Row], sections: [String], machine: Machine, date: String, commit: String) -> String {
        func cell(_ text: String) -> String { text.split(separator: "|", omittingEmptySubsequences: false).joined(separator: "\\|") }
        var lines = [
            "## Results", "",
            "| run | |", "| --- | --- |",
            "| date | \(cell(date)) |",
            "| commit | \(cell(commit)) |",
            "| sections | \(cell(sections.joined(separator: ", "))) |",
            "| system | \(cell(machine.system)) |",
            "| processors | \(machine.processors) |",
            "| CPU | \(cell(machine.cpuModel)) |",
            "| memory | \(cell(machine.memory)) |",
            "",
            "| section | measurement | value | target |",
            "| --- | --- | --- | --- |",
        ]
        for row in rows {
            lines.append("| \(cell(row.section)) | \(cell(row.measurement)) | \(cell(row.value)) | \(cell(row.target)) |")
        }
        return preamble + "\n" + lines.joined(separator: "\n") + "\n"
    }

    /// Writes `text` to `path` atomically, readable by all (a document of the checkout).
    public static func write(_ text: String, to path: String) throws(FileSystem.Failure) {
        try FileSystem.writeAtomically(path, Array(text.utf8), mode: 0o644)
    }
}
