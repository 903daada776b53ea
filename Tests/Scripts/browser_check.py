"""The console and the web demo in a real browser (contract section 23): Debian's Chromium,
headless, driven by Playwright through executable_path (no browser download), passkeys through
Chromium's virtual authenticator (the DevTools WebAuthn domain).

Usage: browser_check.py AUTHCTL WORKDIR SCREENSHOTS_DIR
Starts its own `authctl serve` processes (and one `authctl console`) on free loopback ports,
prints one JSON verdict: {"ok": true, "steps": [...]} or {"ok": false, "error": ..., "steps": [...]}.
One browser launch for everything, so the whole check stays well under a minute.
"""
import http.client
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

from playwright.sync_api import sync_playwright

AUTHCTL, WORKDIR, SHOTS = sys.argv[1], sys.argv[2], sys.argv[3]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
NAME = "<script>window.pwned=1</script>"
EMAIL = "web-demo@example.com"
steps = []
processes = []


def step(text):
    steps.append(text)


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start(arguments, environment, expect_lines):
    """Starts authctl and returns the first `expect_lines` lines it prints (its URLs)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("AUTH_")}
    env.update(environment)
    log = open(os.path.join(WORKDIR, "authctl-%d.log" % len(processes)), "wb")
    process = subprocess.Popen([AUTHCTL] + arguments, stdout=subprocess.PIPE, stderr=log, env=env)
    processes.append(process)
    lines = []
    deadline = time.monotonic() + 30
    while len(lines) < expect_lines:
        line = process.stdout.readline().decode()
        if not line or time.monotonic() > deadline:
            raise RuntimeError("authctl %s printed %r and stopped" % (" ".join(arguments), lines))
        lines.append(line.strip())
    return lines


def serve(port, dev_dir, environment=None):
    lines = start(["serve", "--port", str(port), "--dev-dir", dev_dir], environment or {}, 3)
    console = next(line.split(": ", 1)[1] for line in lines if line.startswith("console: "))
    return console


def get(url, headers=None):
    """(status, headers, body) without following redirects."""
    parts = urllib.request.urlparse(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    connection.request("GET", parts.path + ("?" + parts.query if parts.query else ""), headers=headers or {})
    answer = connection.getresponse()
    body = answer.read().decode()
    connection.close()
    return answer.status, dict((key.lower(), value) for key, value in answer.getheaders()), body


def wait_status(page, text, timeout=30000):
    status = page.locator("#status")
    try:
        status.filter(has_text=text).wait_for(timeout=timeout)
    except Exception as error:
        raise AssertionError("the demo's status never said %r; it says %r" % (text, status.text_content())) from error
    return status.text_content()


def newest_code(outbox, email):
    names = sorted(name for name in os.listdir(outbox) if name.endswith(".eml"))
    for name in reversed(names):
        text = open(os.path.join(outbox, name), encoding="utf-8").read()
        if ("To: " + email) in text:
            marker = "Your sign-in code is "
            index = text.index(marker) + len(marker)
            return text[index:index + 6]
    raise AssertionError("no code to %s in %s" % (email, outbox))


def demo_sign_in(page, subject):
    page.fill("#subject", subject)
    page.fill("#email", EMAIL)
    page.fill("#name", NAME)
    page.click("#dev-form button")
    return wait_status(page, "Signed in as")


def run(playwright):
    port, cors_port, strict_port, console_port = free_port(), free_port(), free_port(), free_port()
    dev_dir = os.path.join(WORKDIR, "dev")
    console_url = serve(port, dev_dir)
    demo_url = "http://localhost:%d/demo" % port
    browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"], timeout=60000)
    try:
        context = browser.new_context(viewport={"width": 1000, "height": 900})
        # Under a loaded machine (make test runs suites side by side) a step may take seconds.
        context.set_default_timeout(30000)
        demo = context.new_page()
        cdp = context.new_cdp_session(demo)
        cdp.send("WebAuthn.enable")
        cdp.send("WebAuthn.addVirtualAuthenticator", {"options": {
            "protocol": "ctap2", "transport": "internal", "hasResidentKey": True, "hasUserVerification": True,
            "isUserVerified": True, "automaticPresenceSimulation": True}})

        # The demo: dev identity provider, a passkey registered and used, an email code.
        demo.goto(demo_url)
        said = demo_sign_in(demo, "browser-user")
        user_id = said.split("Signed in as ", 1)[1].rstrip(".")
        demo.locator("#sessions li").first.wait_for()
        demo.screenshot(path=os.path.join(SHOTS, "web-demo.png"), full_page=True)
        step("demo: signed in with the dev identity provider")
        demo.click("#register-form button")
        wait_status(demo, "Passkey registered")
        step("demo: passkey registered through the virtual authenticator")
        demo.click("#signout-form button")
        wait_status(demo, "Signed out.")
        demo.click("#passkey-form button")
        said = wait_status(demo, "Signed in with a passkey as")
        assert user_id in said, said
        step("demo: signed out, signed in with the passkey")
        demo.click("#signout-form button")
        wait_status(demo, "Signed out.")
        demo.fill("#code-email", EMAIL)
        demo.click("#code-form button")
        wait_status(demo, "Code sent")
        demo.fill("#code", newest_code(os.path.join(dev_dir, "outbox"), EMAIL))
        demo.click("#code-entry button")
        said = wait_status(demo, "Signed in as")
        assert user_id in said, said
        demo.click("#refresh-form button")
        wait_status(demo, "Refreshed.")
        step("demo: signed in with an email code from the outbox, refreshed")

        # The console: its token, found by email with the keyboard, the name shown as text.
        status, _, _ = get(console_url.split("?")[0])
        assert status == 401, "the console without its token answered %d" % status
        status, _, _ = get(console_url.split("?")[0] + "?token=not-the-token")
        assert status == 401, "the console with a wrong token answered %d" % status
        step("console: 401 without its token")
        console = context.new_page()
        console.on("dialog", lambda dialog: dialog.accept())
        console.goto(console_url)
        assert "token=" not in console.url, console.url
        console.focus("#q")
        console.keyboard.type(EMAIL)
        console.keyboard.press("Enter")
        console.click("a:has-text('%s')" % user_id)
        console.get_by_role("heading", name="Sessions").wait_for()
        assert console.get_by_text(NAME, exact=True).count() >= 1, "the display name is not shown as text"
        assert console.evaluate("window.pwned") is None, "the display name ran as a script"
        step("console: user found by email, its <script> name shown as text")
        console.screenshot(path=os.path.join(SHOTS, "console-user.png"), full_page=True)
        # A phone's width: the page fits it (tables scroll inside their own box).
        phone = context.new_page()
        phone.set_viewport_size({"width": 390, "height": 844})
        phone.goto(console.url)
        phone.get_by_role("heading", name="Sessions").wait_for()
        overflow = phone.evaluate("document.documentElement.scrollWidth")
        wide = phone.evaluate("""[...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > 392)
            .map((e) => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right)).slice(0, 8)""")
        phone.screenshot(path=os.path.join(SHOTS, "console-user-phone.png"), full_page=True)
        assert overflow <= 390, "the user page is %d px wide on a phone: %s" % (overflow, wide)
        phone.close()

        # Deleting the passkey: the identity goes, the sessions stay.
        console.click("button:has-text('Delete passkey')")
        console.locator(".notice").filter(has_text="Passkey deleted").wait_for()
        assert console.locator("section[aria-labelledby=passkeys]").get_by_text("None.").count() == 1, "the passkey is still listed"
        step("console: passkey deleted")

        # Revoking the demo's session: its next refresh is refused.
        console.click("button:has-text('Revoke session')")
        console.locator(".notice").filter(has_text="Session revoked").wait_for()
        demo.click("#refresh-form button")
        wait_status(demo, "REFRESH_TOKEN_REVOKED")
        step("console: session revoked; the demo's refresh answered REFRESH_TOKEN_REVOKED")

        # App metadata: the next access token carries it.
        demo_sign_in(demo, "browser-user")
        console.fill("#metadata", '{"role": "support"}')
        console.click("text=Save app metadata")
        console.locator(".notice").filter(has_text="App metadata saved").wait_for()
        demo.click("#refresh-form button")
        wait_status(demo, "Refreshed.")
        demo.click("#whoami-form button")
        said = wait_status(demo, '"role": "support"')
        step("console: app metadata saved; the next access token carries it")

        # The events page: the revocation's session.ended (read before the deletion, which erases
        # the user's records from the local change log).
        events = context.new_page()
        events.goto(console_url.split("?")[0] + "/events")
        events.get_by_text("session.ended").first.wait_for()
        events.get_by_text("user.updated").first.wait_for()
        events.close()
        step("console: recent events show the revocation and the metadata change")

        demo.click("#signout-all-form button")
        wait_status(demo, "Signed out everywhere")
        step("demo: signed out everywhere")

        console.reload()
        console.click("text=Delete user")
        console.locator(".notice").filter(has_text="User deleted").wait_for()
        console.goto(console_url.split("?")[0] + "?q=" + EMAIL)
        console.get_by_text("No user matches").wait_for()
        step("console: user deleted, found no more")

        # `authctl console` on the same store: loopback, its own token.
        lines = start(["console", "--port", str(console_port)], {"AUTH_STORE": os.path.join(dev_dir, "store")}, 1)
        url = lines[0].split(" on ", 1)[1]
        assert url.startswith("http://127.0.0.1:%d/console?token=" % console_port), url
        status, _, _ = get(url.split("?")[0])
        assert status == 401, "authctl console without its token answered %d" % status
        page = context.new_page()
        page.goto(url)
        page.get_by_role("heading", name="Users").wait_for()
        page.close()
        step("authctl console: on 127.0.0.1, 401 without its token, the users page with it")

        # CORS as the browser enforces it: the demo at localhost:PORT calling other origins.
        serve(cors_port, os.path.join(WORKDIR, "dev-cors"), {"AUTH_CORS_ORIGINS": "http://localhost:%d" % port})
        serve(strict_port, os.path.join(WORKDIR, "dev-strict"), {"AUTH_CORS_ORIGINS": "https://app.example.com"})
        for api, expected, label in [
            ("http://127.0.0.1:%d" % port, "Signed in as", "dev defaults: a localhost page calls 127.0.0.1 (loopback CORS)"),
            ("http://127.0.0.1:%d" % cors_port, "Signed in as", "AUTH_CORS_ORIGINS lists the page's origin: allowed"),
            ("http://127.0.0.1:%d" % strict_port, "Failed to fetch", "AUTH_CORS_ORIGINS does not list it: the browser's fetch fails"),
        ]:
            fresh = browser.new_context()
            page = fresh.new_page()
            page.goto(demo_url + "?api=" + api)
            demo_sign_in_expecting(page, expected)
            fresh.close()
            step("cors: " + label)
    finally:
        browser.close()


def demo_sign_in_expecting(page, expected):
    page.fill("#subject", "cors-user")
    page.fill("#email", "cors@example.com")
    page.click("#dev-form button")
    wait_status(page, expected)


def main():
    os.makedirs(SHOTS, exist_ok=True)
    started = time.monotonic()
    try:
        with sync_playwright() as playwright:
            run(playwright)
        verdict = {"ok": True, "steps": steps, "seconds": round(time.monotonic() - started, 1)}
    except Exception as error:  # the verdict carries it to the Swift test
        verdict = {"ok": False, "error": "%s: %s" % (type(error).__name__, error), "steps": steps}
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
    print(json.dumps(verdict))


main()
