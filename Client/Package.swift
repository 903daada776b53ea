// swift-tools-version:6.0
import PackageDescription

// A package of its own, not a product of the server's: an app that adds it resolves Foundation
// and nothing else (no swift-crypto, swift-log or argument parser), and none of the server's code
// can leak into it (README, "The app's side: LambdaAuthClient").
let package = Package(
    name: "lambda-auth-client",
    platforms: [.iOS(.v15), .macOS(.v12), .tvOS(.v15), .watchOS(.v8)],
    products: [
        .library(name: "LambdaAuthClient", targets: ["LambdaAuthClient"]),
    ],
    targets: [
        .target(name: "LambdaAuthClient"),
        .testTarget(name: "LambdaAuthClientTests", dependencies: ["LambdaAuthClient"]),
    ]
)
