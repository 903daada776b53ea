import LambdaAuth
import LambdaAuthTooling

/// What a scenario leaves in its table, in a form that two runs of the same requests share: every
/// item as its DynamoDB JSON line, each random value (ids, hashes, sealed blobs, keys) replaced by
/// `<random>`, the lines sorted. Times are already fixed by the replay's clock, so a refactor that
/// writes another attribute, another count, version, ttl or flag, or one item more or less, shows
/// as a changed line; which random id refers to which is left to the scenarios' own checks.
///
/// `authctl replay --exports DIR` compares each scenario's fingerprint with `DIR/<scenario>.items`;
/// `--record-exports` writes them (docs/replay.md, "Golden exports").
enum TableFingerprint {
    static func lines(of table: any Table) throws -> [String] {
        var lines: [String] = []
        var start: Item?
        repeat {
            let page = try table.scan(limit: 1000, exclusiveStartKey: start)
            // The local store's dev keys are the backend's own, made on first use; the rest is the
            // requests' work and the same on both backends.
            lines += page.items.filter { $0["PK"] != .s(Keys.devSecrets) }.map { masked(DynamoJSON.encode($0)) }
            start = page.lastEvaluatedKey
        } while start != nil
        return lines.sorted()
    }

    /// Compact JSON with random values masked and object members sorted after masking (a map keyed
    /// by session ids would otherwise list its members in the ids' order).
    static func masked(_ value: JSONValue) -> String {
        switch value {
        case .string(let text): return JSONValue.string(masked(text)).serialized()
        case .array(let elements): return "[" + elements.map(masked).joined(separator: ",") + "]"
        case .object(let members):
            return "{" + members.map { JSONValue.string(masked($0.key)).serialized() + ":" + masked($0.value) }.sorted()
                .joined(separator: ",") + "}"
        default: return value.serialized()
        }
    }

    /// Runs of base64/base64url/hex characters 20 or longer, or 16 or longer that mix letters' cases
    /// or letters and digits, are random in this product's items (26-letter user ids, 22-character ids, hashes,
    /// sealed values); timestamps, counts and words stay.
    static func masked(_ line: String) -> String {
        var output = ""
        var run = ""
        func flush() {
            output += isRandom(run) ? "<random>" : run
            run = ""
        }
        for character in line {
            if character.isASCII, character.isLetter || character.isNumber || "-_+/=".contains(character) {
                run.append(character)
            } else {
                flush()
                output.append(character)
            }
        }
        flush()
        return output
    }

    static func isRandom(_ run: String) -> Bool {
        guard run.count >= 16 else { return false }
        if run.count >= 20 { return true }
        var classes = Set<Int>()
        for character in run {
            if character.isUppercase { classes.insert(0) } else if character.isLowercase { classes.insert(1) }
            else if character.isNumber { classes.insert(2) }
        }
        return classes.count >= 2
    }

    /// The problems of one scenario's fingerprint against its golden file, or the file written.
    static func check(_ lines: [String], golden path: String, record: Bool) -> [String] {
        let text = lines.map { $0 + "\n" }.joined()
        if record {
            do {
                try FileSystem.writeAtomically(path, Array(text.utf8))
                return []
            } catch {
                return ["cannot write \(path): \(error)"]
            }
        }
        guard let golden = try? FileSystem.readFile(path) else {
            return ["no golden export \(path) (run with --record-exports on the commit that defines it)"]
        }
        let expected = String(decoding: golden, as: UTF8.self).split(separator: "\n").map(String.init)
        guard expected != lines else { return [] }
        let missing = expected.filter { !lines.contains($0) }, extra = lines.filter { !expected.contains($0) }
        return ["table export differs from \(path): \(expected.count) items expected, \(lines.count) found"]
            + missing.prefix(5).map { "  only in golden: \($0)" } + extra.prefix(5).map { "  only in this run: \($0)" }
    }
}
