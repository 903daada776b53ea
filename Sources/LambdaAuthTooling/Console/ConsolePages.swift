import LambdaAuth

/// The console's HTML. Every value from the store goes through `h` (HTMLText.escaped); the only
/// markup is written here. Forms post without script; the one script asks before a change that
/// cannot be undone.
enum ConsolePages {
    static func h(_ text: String) -> String { HTMLText.escaped(text) }
    static func h(_ value: JSONValue?) -> String {
        guard let value, value != .null else { return "—" }
        return HTMLText.escaped(value.stringValue ?? value.serialized())
    }

    static let style = """
        *{box-sizing:border-box}body{font:16px/1.45 system-ui,sans-serif;margin:0;color:#1b1b1b;background:#fafafa}
        header{background:#1f3a5f;color:#fff;padding:.6rem 1rem;display:flex;flex-wrap:wrap;gap:1rem;align-items:center}
        header a{color:#fff}header strong{margin-right:auto}main{padding:1rem;max-width:60rem;margin:auto}
        table{border-collapse:collapse;width:100%;background:#fff}th,td{border:1px solid #ccc;padding:.35rem .5rem;text-align:left;vertical-align:top}td{overflow-wrap:anywhere}th{white-space:nowrap}
        h1,h2,p{overflow-wrap:anywhere}
        .scroll{overflow-x:auto}section{margin:1.2rem 0}label{display:block;font-weight:600;margin:.4rem 0 .2rem}
        input[type=search],textarea{width:100%;font:inherit;padding:.4rem;border:1px solid #888;border-radius:4px}
        textarea{font-family:ui-monospace,monospace;min-height:6rem}
        button{font:inherit;padding:.35rem .8rem;border-radius:4px;border:1px solid #1f3a5f;background:#fff;color:#1f3a5f;cursor:pointer}
        button.danger{border-color:#a31515;color:#a31515}:focus-visible{outline:3px solid #f0a500;outline-offset:2px}
        .notice{background:#e6f4ea;border:1px solid #2e7d32;padding:.5rem}.refusal{background:#fdecea;border:1px solid #a31515;padding:.5rem}
        dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem .8rem}dt{font-weight:600}dd{margin:0;overflow-wrap:anywhere}
        pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:0;font-size:.85rem}form.inline{display:inline}
        .visually-hidden{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}
        @media (max-width:40rem){dl{grid-template-columns:1fr}th,td{font-size:.9rem}}
        """

    /// Asks before the changes a click could make by mistake (forms marked `data-confirm`).
    static let script = """
        document.addEventListener('submit', (event) => {
          const question = event.target.dataset.confirm;
          if (question && !window.confirm(question)) event.preventDefault();
        });
        """

    static func page(_ status: Int, title: String, _ body: String) -> ServeListener.Response {
        let html = """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(h(title)) · lambda-auth console</title><style>\(style)</style>
            <script src="\(ConsoleApp.basePath)/console.js" defer></script></head>
            <body><header><strong>lambda-auth console</strong><nav aria-label="Console"><a href="\(ConsoleApp.basePath)">Users</a> ·
            <a href="\(ConsoleApp.basePath)/events">Recent events</a></nav></header>
            <main><h1>\(h(title))</h1>
            \(body)
            </main></body></html>
            """
        return ServeListener.Response(status: status, headers: [
            ("content-type", "text/html; charset=utf-8"), ("cache-control", "no-store"),
            // Nothing from outside, no framing, forms only to the console itself.
            ("content-security-policy", "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; img-src 'self'; "
                + "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
            // same-origin, not no-referrer: under no-referrer a browser posts forms with `Origin: null`,
            // which the console's origin check refuses.
            ("x-content-type-options", "nosniff"), ("referrer-policy", "same-origin"),
        ], body: Array(html.utf8))
    }

    static func message(_ status: Int, _ title: String, _ text: String) -> ServeListener.Response {
        page(status, title: title, "<p>\(h(text))</p>")
    }

    static func banner(notice: String?, refusal: String?) -> String {
        var html = ""
        if let notice { html += "<p class=\"notice\" role=\"status\">\(h(notice))</p>" }
        if let refusal { html += "<p class=\"refusal\" role=\"alert\">Refused: \(h(refusal))</p>" }
        return html
    }

    static func users(query: String, users: [JSONValue], next: String?, notice: String?) -> ServeListener.Response {
        var body = banner(notice: notice, refusal: nil)
        body += """
            <form method="get" action="\(ConsoleApp.basePath)" role="search">
            <label for="q">Find a user by id, email address or provider subject</label>
            <input type="search" id="q" name="q" value="\(h(query))" autocomplete="off">
            <p><button type="submit">Search</button> <a href="\(ConsoleApp.basePath)">All users</a></p></form>
            """
        if users.isEmpty {
            body += "<p>\(query.isEmpty ? "No users yet." : "No user matches \(h(query)).")</p>"
        } else {
            body += "<div class=\"scroll\"><table><caption class=\"visually-hidden\">Users</caption><thead><tr><th scope=\"col\">User</th>"
                + "<th scope=\"col\">Email</th><th scope=\"col\">Name</th><th scope=\"col\">Last sign-in</th><th scope=\"col\">Active sessions</th></tr></thead><tbody>"
            for user in users {
                let id = user["id"]?.stringValue ?? ""
                body += "<tr><td><a href=\"\(ConsoleApp.basePath)/user?id=\(h(HTMLText.urlEncoded(id)))\">\(h(id))</a>"
                    + (user["isGuest"]?.boolValue == true ? " (guest)" : "") + "</td><td>\(h(user["email"]))</td>"
                    + "<td>\(h(user["displayName"]))</td><td>\(h(user["lastSignInAt"]))</td><td>\(h(user["activeSessions"]))</td></tr>"
            }
            body += "</tbody></table></div>"
        }
        if let next {
            body += "<p><a href=\"\(ConsoleApp.basePath)?after=\(h(HTMLText.urlEncoded(next)))\">Next page</a></p>"
        }
        return page(200, title: query.isEmpty ? "Users" : "Users matching \(query)", body)
    }

    static func user(_ description: JSONValue, passkeys: [JSONValue], secondFactor: Bool, notice: String?, refusal: String?) -> ServeListener.Response {
        let user = description["user"] ?? [:]
        let id = user["id"]?.stringValue ?? ""
        func form(_ action: String, _ fields: [String: String], _ label: String, confirm: String? = nil, danger: Bool = false) -> String {
            var html = "<form class=\"inline\" method=\"post\" action=\"\(ConsoleApp.basePath)/user/\(action)\""
                + (confirm.map { " data-confirm=\"\(h($0))\"" } ?? "") + "><input type=\"hidden\" name=\"id\" value=\"\(h(id))\">"
            for (name, value) in fields.sorted(by: { $0.key < $1.key }) {
                html += "<input type=\"hidden\" name=\"\(h(name))\" value=\"\(h(value))\">"
            }
            return html + "<button type=\"submit\"\(danger ? " class=\"danger\"" : "")>\(h(label))</button></form>"
        }
        var body = banner(notice: notice, refusal: refusal)
        body += "<section aria-labelledby=\"profile\"><h2 id=\"profile\">Profile</h2><dl>"
        for (label, key) in [("Id", "id"), ("Display name", "displayName"), ("Email", "email"), ("Email verified", "emailVerified"),
                             ("Created", "createdAt"), ("Last sign-in", "lastSignInAt")] {
            body += "<dt>\(label)</dt><dd>\(h(user[key]))</dd>"
        }
        if user["isGuest"]?.boolValue == true { body += "<dt>Guest</dt><dd>yes</dd>" }
        if let requested = description["deletionRequestedAt"], requested != .null { body += "<dt>Deletion requested</dt><dd>\(h(requested))</dd>" }
        body += "</dl></section>"

        body += "<section aria-labelledby=\"identities\"><h2 id=\"identities\">Identities</h2>"
        let identities = user["identities"]?.arrayValue ?? []
        if identities.isEmpty {
            body += "<p>None.</p>"
        } else {
            body += "<div class=\"scroll\"><table><thead><tr><th scope=\"col\">Provider</th><th scope=\"col\">Subject</th><th scope=\"col\">Email</th>"
                + "<th scope=\"col\">Linked</th></tr></thead><tbody>"
            for identity in identities {
                body += "<tr><td>\(h(identity["provider"]))</td><td>\(h(identity["subject"]))</td><td>\(h(identity["email"]))</td>"
                    + "<td>\(h(identity["linkedAt"]))</td></tr>"
            }
            body += "</tbody></table></div>"
        }
        body += "</section>"

        body += "<section aria-labelledby=\"sessions\"><h2 id=\"sessions\">Sessions</h2>"
        let sessions = (description["sessions"]?.arrayValue ?? []).filter { $0["status"]?.stringValue == "ACTIVE" }
        if sessions.isEmpty {
            body += "<p>No active session.</p>"
        } else {
            body += "<div class=\"scroll\"><table><thead><tr><th scope=\"col\">Session</th><th scope=\"col\">Device</th><th scope=\"col\">Created</th>"
                + "<th scope=\"col\">Last active</th><th scope=\"col\">Action</th></tr></thead><tbody>"
            for session in sessions {
                let sessionID = session["id"]?.stringValue ?? ""
                let device = (session["device"]?.objectValue ?? [:]).sorted { $0.key < $1.key }
                    .map { "\($0.key): \($0.value.stringValue ?? "")" }.joined(separator: ", ")
                body += "<tr><td>\(h(sessionID))</td><td>\(h(device.isEmpty ? "—" : device))</td><td>\(h(session["createdAt"]))</td>"
                    + "<td>\(h(session["lastActiveAt"]))</td><td>"
                    + form("revoke-session", ["session": sessionID], "Revoke session \(sessionID.prefix(8))",
                           confirm: "Revoke this session? Its refresh tokens stop working.")
                    + "</td></tr>"
            }
            body += "</tbody></table></div>"
        }
        body += "</section>"

        body += "<section aria-labelledby=\"passkeys\"><h2 id=\"passkeys\">Passkeys</h2>"
        if passkeys.isEmpty {
            body += "<p>None.</p>"
        } else {
            body += "<div class=\"scroll\"><table><thead><tr><th scope=\"col\">Name</th><th scope=\"col\">Created</th><th scope=\"col\">Last used</th>"
                + "<th scope=\"col\">Action</th></tr></thead><tbody>"
            for passkey in passkeys {
                let passkeyID = passkey["id"]?.stringValue ?? ""
                body += "<tr><td>\(h(passkey["name"]))</td><td>\(h(passkey["createdAt"]))</td><td>\(h(passkey["lastUsedAt"]))</td><td>"
                    + form("delete-passkey", ["passkey": passkeyID], "Delete passkey \(passkey["name"]?.stringValue ?? "")",
                           confirm: "Delete this passkey?", danger: true)
                    + "</td></tr>"
            }
            body += "</tbody></table></div>"
        }
        body += "</section>"

        body += "<section aria-labelledby=\"mfa\"><h2 id=\"mfa\">Second factor</h2>"
        body += secondFactor
            ? "<p>Enrolled. " + form("reset-mfa", [:], "Reset second factor", confirm: "Remove the user's second factor and recovery codes?", danger: true) + "</p>"
            : "<p>None enrolled.</p>"
        body += "</section>"

        let metadata = user["appMetadata"]?.prettyPrinted() ?? "{}"
        body += """
            <section aria-labelledby="metadata-heading"><h2 id="metadata-heading">App metadata</h2>
            <form method="post" action="\(ConsoleApp.basePath)/user/metadata"><input type="hidden" name="id" value="\(h(id))">
            <label for="metadata">App metadata (a JSON object; every access token issued afterwards carries it)</label>
            <textarea id="metadata" name="metadata" spellcheck="false">\(h(metadata))</textarea>
            <p><button type="submit">Save app metadata</button></p></form></section>
            <section aria-labelledby="delete-heading"><h2 id="delete-heading">Delete</h2>
            <p>Deletes the user and every item of it, as the user's own account deletion does.</p>
            """
        body += form("delete", [:], "Delete user", confirm: "Delete this user and all its data? This cannot be undone.", danger: true)
        body += "</section>"
        let name = user["displayName"]?.stringValue ?? user["email"]?.stringValue ?? id
        return page(200, title: "User \(name)", body)
    }

    static func events(_ events: [JSONValue]?) -> ServeListener.Response {
        guard let events else {
            return page(200, title: "Recent events", "<p>The console reads recent events from the local store's change log. On DynamoDB the "
                        + "events handler publishes them to EventBridge: read them there.</p>")
        }
        var body = "<p>The last \(events.count) events of the local store's change log (what <code>authctl events tail</code> prints), newest first.</p>"
        if !events.isEmpty {
            body += "<div class=\"scroll\"><table><thead><tr><th scope=\"col\">Time</th><th scope=\"col\">Type</th><th scope=\"col\">Subject</th>"
                + "<th scope=\"col\">Data</th></tr></thead><tbody>"
            for event in events {
                // The subject is the user's id: a link to its page (gone once the user is deleted).
                let subject = event["subject"]?.stringValue ?? ""
                let subjectCell = subject.isEmpty ? "—" : "<a href=\"\(ConsoleApp.basePath)/user?id=\(h(HTMLText.urlEncoded(subject)))\">\(h(subject))</a>"
                body += "<tr><td>\(h(event["time"]))</td><td>\(h(event["type"]))</td><td>\(subjectCell)</td>"
                    + "<td><pre>\(h(event["data"]?.prettyPrinted() ?? ""))</pre></td></tr>"
            }
            body += "</tbody></table></div>"
        }
        return page(200, title: "Recent events", body)
    }
}
