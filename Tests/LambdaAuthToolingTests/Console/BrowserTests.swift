import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Testing

/// The console and the web demo in a real browser (contract section 23): Debian's Chromium,
/// headless under Playwright (Tests/Scripts/browser_check.py, which starts its own `authctl
/// serve` and `authctl console` processes). One browser launch drives the demo's sign-ins (dev
/// identity provider, a passkey through Chromium's virtual authenticator, an email code),
/// the console's actions as their effects reach the demo, and CORS as the browser enforces it.
/// The screenshots land in a temporary directory; docs/images/ holds the reviewed ones
/// (`python3 Tests/Scripts/browser_check.py .build/debug/authctl /tmp/x docs/images`).
@Suite final class BrowserTests {
    let directory = TestSupport.temporaryDirectory("browser")

    deinit { TestSupport.removeTree(directory) }

    static let steps: [JSONValue] = [
        "demo: signed in with the dev identity provider",
        "demo: passkey registered through the virtual authenticator",
        "demo: signed out, signed in with the passkey",
        "demo: signed in with an email code from the outbox, refreshed",
        "console: 401 without its token",
        "console: user found by email, its <script> name shown as text",
        "console: passkey deleted",
        "console: session revoked; the demo's refresh answered REFRESH_TOKEN_REVOKED",
        "console: app metadata saved; the next access token carries it",
        "console: recent events show the revocation and the metadata change",
        "demo: signed out everywhere",
        "console: user deleted, found no more",
        "authctl console: on 127.0.0.1, 401 without its token, the users page with it",
        "cors: dev defaults: a localhost page calls 127.0.0.1 (loopback CORS)",
        "cors: AUTH_CORS_ORIGINS lists the page's origin: allowed",
        "cors: AUTH_CORS_ORIGINS does not list it: the browser's fetch fails",
    ]

    @Test func theDemoAndTheConsoleInChromium() throws {
        // Missing prerequisites fail here, naming what to run: never a quiet skip.
        #expect(FileSystem.exists("/usr/bin/chromium"), "Debian's chromium is missing: run Tests/Scripts/prerequisites.sh test")
        let verdict = try TestSupport.pythonPeer("browser_check.py", [ProcessRunner.executable("authctl"), directory, directory + "/screenshots"])
        #expect(verdict["ok"] == true, "\(verdict)")
        #expect(verdict["steps"] == .array(BrowserTests.steps), "\(verdict)")
        for screenshot in ["web-demo.png", "console-user.png"] {
            let bytes = (try? FileSystem.readFile(directory + "/screenshots/" + screenshot)) ?? []
            #expect(bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]) && bytes.count > 10_000, "\(screenshot): \(bytes.count) bytes")
        }
    }
}
