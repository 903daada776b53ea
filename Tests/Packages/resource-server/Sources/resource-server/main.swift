import LambdaAuthVerifier
#if canImport(Glibc)
import Glibc
#endif

// resource-server BASE_URL ISSUER: one verifier for the life of the process, as a service keeps
// it, with the issuer's revocation feed; each line of stdin is an access token, and each answer
// line is `ok <sub> <sid>` or the error code. The feed is read at most once per 5 s.
func writeLine(_ text: String, to descriptor: Int32) {
    var line = text + "\n"
    line.withUTF8 { _ = write(descriptor, $0.baseAddress, $0.count) }
}
func standardError(_ text: String) { writeLine(text, to: 2) }
// Unbuffered: the driver reads each answer before it sends the next token.
func answer(_ text: String) { writeLine(text, to: 1) }

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
        answer("fetches \(verifier.revocationFetches)")
    } else {
        do {
            let claims = try verifier.verify(token)
            answer("ok \(claims.userID) \(claims.sessionID)")
        } catch {
            answer(error.code.rawValue)
        }
    }
}
