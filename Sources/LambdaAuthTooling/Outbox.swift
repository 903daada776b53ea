import LambdaAuth

/// Reads what `AUTH_EMAIL_SENDER=outbox:DIR` wrote: how `authctl demo`, the replays and the tests
/// learn a code, as a user would from their mailbox. Test and development use only: production
/// sends through SES and keeps no plaintext code anywhere.
public enum Outbox {
    /// Every message in `directory`, oldest first (the names start with the write time).
    public static func messages(in directory: String) -> [EmailMessage] {
        let names = ((try? FileSystem.listDirectory(directory)) ?? []).filter { $0.hasSuffix(".eml") }.sorted()
        return names.compactMap { name in
            guard let bytes = try? FileSystem.readFile(directory + "/" + name, limit: 1 << 20) else { return nil }
            return parse(String(decoding: bytes, as: UTF8.self))
        }
    }

    static func parse(_ text: String) -> EmailMessage? {
        let lines = text.split(separator: "\r\n", omittingEmptySubsequences: false).map(String.init)
        guard let blank = lines.firstIndex(of: "") else { return nil }
        var headers: [String: String] = [:]
        for line in lines[..<blank] {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = String(line[line.index(after: colon)...].drop { $0 == " " })
        }
        guard let to = headers["to"], let subject = headers["subject"] else { return nil }
        return EmailMessage(to: to, subject: subject, body: lines[(blank + 1)...].joined(separator: "\n"))
    }

    /// The code of the newest message to `email` (compared lowercased), if any.
    public static func latestCode(to email: String, in directory: String) -> String? {
        messages(in: directory).last { $0.to == email.lowercased() }.flatMap { code(in: $0) }
    }

    /// The six digits after "Your sign-in code is " in the body.
    public static func code(in message: EmailMessage) -> String? {
        let marker = "Your sign-in code is "
        guard let line = message.body.split(separator: "\n").first(where: { $0.hasPrefix(marker) }) else { return nil }
        let digits = line.dropFirst(marker.count).prefix(6)
        return digits.count == 6 && digits.allSatisfy(\.isNumber) ? String(digits) : nil
    }
}
