import LambdaAuth
import Testing

/// The checks `MotoEventsTests` runs over every scenario's events can fail: a secret planted in an
/// event is found, the secrets of items and messages are picked out, and the CloudEvents SDK
/// refuses what is not a CloudEvent.
@Suite struct EventChecksTests {
    static let event: JSONValue = [
        "specversion": "1.0", "id": "5b0f8f0c9b1e6a2d4c3e7f9a1b2c3d4e", "type": "session.started",
        "source": "https://auth.example.test", "subject": "u7Qk2mZp9XbL", "time": "2026-11-27T23:05:14.123Z",
        "datacontenttype": "application/json", "sequence": "0000000000000000000912345678901234567890",
        "data": ["userId": "u7Qk2mZp9XbL", "sessionId": "s4Hn8Rt2Wq"],
    ]

    static func planted(_ field: String, _ value: String) -> JSONValue {
        guard case .object(var members) = event, case .object(var data)? = members["data"] else { return event }
        data[field] = .string(value)
        members["data"] = .object(data)
        return .object(members)
    }

    @Test func aPlantedSecretIsFoundAndAnInnocentEventPasses() {
        let refreshToken = "rt_0123456789abcdefghijKLMNOPQRSTUV"
        let needles = [refreshToken, "482913", "-", "testing-secret"]
        #expect(EventChecks.leaks(in: [Self.event], of: needles) == [])
        #expect(EventChecks.leaks(in: [Self.event, Self.planted("note", "token " + refreshToken)], of: needles) == [refreshToken])
        #expect(EventChecks.leaks(in: [Self.planted("code", "482913")], of: needles) == ["482913"])
        // Six digits the sequence happens to hold are not a leak; under six characters is no needle.
        #expect(EventChecks.leaks(in: [Self.event], of: ["912345", "1"]) == [])
    }

    @Test func theSecretsOfItemsAndMessagesArePickedOut() {
        let refresh: JSONValue = [
            "PK": ["S": "USER#u1"], "SK": ["S": "REFRESH#s1.2"], "GSI1PK": ["S": "REFRESH#9f86d081884c7d65"],
            "secretHash": ["S": "2c26b46b68ffc68f"], "familyKey": ["S": "fk-abcdefgh"], "userId": ["S": "u1"],
            "userView": ["M": ["email": ["S": "noor@example.com"], "displayName": ["S": "Noor"]]],
        ]
        #expect(Set(EventChecks.secrets(inItem: refresh))
                == ["REFRESH#9f86d081884c7d65", "2c26b46b68ffc68f", "fk-abcdefgh", "noor@example.com"])
        let response: JSONValue = [
            "user": ["id": "u1", "email": "noor@example.com"], "tokens": ["accessToken": "eyJ.a.b", "refreshToken": "rt_1"],
            "error": .null,
        ]
        #expect(Set(EventChecks.secrets(inMessage: response)) == ["noor@example.com", "eyJ.a.b", "rt_1"])
        #expect(EventChecks.secrets(inMessage: ["provider": "email", "code": "482913"]) == ["482913"])
        #expect(EventChecks.secrets(inMessage: ["passkeys": [["id": "1v6XEYpw0zPyW1Bh8VkPJJmty0yLRF3p"]]]) == [], "an id, as events carry")
        #expect(EventChecks.secrets(inSetting: "k1:AAAA,k2:BBBB") == ["k1:AAAA,k2:BBBB", "k1", "AAAA", "k2", "BBBB"])
    }

    @Test func theCloudEventsSDKRefusesWhatIsNotACloudEvent() throws {
        guard case .object(var members) = Self.event else { return }
        members["specversion"] = nil
        let noVersion = JSONValue.object(members)
        members = Self.event.objectValue ?? [:]
        members["time"] = "yesterday"
        let badTime = JSONValue.object(members)
        let result = try EventChecks.cloudEventsProblems([Self.event, noVersion, badTime])
        #expect(result.checked == 3)
        #expect(result.problems.count == 2, "\(result.problems)")
        #expect(result.problems.allSatisfy { $0.stringValue?.hasPrefix("line 2") == true || $0.stringValue?.hasPrefix("line 3") == true })
    }
}
