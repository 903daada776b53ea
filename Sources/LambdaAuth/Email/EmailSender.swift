#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One plain-text message to one recipient.
public struct EmailMessage: Sendable, Equatable {
    public var to: String
    public var subject: String
    public var body: String

    public init(to: String, subject: String, body: String) {
        self.to = to
        self.subject = subject
        self.body = body
    }
}

/// Delivers a message or throws PROVIDER_UNAVAILABLE (or CONFIG_ERROR). AUTH_EMAIL_SENDER picks
/// the implementation: `outbox:DIR` (files, for local runs and tests) or `ses`.
protocol EmailSender: Sendable {
    func send(_ message: EmailMessage) throws(AuthError)
}

/// `outbox:DIR`: each message is one `.eml` file in DIR, written atomically (a reader never sees
/// half a message). Names start with the wall-clock nanoseconds (not the replay clock), so that
/// sorting them sorts messages by when they were written. The only place a code is in plain text.
struct OutboxEmailSender: EmailSender {
    let directory: String
    let from: String
    let random: any RandomSource

    func send(_ message: EmailMessage) throws(AuthError) {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        let stamp = String(Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec))
        let name = String(repeating: "0", count: max(0, 20 - stamp.count)) + stamp + "-" + random.bytes(6).hexString + ".eml"
        do {
            try FileSystem.createDirectory(directory)
            try FileSystem.writeAtomically(directory + "/" + name, Array(OutboxEmailSender.render(message, from: from).utf8), durable: false)
        } catch {
            throw AuthError(.providerUnavailable, "the email could not be sent; try again", detail: "outbox write failed: \(error)")
        }
    }

    static func render(_ message: EmailMessage, from: String) -> String {
        "From: \(from)\r\nTo: \(message.to)\r\nSubject: \(message.subject)\r\nMIME-Version: 1.0\r\n"
            + "Content-Type: text/plain; charset=utf-8\r\n\r\n" + message.body.split(separator: "\n", omittingEmptySubsequences: false).joined(separator: "\r\n")
    }
}
