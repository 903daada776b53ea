import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The documents against the code, so that they cannot drift: every environment variable the
/// sources read is in docs/configuration.md (and every `AUTH_` one documented there is still
/// read), every error code (the code's, and the contract's error table when ../shared sits
/// beside the checkout) is in docs/events.md with its status, every handler and route of the
/// catalogue is there too, every relative link between the documents resolves (anchors
/// included, as GitHub makes them), and docs/benchmarks.md is what `make bench` writes.
@Suite struct DocumentationTests {
    static let root = TestSupport.packageRoot

    // MARK: - The checks, as functions of text, so that each can be shown to fail

    /// Environment variable names the Swift sources read: string literals that are variable names
    /// (`"AUTH_…"`, `"AWS_…"`: the configuration reads them by name), and names looked up
    /// through `getenv`, an environment subscript or the configuration's `EnvironmentReader`.
    static func variablesRead(bySources sources: [String]) -> Set<String> {
        let patterns = [
            #""((?:AUTH|AWS)_[A-Z0-9_]*[A-Z0-9])""#,
            #"getenv\("([A-Z_][A-Z0-9_]*)"\)"#,
            #"(?:environment|Environment\.current\(\))\["([A-Z_][A-Z0-9_]*)"\]"#,
            #"reader\.[a-z]+\("([A-Z_][A-Z0-9_]*)""#,
        ].map { try! Regex($0) }
        var names = Set<String>()
        for text in sources {
            for pattern in patterns {
                for match in text.matches(of: pattern) {
                    if let name = match.output[1].substring { names.insert(String(name)) }
                }
            }
        }
        return names
    }

    /// The variable names in the first cell of the Markdown tables' rows: `NAME` in backticks.
    static func documentedVariables(_ markdown: String) -> Set<String> {
        var names = Set<String>()
        for line in markdown.split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false)
            guard cells.count > 2 else { continue }
            let pieces = cells[1].split(separator: "`", omittingEmptySubsequences: false)
            for (index, piece) in pieces.enumerated() where index % 2 == 1 {
                let name = piece.prefix { $0 != "=" }
                if !name.isEmpty, name.allSatisfy({ $0 == "_" || $0.isNumber || ($0.isASCII && $0.isUppercase) }) {
                    names.insert(String(name))
                }
            }
        }
        return names
    }

    static func configurationProblems(read: Set<String>, documented: Set<String>) -> [String] {
        read.subtracting(documented).sorted().map { "the code reads \($0), which docs/configuration.md does not document" }
            + documented.filter { $0.hasPrefix("AUTH_") }.subtracting(read).sorted()
            .map { "docs/configuration.md documents \($0), which the code does not read" }
    }

    /// `code → status` of a Markdown error table's rows (`| 401 | \`CODE\` | …`).
    static func errorTable(_ markdown: String) -> [String: Int] {
        // Codes may hold digits (AAL2_REQUIRED).
        let row = try! Regex(#"^\| *([0-9]{3}) *\| *`([A-Z][A-Z0-9_]*)` *\|"#)
        var table: [String: Int] = [:]
        for line in markdown.split(separator: "\n") {
            if let match = String(line).firstMatch(of: row), let status = match.output[1].substring,
               let code = match.output[2].substring {
                table[String(code)] = Int(status)
            }
        }
        return table
    }

    static func errorProblems(expected: [String: Int], documented: [String: Int], source: String) -> [String] {
        expected.keys.sorted().compactMap { code in
            guard let status = documented[code] else { return "\(code) (\(source)) is not in docs/events.md's error table" }
            return status == expected[code] ? nil : "\(code) is \(expected[code]!) in \(source), \(status) in docs/events.md"
        }
    }

    /// The routes table of docs/events.md: a row per handler, its first cell the name in
    /// backticks, its second every route as `` `METHOD path` `` and "(guarded)" when any is.
    static func routeProblems(_ markdown: String, catalogue: [HandlerEntry]) -> [String] {
        let rows = markdown.split(separator: "\n").map(String.init)
        var problems: [String] = []
        for entry in catalogue {
            guard let row = rows.first(where: { $0.hasPrefix("| `\(entry.name)` |") }) else {
                problems.append("handler \(entry.name) has no row in docs/events.md's routes")
                continue
            }
            let routes = row.split(separator: "|", omittingEmptySubsequences: false).dropFirst(2).first.map(String.init) ?? ""
            for route in entry.routes where !routes.contains("`\(route.method) \(route.path)`") {
                problems.append("\(entry.name): `\(route.method) \(route.path)` is not in its row of docs/events.md")
            }
            if entry.routes.contains(where: \.guarded) != routes.contains("(guarded)") {
                problems.append("\(entry.name): docs/events.md says \(routes.contains("(guarded)") ? "" : "not ")guarded")
            }
        }
        return problems
    }

    /// GitHub's anchor of a heading: its text as rendered (no backticks, links as their text),
    /// lowercased, without anything but letters, digits, `_`, `-` and spaces, spaces as `-`.
    static func slug(_ heading: String) -> String {
        var text = ""
        var rest = Substring(heading)
        // [text](target) → text
        while let open = rest.firstIndex(of: "[") {
            text += rest[..<open]
            let afterOpen = rest.index(after: open)
            if let close = rest[afterOpen...].firstIndex(of: "]"), rest.index(after: close) < rest.endIndex,
               rest[rest.index(after: close)] == "(", let end = rest[close...].firstIndex(of: ")") {
                text += rest[afterOpen..<close]
                rest = rest[rest.index(after: end)...]
            } else {
                text += "["
                rest = rest[afterOpen...]
            }
        }
        text += rest
        let kept = text.lowercased().filter { $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" || $0 == " " }
        return String(kept.map { $0 == " " ? "-" : $0 })
    }

    /// Lines outside fenced code blocks.
    static func proseLines(_ markdown: String) -> [(number: Int, text: Substring)] {
        var fenced = false
        var lines: [(number: Int, text: Substring)] = []
        for (index, line) in markdown.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if line.hasPrefix("```") { fenced.toggle(); continue }
            if !fenced { lines.append((number: index + 1, text: line)) }
        }
        return lines
    }

    static func anchors(_ markdown: String) -> Set<String> {
        var seen: [String: Int] = [:]
        var anchors = Set<String>()
        for (_, line) in proseLines(markdown) where line.hasPrefix("#") {
            let level = line.prefix { $0 == "#" }.count
            guard level <= 6, line.dropFirst(level).first == " " else { continue }
            let base = slug(line.dropFirst(level).trimmingCharacters(in: " #"))
            let count = seen[base, default: 0]
            seen[base] = count + 1
            anchors.insert(count == 0 ? base : "\(base)-\(count)")
        }
        return anchors
    }

    /// Every relative link of `documents` (path relative to `root` → text) that names a file not
    /// there, or an anchor its Markdown target does not have. `exists` answers for other files.
    static func linkProblems(_ documents: [String: String], exists: (String) -> Bool) -> [String] {
        let link = try! Regex(#"\]\(([^)\s]+)\)"#)
        var problems: [String] = []
        for (path, text) in documents.sorted(by: { $0.key < $1.key }) {
            for (number, line) in proseLines(text) {
                for match in line.matches(of: link) {
                    guard let target = match.output[1].substring.map(String.init) else { continue }
                    if target.firstMatch(of: try! Regex("^[a-z][a-z0-9+.-]*:")) != nil { continue }
                    let parts = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
                    let file = parts[0].isEmpty ? path : normalise(directory(of: path) + "/" + parts[0])
                    let where_ = "\(path):\(number): \(target)"
                    if let document = documents[file] {
                        if parts.count == 2, !anchors(document).contains(String(parts[1])) {
                            problems.append("\(where_): \(file) has no heading #\(parts[1])")
                        }
                    } else if !exists(file) {
                        problems.append("\(where_): no such file")
                    } else if parts.count == 2, file.hasSuffix(".md") {
                        problems.append("\(where_): an anchor into a document this check does not read")
                    }
                }
            }
        }
        return problems
    }

    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return String(path[..<slash])
    }

    /// `a/./b/../c` → `a/c`, relative to the root; a path above the root keeps its `..`.
    static func normalise(_ path: String) -> String {
        var parts: [Substring] = []
        for part in path.split(separator: "/") where part != "." {
            if part == "..", let last = parts.last, last != ".." { parts.removeLast() } else { parts.append(part) }
        }
        return parts.joined(separator: "/")
    }

    // MARK: - Reading the checkout

    static func read(_ relative: String) throws -> String {
        String(decoding: try FileSystem.readFile(root + "/" + relative), as: UTF8.self)
    }

    static func isDirectory(_ path: String) -> Bool {
        var status = stat()
        return stat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFDIR
    }

    /// Every `.swift` file under `relative`, as text.
    static func swiftSources(under relative: String) throws -> [String] {
        var texts: [String] = []
        var pending = [root + "/" + relative]
        while let directory = pending.popLast() {
            for name in try FileSystem.listDirectory(directory) {
                let path = directory + "/" + name
                if isDirectory(path) {
                    pending.append(path)
                } else if name.hasSuffix(".swift") {
                    texts.append(String(decoding: try FileSystem.readFile(path), as: UTF8.self))
                }
            }
        }
        return texts
    }

    /// README.md, docs/*.md, Infra/README.md and Client/README.md (when there), by relative path.
    static func documents() throws -> [String: String] {
        var paths = ["README.md", "Infra/README.md", "Client/README.md"].filter { FileSystem.exists(root + "/" + $0) }
        paths += try FileSystem.listDirectory(root + "/docs").filter { $0.hasSuffix(".md") }.map { "docs/" + $0 }
        var documents: [String: String] = [:]
        for path in paths { documents[path] = try read(path) }
        return documents
    }

    // MARK: - The checkout

    @Test func everyVariableTheCodeReadsIsInTheConfigurationPage() throws {
        let read = Self.variablesRead(bySources: try Self.swiftSources(under: "Sources"))
        #expect(read.contains("AUTH_STORE") && read.contains("AWS_REGION"), "the scan found \(read.sorted())")
        let documented = Self.documentedVariables(try Self.read("docs/configuration.md"))
        #expect(Self.configurationProblems(read: read, documented: documented) == [])
    }

    @Test func everyErrorCodeIsInTheErrorTableWithItsStatus() throws {
        let documented = Self.errorTable(try Self.read("docs/events.md"))
        let codes = Dictionary(uniqueKeysWithValues: ErrorCode.allCases.map { ($0.rawValue, $0.status) })
        #expect(Self.errorProblems(expected: codes, documented: documented, source: "ErrorCode") == [])
        #expect(Set(documented.keys).subtracting(codes.keys).sorted() == [], "codes in docs/events.md that ErrorCode lacks")
        // The contract's own table, where the shared checkout sits beside this one (in CI it does).
        let contract = Self.root + "/../shared/CONTRACT.md"
        if FileSystem.exists(contract) {
            let table = Self.errorTable(String(decoding: try FileSystem.readFile(contract), as: UTF8.self))
            #expect(table.count >= 20, "the contract's error table was not found in \(contract)")
            #expect(Self.errorProblems(expected: table, documented: documented, source: "the contract") == [])
        }
    }

    @Test func everyHandlerAndRouteIsInTheRoutesTable() throws {
        #expect(Self.routeProblems(try Self.read("docs/events.md"), catalogue: HandlerCatalogue.all) == [])
    }

    @Test func everyRelativeLinkBetweenTheDocumentsResolves() throws {
        let documents = try Self.documents()
        #expect(documents.count > 10, "\(documents.keys.sorted())")
        #expect(Self.linkProblems(documents) { FileSystem.exists(Self.root + "/" + $0) } == [])
    }

    @Test func theBenchmarksPageIsWhatMakeBenchWrites() throws {
        let page = try Self.read("docs/benchmarks.md")
        #expect(page.hasPrefix(BenchReport.preamble),
                "docs/benchmarks.md does not start with BenchReport.preamble: run make bench (or auth-bench --markdown-placeholder docs/benchmarks.md)")
    }

    // MARK: - Each check fails when it should

    @Test func theChecksFindWhatIsWrong() {
        let sources = [#"let x = reader.integer("AUTH_SOMETHING_NEW", in: 1...2); getenv("_X_NEW"); environment["TMPDIR"]; let y = "AUTH_""#]
        let read = Self.variablesRead(bySources: sources)
        #expect(read == ["AUTH_SOMETHING_NEW", "_X_NEW", "TMPDIR"])
        let page = "| variable | default |\n| --- | --- |\n| `AUTH_OLD` / `AUTH_OLD_FILE` | x |\n| `TMPDIR` | `/tmp` |\n"
        #expect(Self.configurationProblems(read: read, documented: Self.documentedVariables(page)) == [
            "the code reads AUTH_SOMETHING_NEW, which docs/configuration.md does not document",
            "the code reads _X_NEW, which docs/configuration.md does not document",
            "docs/configuration.md documents AUTH_OLD, which the code does not read",
            "docs/configuration.md documents AUTH_OLD_FILE, which the code does not read",
        ])

        let errors = Self.errorTable("| 401 | `TOKEN_EXPIRED` | no | … |\n| 400 | `RATE_LIMITED` | yes | … |\n")
        #expect(Self.errorProblems(expected: ["TOKEN_EXPIRED": 401, "RATE_LIMITED": 429, "LAST_IDENTITY": 409],
                                   documented: errors, source: "ErrorCode") == [
            "LAST_IDENTITY (ErrorCode) is not in docs/events.md's error table",
            "RATE_LIMITED is 429 in ErrorCode, 400 in docs/events.md",
        ])

        let routes = "| `signin` | `POST /auth/signin` | … |\n| `sessions` | `GET /auth/sessions` | … |\n"
        #expect(Self.routeProblems(routes, catalogue: [HandlerCatalogue.signin, HandlerCatalogue.sessions, HandlerCatalogue.passkey]) == [
            "sessions: `DELETE /auth/sessions` is not in its row of docs/events.md",
            "sessions: docs/events.md says not guarded",
            "handler passkey has no row in docs/events.md's routes",
        ])

        let documents = [
            "README.md": "# Title\n\n## Adding a handler\n\nSee [config](docs/a.md#the-store), [b](docs/b.md), [self](#adding-a-handler).\n",
            "docs/a.md": "# A\n\n## The `AUTH_STORE` store\n\n```\n## not a heading\n```\n[up](../README.md#adding-a-provider) [x](../Makefile) [w](https://example.com/#x)\n",
        ]
        #expect(Self.linkProblems(documents) { $0 == "Makefile" } == [
            "README.md:5: docs/a.md#the-store: docs/a.md has no heading #the-store",
            "README.md:5: docs/b.md: no such file",
            "docs/a.md:8: ../README.md#adding-a-provider: README.md has no heading #adding-a-provider",
        ])
        #expect(Self.anchors(documents["docs/a.md"]!) == ["a", "the-auth_store-store"])
        #expect(Self.slug("Infra/bootstrap: several handlers in one zip") == "infrabootstrap-several-handlers-in-one-zip")
        #expect(Self.slug("App metadata: claims for the app's own [authorization](x.md)") == "app-metadata-claims-for-the-apps-own-authorization")
    }
}
