import LambdaAuthVerifier
import Testing

/// The verifier is what other services link: it must stay free of the tables and of LambdaAuth.
@Suite struct TargetBoundaryTests {
    /// Tests/LambdaAuthVerifierTests/TargetBoundaryTests.swift → the package root.
    static let root = FileSystem.parentDirectory(of: FileSystem.parentDirectory(of: FileSystem.parentDirectory(of: "\(#filePath)")))

    static func swiftFiles(under directory: String) throws -> [String] {
        try FileSystem.listDirectory(directory).sorted().flatMap { (name) throws -> [String] in
            let path = directory + "/" + name
            if name.hasSuffix(".swift") { return [path] }
            return try swiftFiles(under: path)
        }
    }

    @Test func sourcesNameNoTableOrStore() throws {
        let files = try Self.swiftFiles(under: Self.root + "/Sources/LambdaAuthVerifier")
        #expect(files.count > 10)
        for file in files {
            let text = String(decoding: try FileSystem.readFile(file), as: UTF8.self)
            // Computed first so that a failure prints the file's name, not its text.
            let namesTables = text.contains(/\b(Table|Tables|AccountStore|TableItem|AuthConfiguration)\b/)
            let importsHigherTarget = text.contains(/import (LambdaAuth|LambdaAuthTooling)\b/)
            #expect(!namesTables, "\(file) names the tables or the configuration")
            #expect(!importsHigherTarget, "\(file) imports a higher target")
        }
    }

    @Test func packageGivesTheTargetNoDependencyOnLambdaAuth() throws {
        let manifest = String(decoding: try FileSystem.readFile(Self.root + "/Package.swift"), as: UTF8.self)
        guard let start = manifest.firstRange(of: "name: \"LambdaAuthVerifier\",\n            dependencies: [") else {
            Issue.record("Package.swift declares no LambdaAuthVerifier target")
            return
        }
        let dependencies = manifest[start.upperBound...].prefix { $0 != "]" }
        #expect(!dependencies.contains("LambdaAuth\""), "LambdaAuthVerifier depends on LambdaAuth")
        #expect(!dependencies.contains("LambdaAuthTooling"))
        #expect(dependencies.contains("Crypto"), "the dependency list was found")
    }
}
