import LambdaAuth
import Testing

/// The one percent-encoder (SigV4's UriEncode, the AWS query bodies and Apple's form bodies).
struct PercentEncodingTests {
    static let awkward = "a~b*c d+e%f&g=h/i\u{E9}\n"

    @Test func onlyTheUnreservedStayAsTheyAre() {
        #expect(PercentEncoding.encode(Self.awkward) == "a~b%2Ac%20d%2Be%25f%26g%3Dh%2Fi%C3%A9%0A")
        #expect(PercentEncoding.encode("/a b/c", keepingSlashes: true) == "/a%20b/c")
        let unreserved = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
        #expect(PercentEncoding.encode(unreserved) == unreserved)
    }

    /// What Apple's endpoints (and the dev Apple server standing in for them) read back.
    @Test func aFormRoundTripsThroughTheFormDecoder() {
        let fields = [(name: "client_secret", value: Self.awkward), (name: "code", value: "+~* +"), (name: "empty", value: "")]
        let body = PercentEncoding.form(fields)
        #expect(body == "client_secret=a~b%2Ac%20d%2Be%25f%26g%3Dh%2Fi%C3%A9%0A&code=%2B~%2A%20%2B&empty=")
        #expect(FormEncoding.decode(body) == ["client_secret": Self.awkward, "code": "+~* +", "empty": ""])
    }
}
