import Foundation
import LambdaAuthClient

// A second process for the client's tests: an app's extension sharing the app's session file.
// Usage: client-peer BASE_URL SESSION_FILE ROUNDS; refreshes ROUNDS times, prints "ok N" or the
// error's code, and exits 0 only when every refresh succeeded and the client is still signed in.
let arguments = CommandLine.arguments
guard arguments.count == 4, let baseURL = URL(string: arguments[1]), let rounds = Int(arguments[3]) else {
    FileHandle.standardError.write(Data("usage: client-peer BASE_URL SESSION_FILE ROUNDS\n".utf8))
    exit(2)
}
let client = AuthClient(baseURL: baseURL, storage: FileSessionStorage(path: arguments[2]))
var refreshed = 0
do {
    for _ in 0..<rounds {
        try await client.refresh()
        refreshed += 1
    }
    print(await client.isSignedIn ? "ok \(refreshed)" : "signed out after \(refreshed)")
    exit(await client.isSignedIn ? 0 : 1)
} catch {
    print("\(error.code) after \(refreshed)")
    exit(1)
}
