// swift-tools-version:6.1
import PackageDescription

// Lean on purpose: cold start and build time are product features. swift-crypto is the only
// cryptography; HTTP goes through the system libcurl so the handlers can stay on
// FoundationEssentials (see docs/design-decisions.md, "Why libcurl").
let package = Package(
    name: "lambda-auth",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "LambdaAuth", targets: ["LambdaAuth"]),
        // For other Swift services: verifies our access tokens from the JWKS URL
        // (docs/keys-and-secrets.md, "Verifying our tokens in another Swift service").
        .library(name: "LambdaAuthVerifier", targets: ["LambdaAuthVerifier"]),
        .executable(name: "signin", targets: ["signin"]),
        .executable(name: "refresh", targets: ["refresh"]),
        .executable(name: "link-provider", targets: ["link-provider"]),
        .executable(name: "signout", targets: ["signout"]),
        .executable(name: "sessions", targets: ["sessions"]),
        .executable(name: "delete-account", targets: ["delete-account"]),
        .executable(name: "well-known", targets: ["well-known"]),
        .executable(name: "apple-notifications", targets: ["apple-notifications"]),
        .executable(name: "otp-start", targets: ["otp-start"]),
        .executable(name: "passkey", targets: ["passkey"]),
        .executable(name: "mfa", targets: ["mfa"]),
        .executable(name: "authorizer", targets: ["authorizer"]),
        .executable(name: "events", targets: ["events"]),
        .executable(name: "authctl", targets: ["authctl"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        // The Logger API; our JSONLogHandler writes the contract's log lines.
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        // Already in the tree under swift-crypto: reads a packed attestation's X.509 leaf (passkeys).
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        // authctl's command line only; no handler links it.
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
    ],
    targets: [
        // libcurl's few types and constants, declared without its development headers: it is
        // loaded with dlopen (LambdaAuthVerifier/HTTP/CurlHTTPClient.swift), so nothing here needs libcurl to build.
        .systemLibrary(name: "CCurl"),
        // Symbol-version wrappers for the shipped binaries (docs/packaging.md, "Symbol versions").
        .target(name: "CGlibcCompat"),
        // What verifying a token needs (JOSE, JWKS fetch and cache, HTTP, errors) and nothing of
        // the tables or the handlers: resource servers link it alone; LambdaAuth re-exports it.
        .target(
            name: "LambdaAuthVerifier",
            dependencies: [
                "CCurl",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The DynamoDB-shaped table (interface, local store, DynamoDB over an injected transport,
        // expressions) and nothing of the product: the opener gives the index name, the segment
        // families and the transport; its errors are its own. Below it only the verifier's
        // Support/ (JSON, base64, clock, files) and SHA-256 (docs/source-layout.md).
        .target(
            name: "LambdaAuthTables",
            dependencies: [
                "LambdaAuthVerifier",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .target(
            name: "LambdaAuth",
            dependencies: [
                "LambdaAuthVerifier",
                "LambdaAuthTables",
                "CCurl",
                "CGlibcCompat",
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // What only authctl, the bench and the tests use (child processes, the dev identity
        // provider, table import/export and creation), kept out of the handlers' zips.
        .target(
            name: "LambdaAuthTooling",
            dependencies: [
                "LambdaAuth",
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ]
        ),
        .executableTarget(name: "signin", dependencies: ["LambdaAuth"]),
        .executableTarget(name: "refresh", dependencies: ["LambdaAuth"]),
        .executableTarget(name: "link-provider", dependencies: ["LambdaAuth"]),
        .executableTarget(name: "signout", dependencies: ["LambdaAuth"]),
        .executableTarget(name: "sessions", dependencies: ["LambdaAuth"]),
        .executableTarget(name: "delete-account", dependencies: ["LambdaAuth"]),
        .executableTarget(name: "well-known", dependencies: ["LambdaAuth"]),
        .executableTarget(name: "apple-notifications", dependencies: ["LambdaAuth"]),
        .executableTarget(name: "otp-start", dependencies: ["LambdaAuth"]),
        .executableTarget(name: "passkey", dependencies: ["LambdaAuth"]),
        .executableTarget(name: "mfa", dependencies: ["LambdaAuth"]),
        .executableTarget(name: "authorizer", dependencies: ["LambdaAuth"]),
        .executableTarget(name: "events", dependencies: ["LambdaAuth"]),
        .executableTarget(
            name: "authctl",
            dependencies: [
                "LambdaAuth",
                "LambdaAuthTooling",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // `make bench`; not shipped.
        .executableTarget(
            name: "auth-bench",
            dependencies: [
                "LambdaAuth",
                "LambdaAuthTooling",
                // The loopback Runtime API peer, shared with the tests.
                "LambdaAuthTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "LambdaAuthTestSupport",
            dependencies: [
                "LambdaAuth",
                "LambdaAuthTooling",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/LambdaAuthTestSupport"
        ),
        // Test-only: the processes of the store's multi-process and crash tests.
        .executableTarget(name: "table-worker", dependencies: ["LambdaAuth"], path: "Tests/TableWorker"),
        .testTarget(
            name: "LambdaAuthTests",
            dependencies: ["LambdaAuth", "LambdaAuthTables", "LambdaAuthTooling", "LambdaAuthTestSupport", .product(name: "Logging", package: "swift-log")]
        ),
        // Mirrors Sources/LambdaAuthTables; most tests open the tables as the product does (its
        // layout, moto, flow worlds, worker processes), hence LambdaAuth and the test support.
        .testTarget(
            name: "LambdaAuthTablesTests",
            dependencies: ["LambdaAuthTables", "LambdaAuth", "LambdaAuthTooling", "LambdaAuthTestSupport",
                           .product(name: "Crypto", package: "swift-crypto")]
        ),
        .testTarget(
            name: "LambdaAuthVerifierTests",
            dependencies: ["LambdaAuthVerifier", "LambdaAuth", "LambdaAuthTooling", "LambdaAuthTestSupport",
                           .product(name: "Crypto", package: "swift-crypto"), .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(
            name: "LambdaAuthToolingTests",
            dependencies: ["LambdaAuth", "LambdaAuthTooling", "LambdaAuthTestSupport"]
        ),
    ]
)
