import LambdaAuth
import LambdaAuthTestSupport
import Testing

@Suite struct CompactJWSTests {
    let issuer = TestIssuer()

    /// What parsing `token` as a JWT (a compact JWS with a claims object) answers.
    func code(_ token: String) -> ErrorCode? {
        do {
            _ = try JSONWebToken(parsing: token)
            return nil
        } catch {
            return error.code
        }
    }

    @Test func exposesHeaderPayloadSigningInputAndSignature() throws {
        let token = issuer.token(issuer.claims())
        let jwt = try JSONWebToken(parsing: token)
        let jws = jwt.jws
        #expect(jws.algorithm == "RS256")
        #expect(jws.keyID == issuer.keyID)
        #expect(jwt.claims["sub"] == "1234567890")
        let parts = token.split(separator: ".")
        #expect(jws.payload == Base64.urlDecoded(parts[1]))
        #expect(jws.signingInput == Array((parts[0] + "." + parts[1]).utf8))
        #expect(Base64.urlEncoded(jws.signature) == String(parts[2]))
        #expect(jws.signature.count == 256)
    }

    @Test(arguments: ["", "a", "a.b", "a.b.c.d", "..", "...", "e30.e30", "e30.e30.e30.e30"])
    func refusesAnythingButThreeParts(_ token: String) {
        #expect(code(token) == .malformedToken)
    }

    @Test func refusesNonCanonicalBase64URL() {
        let header = TokenForge.part(#"{"alg":"RS256","kid":"k"}"#)
        let payload = TokenForge.part(#"{"sub":"1"}"#)
        #expect(code("\(header).\(payload).AAAA") == nil)
        #expect(code("\(header)=.\(payload).AAAA") == .malformedToken)  // padding
        #expect(code("\(header).\(payload).AAA=") == .malformedToken)
        #expect(code("\(header).\(payload).AB") == .malformedToken)  // stray bits in the last symbol
        #expect(code("\(header).\(payload).AA+A") == .malformedToken)  // standard alphabet
        #expect(code("\(header).\(payload).AA A") == .malformedToken)
        #expect(code(" \(header).\(payload).AAAA") == .malformedToken)
    }

    @Test func refusesHeadersAndPayloadsThatAreNotJSONObjects() {
        let object = TokenForge.part("{}")
        for bad in ["[]", "\"text\"", "{", "{\"a\":1}x", "", "nul"] {
            #expect(code("\(TokenForge.part(bad)).\(object).AAAA") == .malformedToken, "header \(bad)")
            #expect(code("\(object).\(TokenForge.part(bad)).AAAA") == .malformedToken, "payload \(bad)")
        }
    }

    @Test func aJWSPayloadIsBytesOnlyAJWTNeedsAClaimsObject() throws {
        let header = TokenForge.part(#"{"alg":"RS256","kid":"k"}"#)
        for payload in ["", "foo", "[1]", "{"] {
            let token = "\(header).\(TokenForge.part(payload)).AAAA"
            #expect(try CompactJWS(parsing: token).payload == Array(payload.utf8))
            #expect(code(token) == .malformedToken, "\(payload)")
        }
    }

    @Test func refusesDuplicateMemberNamesEvenWhenSigned() throws {
        let duplicateHeader = issuer.token(headerJSON: #"{"alg":"RS256","kid":"test-key-0","alg":"none"}"#,
                                           payloadJSON: #"{"sub":"1"}"#)
        let duplicatePayload = issuer.token(headerJSON: #"{"alg":"RS256","kid":"test-key-0"}"#,
                                            payloadJSON: #"{"sub":"1","aud":"x","sub":"2"}"#)
        for token in [duplicateHeader, duplicatePayload] {
            #expect(throws: AuthError.self) { try JSONWebToken(parsing: token) }
            #expect(code(token) == .malformedToken)
        }
        // The message names neither the member nor any content.
        do {
            _ = try JSONWebToken(parsing: duplicatePayload)
        } catch {
            #expect(error.message == "the token's payload has a duplicate member name")
        }
    }

    @Test func tokensOver16KiBAreAnInvalidRequestBeforeParsing() {
        let object = TokenForge.part("{}")
        let exactly = object + "." + object + "." + String(repeating: "A", count: CompactJWS.maximumBytes - 2 * object.count - 2)
        #expect(exactly.utf8.count == CompactJWS.maximumBytes)
        #expect(code(exactly) == nil)
        // One byte more is refused as a request error, even though it is also not base64url.
        #expect(code(exactly + "!") == .invalidRequest)
    }
}
