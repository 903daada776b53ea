// swift-tools-version:6.0
import PackageDescription

// An app's own service as it would use this repository: a package of its own that depends on
// lambda-auth and links the LambdaAuthVerifier product only. `make test` builds it and drives it
// through Tests/Scripts/outside_resource_server.py against `authctl serve --authorizer lambda`.
let package = Package(
    name: "resource-server",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "lambda-auth", path: "../../.."),
    ],
    targets: [
        .executableTarget(name: "resource-server", dependencies: [
            .product(name: "LambdaAuthVerifier", package: "lambda-auth"),
        ]),
    ]
)
