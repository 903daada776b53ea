import LambdaAuthVerifier
#if canImport(Glibc)
import Glibc
#endif

// resource-server BASE_URL ISSUER: one verifier for the life of the process, as a service keeps
// it, with the issuer's revocation feed; each line of stdin is an access token, and each answer
// line is `ok <sub> <sid>` or the error code. The feed is read at most once per 5 s.
func standardError(_ text: String) {
    var line = text + "\n"
    line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}

let arguments = CommandLine.arguments
guard arguments.count == 3 else {
    standardError("usage: resource-server BASE_URL ISSUER")
    exit(2)
}
let base = arguments[1], issuer = arguments[2]
let verifier: AccessTokenVerifier
do {
    verifier = try AccessTokenVerifier(jwksURL: base + "/.well-known/jwks.json", issuer: issuer,
                                       revocations: RevocationFeedSettings(url: base + "/.well-known/revocations"))
} catch {
    standardError("resource-server: \(error)")
    exit(1)
}
while let line = readLine() {
    let token = String(line.drop { $0 == " " })
    if token == "fetches" {
        print("fetches \(verifier.revocationFetches)")
    } else {
        do {
            let claims = try verifier.verify(token)
            print("ok \(claims.userID) \(claims.sessionID)")
        } catch {
            print(error.code.rawValue)
        }
    }
    fflush(stdout)
}
