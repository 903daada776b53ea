/// `/demo` on serve's dev defaults (contract section 23): the sample web app, one page and one
/// JavaScript module served from the binary. The page calls the API at its own origin, or at
/// `?api=ORIGIN` (another serve, to see CORS at work).
public enum DemoApp {
    public static let basePath = "/demo"

    /// The demo's answer, or nil for a path outside it.
    public static func respond(_ request: ServeListener.Request) -> ServeListener.Response? {
        let path = GatewayEvent.split(request.target).path
        guard path == basePath || path.hasPrefix(basePath + "/") else { return nil }
        guard request.method == "GET" else { return ServeListener.message(405, "Method Not Allowed") }
        switch path {
        case basePath, basePath + "/": return answer("text/html; charset=utf-8", page)
        case basePath + "/demo.js": return answer("text/javascript; charset=utf-8", DemoScript.module)
        default: return ServeListener.message(404, "Not Found")
        }
    }

    static func answer(_ type: String, _ text: String) -> ServeListener.Response {
        ServeListener.Response(status: 200, headers: [("content-type", type), ("cache-control", "no-store"),
                                                      ("x-content-type-options", "nosniff")], body: Array(text.utf8))
    }

    static let page = """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
        <title>lambda-auth web demo</title>
        <style>
        *{box-sizing:border-box}body{font:16px/1.45 system-ui,sans-serif;margin:0 auto;padding:1rem;max-width:40rem;color:#1b1b1b}
        form{margin:.6rem 0;padding:.6rem;border:1px solid #ccc;border-radius:6px}label{display:block;font-weight:600;margin:.3rem 0 .1rem}
        input{width:100%;font:inherit;padding:.4rem;border:1px solid #888;border-radius:4px}
        button{font:inherit;margin-top:.5rem;padding:.4rem .9rem;border-radius:4px;border:1px solid #1f3a5f;background:#1f3a5f;color:#fff}
        :focus-visible{outline:3px solid #f0a500;outline-offset:2px}pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f4f4f4;padding:.5rem}
        #status{padding:.5rem;white-space:pre-wrap;overflow-wrap:anywhere}.ok{background:#e6f4ea}.failed{background:#fdecea}
        </style>
        <script type="module" src="/demo/demo.js"></script></head>
        <body><h1>lambda-auth web demo</h1>
        <p id="status" role="status" aria-live="polite">Not signed in.</p>
        <div id="signed-out">
        <h2>Sign in</h2>
        <form id="dev-form"><label for="subject">Dev identity provider: subject</label><input id="subject" name="subject" value="web-demo-user" required>
        <label for="email">Email</label><input id="email" name="email" type="email" value="web-demo@example.com">
        <label for="name">Name</label><input id="name" name="name" value="Web Demo">
        <button type="submit">Sign in with the dev identity provider</button></form>
        <form id="code-form"><label for="code-email">Email address for a code</label><input id="code-email" name="email" type="email" required autocomplete="email">
        <button type="submit">Send a code</button></form>
        <form id="code-entry" hidden><label for="code">The six-digit code</label><input id="code" name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" required>
        <button type="submit">Sign in with the code</button></form>
        <form id="passkey-form"><button type="submit">Sign in with a passkey</button></form>
        </div>
        <div id="signed-in" hidden>
        <h2>Signed in</h2>
        <h3>User</h3><pre id="user"></pre>
        <h3>Sessions</h3><ul id="sessions"></ul>
        <form id="register-form"><label for="passkey-name">Passkey name</label><input id="passkey-name" name="passkey-name" value="This browser">
        <button type="submit">Register a passkey</button></form>
        <form id="refresh-form"><button type="submit">Refresh</button></form>
        <form id="whoami-form"><button type="submit">Call the app's API (/example/whoami)</button></form>
        <form id="signout-form"><button type="submit">Sign out</button></form>
        <form id="signout-all-form"><button type="submit">Sign out everywhere</button></form>
        </div>
        </body></html>
        """
}
