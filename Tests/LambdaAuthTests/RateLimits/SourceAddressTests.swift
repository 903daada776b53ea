@testable import LambdaAuth
import LambdaAuthTestSupport
import Logging
import Testing

/// Per-IP limits count a usable source IP (contract section 13): an IPv4 address by itself, an
/// IPv6 address by its /64, in one canonical spelling; anything else over HTTP is refused.
@Suite(.serialized) struct SourceAddressTests {
    @Test(arguments: [
        ("203.0.113.7", "203.0.113.7"),
        ("0.0.0.0", "0.0.0.0"),
        ("255.255.255.255", "255.255.255.255"),
        ("::ffff:203.0.113.7", "203.0.113.7"),
        ("::FFFF:cb00:7107", "203.0.113.7"),
        ("2001:db8:1:2::1", "2001:db8:1:2::/64"),
        ("2001:0DB8:0001:0002:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:0:0:0:9", "2001:db8:1:2::/64"),
        ("::2", "::/64"),
        ("::02", "::/64"),
        ("0:0:0:0:0:0:0:2", "::/64"),
        ("2001:db8::", "2001:db8::/64"),
        ("2001:0:0:1::7", "2001:0:0:1::/64"),
        ("fe80::1", "fe80::/64"),
        ("::", "::/64"),
        ("2001:db8:1:2::198.51.100.1", "2001:db8:1:2::/64"),
    ])
    func usableAddressesHaveOneCanonicalKey(text: String, key: String) {
        #expect(SourceAddress(text)?.rateLimitKey == key, "\(text)")
    }

    @Test(arguments: ["", "localhost", "10.0.0", "10.0.0.0.1", "010.0.0.1", "10.0.0.256", "1.2.3.-4", "0x7f.0.0.1", "1e1.0.0.1",
                      "127.1", "10.0.0.1 ", " 10.0.0.1", "10.0.0.1\u{0}", "10.0.0.1\u{0}.7", "10.0.0.0/8", "fe80::1%eth0",
                      "1::2::3", "12345::1", "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7", ":::", "::g", "[::1]", "::1/128",
                      "::ffff:1.2.3", "\u{FF11}0.0.0.1", String(repeating: "1", count: 100)])
    func anythingElseIsNotAnAddress(text: String) {
        #expect(SourceAddress(text) == nil, "\(text.debugDescription)")
    }

    @Test func originsOverHTTPNeedAUsableAddress() throws {
        #expect(try RequestOrigin.direct.rateLimitKey() == nil)
        #expect(try RequestOrigin.http(sourceIP: "2001:db8::5").rateLimitKey() == "2001:db8::/64")
        for unusable in [nil, "", "not an address"] as [String?] {
            #expect(throws: AuthError.self) { try RequestOrigin.http(sourceIP: unusable).rateLimitKey() }
        }
    }

    static let context = InvocationContext(requestID: "source-address-test", logger: Logger.jsonLines(level: .error))

    static func guest(_ flows: InProcessFlows, _ sourceIP: String) -> ErrorCode? {
        let request = InvocationRequest(kind: .httpAPIv2, body: ["provider": "guest"], sourceIP: sourceIP)
        do {
            _ = try flows.handler(HandlerCatalogue.signin).handle(request, context: context)
            return nil
        } catch {
            return AuthError.from(error).code
        }
    }

    /// Every address of one /64 and every spelling of one address draw from one budget.
    @Test(arguments: FlowWorld.Backend.allCases)
    func guestsAreCountedPerSlash64AndPerIPv4Address(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(["AUTH_GUEST": "on", "AUTH_GUEST_RATE": "5"], backend: backend)
        let flows = try InProcessFlows(world)
        let oneSlash64 = ["2001:db8:1:2::1", "2001:db8:1:2::2", "2001:db8:1:2::02", "2001:0db8:0001:0002:0:0:0:2", "2001:db8:1:2:ffff::9"]
        #expect(oneSlash64.map { Self.guest(flows, $0) } == [nil, nil, nil, nil, nil])
        #expect(Self.guest(flows, "2001:db8:1:2:abcd::1") == .rateLimited)
        #expect(Self.guest(flows, "2001:db8:1:3::1") == nil, "the next /64 has its own budget")

        let oneIPv4 = ["198.51.100.4", "::ffff:198.51.100.4", "198.51.100.4", "::ffff:c633:6404", "198.51.100.4"]
        #expect(oneIPv4.map { Self.guest(flows, $0) } == [nil, nil, nil, nil, nil])
        #expect(Self.guest(flows, "198.51.100.4") == .rateLimited)
        #expect(Self.guest(flows, "198.51.100.5") == nil, "each IPv4 address has its own budget")
        #expect(Self.guest(flows, "not-an-ip") == .invalidRequest)
    }

    /// `victim+1@`, `victim+2@`… are one mailbox: one budget of codes (and so of guesses).
    @Test(arguments: FlowWorld.Backend.allCases)
    func tagsOfOneAddressShareItsCodeBudget(backend: FlowWorld.Backend) throws {
        let codes = try EmailCodeWorld(backend, ["AUTH_OTP_RATE": "3"])
        let tagged = ["victim+1@example.com", "Victim+2@example.com", "victim@example.com"]
        for address in tagged {
            guard case .success = codes.start(address) else {
                Issue.record("\(address) was refused")
                return
            }
        }
        for address in ["victim+3@example.com", "VICTIM@example.com", "victim+@example.com"] {
            guard case .failure(let error) = codes.start(address) else {
                Issue.record("\(address) got a fourth code")
                continue
            }
            #expect(error.code == .rateLimited)
        }
        guard case .success = codes.start("victim2+1@example.com") else {
            Issue.record("another address was refused")
            return
        }
    }
}
