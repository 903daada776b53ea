import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling

/// What the events suites check of every event (contract section 22): that the CloudEvents SDK
/// from PyPI reads it, and that no token, hash, code, key or (without `AUTH_EVENTS_INCLUDE_EMAIL`)
/// email of the requests, the responses, the configuration or the store's items is in it.
enum EventChecks {
    struct PeerFailure: Error, CustomStringConvertible {
        let description: String
    }

    /// `Tests/Scripts/cloudevents_check.py` over the events: how many it read, and its problems.
    static func cloudEventsProblems(_ events: [JSONValue]) throws -> (checked: Int64?, problems: [JSONValue]) {
        let text = events.map { $0.serialized() + "\n" }.joined()
        let output = try ProcessRunner.run("/usr/bin/env", arguments: ["python3", TestSupport.scriptPath("cloudevents_check.py")],
                                           environment: Environment.current(), stdin: Array(text.utf8))
        guard output.exitCode == 0, let json = output.json else {
            throw PeerFailure(description: "cloudevents_check.py exited \(output.exitCode): \(output.stderrText.suffix(2000))")
        }
        return (json["checked"]?.int64Value, json["problems"]?.arrayValue ?? [])
    }

    /// Names of request and response members whose values are secret (tokens, codes, credentials,
    /// keys, passkey ceremonies) or personal (emails), matched in lower case, as parts of a name.
    static let secretMembers = ["token", "code", "secret", "credential", "assertion", "password", "key", "email"]

    /// Every string under a member `secretMembers` names, anywhere in `value`.
    static func secrets(inMessage value: JSONValue) -> [String] {
        switch value {
        case .object(let members):
            return members.flatMap { name, member -> [String] in
                // A passkey's id names it, as in the events (`passkeyId`): no key.
                let lowered = name.lowercased().replacing("passkey", with: "")
                return secretMembers.contains(where: lowered.contains) ? strings(in: member) : secrets(inMessage: member)
            }
        case .array(let elements): return elements.flatMap(secrets(inMessage:))
        default: return []
        }
    }

    /// Item attributes that hold a hash, key, sealed value, nonce, token, code or secret: by
    /// name (`secretHash`, `familyKey`, `sealedToken`, `successorNonce`, `codeHash`, `replaced1`,
    /// `publicKey`, the dev secrets' `pem` and `secret`), and `GSI1PK`, a refresh token's hash.
    static func isSecretAttribute(_ name: String) -> Bool {
        if ["PK", "SK", "GSI1SK"].contains(name) { return false }
        let lowered = name.lowercased().replacing("passkey", with: "")
        return name == "GSI1PK" || ["hash", "key", "sealed", "secret", "nonce", "token", "code", "pem", "replaced", "email"]
            .contains(where: lowered.contains)
    }

    /// The secret attributes' strings of an item in DynamoDB JSON (a stream image, an item of a
    /// scan), maps and lists included.
    static func secrets(inItem item: JSONValue) -> [String] {
        (item.objectValue ?? [:]).flatMap { name, attribute -> [String] in
            if isSecretAttribute(name) { return strings(in: attribute) }
            if let map = attribute["M"] { return secrets(inItem: map) }
            if let list = attribute["L"]?.arrayValue { return list.flatMap { secrets(inItem: ["element": $0]) } }
            return []
        }
    }

    /// A key setting's value and its parts (`kid:base64,…`, a PEM's lines), for a leak of one part.
    static func secrets(inSetting value: String) -> [String] {
        [value] + value.split(whereSeparator: { ",;: \n".contains($0) }).map(String.init)
    }

    static func strings(in value: JSONValue) -> [String] {
        switch value {
        case .string(let text): return [text]
        case .array(let elements): return elements.flatMap(strings(in:))
        case .object(let members): return members.values.flatMap(strings(in:))
        default: return []
        }
    }

    /// The needles found in the events. A short needle (an email code's six digits) is looked
    /// for in `subject` and `data` only: the `id`, `time` and `sequence` are runs of digits and
    /// hex that a code could match by chance, and are not where a leak would go; a needle under
    /// six characters (a `-` placeholder, a flag) is not one.
    static func leaks(in events: [JSONValue], of needles: some Sequence<String>) -> [String] {
        let wholes = Haystack(events.map { $0.serialized() })
        let payloads = Haystack(events.map { JSONValue.array([$0["subject"] ?? .null, $0["data"] ?? .null]).serialized() })
        return Set(needles).filter { $0.utf8.count >= 6 && ($0.utf8.count >= 16 ? wholes : payloads).contains($0) }.sorted()
    }

    /// Text searched for thousands of needles at once: each needle is compared only where its
    /// first six bytes occur (a scan of every event for every needle took minutes in a debug
    /// build over every scenario's events).
    struct Haystack {
        let bytes: [UInt8]
        let starts: [UInt64: [Int]]

        init(_ texts: [String]) {
            bytes = Array(texts.joined(separator: "\n").utf8)
            var starts: [UInt64: [Int]] = [:]
            if bytes.count >= 6 {
                for offset in 0...(bytes.count - 6) { starts[Haystack.key(bytes[offset..<offset + 6]), default: []].append(offset) }
            }
            self.starts = starts
        }

        static func key(_ six: ArraySlice<UInt8>) -> UInt64 {
            six.reduce(0) { $0 << 8 | UInt64($1) }
        }

        func contains(_ needle: String) -> Bool {
            let wanted = Array(needle.utf8)
            guard wanted.count >= 6 else { return false }
            return (starts[Haystack.key(wanted[0..<6])] ?? []).contains { offset in
                offset + wanted.count <= bytes.count && bytes[offset..<offset + wanted.count].elementsEqual(wanted)
            }
        }
    }
}
