import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Testing

/// The catalogue is the one list of handlers: what reads it as text (make, check-package.sh) reads
/// the same names, and each handler has one executable, one product and routes of its own.
/// `Infra/template.yaml` against the catalogue: TemplateTranslationTests.
@Suite struct HandlerCatalogueTests {
    static let root = TestSupport.packageRoot

    static func text(_ path: String) throws -> String {
        String(decoding: try FileSystem.readFile(root + "/" + path), as: UTF8.self)
    }

    @Test func theMakefilesDerivationReadsEveryEntryInOrder() throws {
        let output = try ProcessRunner.run("/bin/sh", arguments: [Self.root + "/Infra/handler-names.sh"])
        #expect(output.exitCode == 0, "\(output.stderrText)")
        #expect(output.stdoutText == HandlerNames.all.joined(separator: " ") + "\n")
    }

    @Test func namesAndRoutesAreEachListedOnce() {
        #expect(Set(HandlerNames.all).count == HandlerNames.all.count, "\(HandlerNames.all)")
        let routes = HandlerCatalogue.all.flatMap { $0.routes.map { "\($0.method) \($0.path)" } }
        #expect(Set(routes).count == routes.count, "\(routes)")
        for entry in HandlerCatalogue.all {
            // API Gateway invokes the authorizer in front of routes, and the table's stream feeds
            // events (the template checks its mapping); every other handler has routes of its own.
            #expect(entry.routes.isEmpty == [HandlerCatalogue.authorizer.name, HandlerCatalogue.events.name].contains(entry.name),
                    "\(entry.name): \(entry.routes)")
            #expect(HandlerCatalogue.entry(named: entry.name)?.name == entry.name)
        }
    }

    /// Each executable's main.swift is one line taking its entry (HandlerProcessTests checks it
    /// is its own), Package.swift builds it, and no executable runs a handler the catalogue lacks.
    @Test func everyHandlerIsAOneLineExecutableOfThePackage() throws {
        let package = try Self.text("Package.swift")
        for name in HandlerNames.all {
            let main = try Self.text("Sources/\(name)/main.swift")
            #expect(main.wholeMatch(of: /import LambdaAuth\n\nHandlerMain\.run\(HandlerCatalogue\.[A-Za-z]+\)\n/) != nil, "\(name): \(main)")
            #expect(package.contains(#".executable(name: "\#(name)", targets: ["\#(name)"])"#), "\(name)")
            #expect(package.contains(#".executableTarget(name: "\#(name)", dependencies: ["LambdaAuth"])"#), "\(name)")
        }
        let handlerExecutables = try FileSystem.listDirectory(Self.root + "/Sources").filter { directory in
            let main = "Sources/\(directory)/main.swift"
            guard FileSystem.exists(Self.root + "/" + main) else { return false }
            return try Self.text(main).contains("HandlerMain.run")
        }
        #expect(handlerExecutables.sorted() == HandlerNames.all.sorted())
    }

    /// Every handler's composition root builds from the services alone, as its process does.
    @Test func everyEntryComposesItsHandler() throws {
        let world = try FlowWorld(backend: .local)
        let flows = try InProcessFlows(world)
        for entry in HandlerCatalogue.all {
            #expect(throws: Never.self, "\(entry.name)") { _ = try flows.handler(entry) }
        }
    }
}
