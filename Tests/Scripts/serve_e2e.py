"""An app's whole journey through a running `authctl serve` over real HTTP, with nothing but the
standard library's urllib (an independent client: no Swift on this side): a dev-IdP Google token
signs in, the refresh token rotates, Apple is linked with a dev-IdP Apple token, sessions are
listed, one session signs out, the account is deleted. Every answer's status is checked and its
body validated against Infra/openapi.json's schema for that status (jsonschema), so a shape that
drifts from the document fails here too.

Usage: serve_e2e.py BASE_URL OPENAPI_JSON [SUB [IDP_BASE_URL]]: IDP_BASE_URL is a serve in dev mode
whose dev identity provider mints the ID tokens, for a BASE_URL in configured mode (which has no
dev routes; default: BASE_URL itself). Prints {"ok": true, "steps": [...]} or
{"ok": false, "error": "...", "steps": [...]} and exits 0 either way (the Swift test reads the
verdict); a crash is an exit 1."""
import json
import sys
import urllib.error
import urllib.request

import jsonschema


class Failure(Exception):
    pass


class Client:
    """One HTTP client on one base URL; each call checks status and schema."""

    def __init__(self, base, document, idp=None):
        self.base = base.rstrip("/")
        self.idp = (idp or base).rstrip("/")
        self.document = document
        self.steps = []

    def call(self, method, path, body=None, token=None, expect=200, record=True):
        headers = {"accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["content-type"] = "application/json"
        if token is not None:
            headers["authorization"] = "Bearer " + token
        request = urllib.request.Request(self.base + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=20) as response:
                status, raw, content_type = response.status, response.read(), response.headers.get("content-type", "")
        except urllib.error.HTTPError as error:
            status, raw, content_type = error.code, error.read(), error.headers.get("content-type", "")
        text = raw.decode("utf-8", "replace")
        if status != expect:
            raise Failure(f"{method} {path}: {status}, expected {expect}: {text[:300]}")
        if not content_type.startswith("application/json"):
            raise Failure(f"{method} {path}: content type {content_type!r}")
        answer = json.loads(text)
        self.check_shape(method, path, status, answer)
        if record:
            self.steps.append(f"{method} {path} {status}")
        return answer

    def check_shape(self, method, path, status, answer):
        """Validates against the document's schema for this operation and status (the dev IdP's
        route is not in the document: `id_token` checks its answer)."""
        operation = self.document["paths"].get(path, {}).get(method.lower())
        if operation is None:
            raise Failure(f"{method} {path}: not in the document")
        response = operation["responses"].get(str(status))
        if response is None:
            raise Failure(f"{method} {path}: status {status} is not in the document")
        if "$ref" in response:
            response = resolve(self.document, response["$ref"])
        schema = response["content"]["application/json"]["schema"]
        root = dict(schema, components=self.document["components"])
        try:
            jsonschema.Draft202012Validator(root).validate(answer)
        except jsonschema.ValidationError as error:
            raise Failure(f"{method} {path} {status}: {error.message} in {json.dumps(answer)[:300]}")

    def id_token(self, provider, sub, email):
        request = urllib.request.Request(self.idp + f"/dev/idp/{provider}/token", method="POST",
                                         data=json.dumps({"sub": sub, "email": email}).encode())
        with urllib.request.urlopen(request, timeout=30) as response:
            answer = json.load(response)
        if not isinstance(answer.get("idToken"), str):
            raise Failure(f"the dev identity provider answered {answer}")
        return answer["idToken"]


def resolve(document, reference):
    node = document
    for part in reference.lstrip("#/").split("/"):
        node = node[part]
    return node


def expect(condition, message):
    if not condition:
        raise Failure(message)


def journey(client, sub):
    email = f"{sub}@example.com"
    google = client.id_token("google", sub, email)
    first = client.call("POST", "/auth/signin", {"provider": "google", "idToken": google, "device": {"name": "e2e phone"}})
    expect(first["isNewUser"] is True, "a new subject is a new user")
    user_id = first["user"]["id"]
    old_refresh = first["tokens"]["refreshToken"]

    refreshed = client.call("POST", "/auth/refresh", {"refreshToken": old_refresh})
    expect(refreshed["user"]["id"] == user_id and refreshed["session"]["id"] == first["session"]["id"], "refresh keeps user and session")
    expect(refreshed["tokens"]["refreshToken"] != old_refresh, "the refresh token rotates")
    access = refreshed["tokens"]["accessToken"]

    apple = client.id_token("apple", "001." + sub, email)
    linked = client.call("POST", "/auth/link", {"provider": "apple", "idToken": apple}, token=access)
    providers = sorted(identity["provider"] for identity in linked["user"]["identities"])
    expect(providers == ["apple", "google"], f"identities after the link: {providers}")

    # A second device: the Apple identity now signs in to the same user.
    second = client.call("POST", "/auth/signin", {"provider": "apple", "idToken": client.id_token("apple", "001." + sub, email)})
    expect(second["isNewUser"] is False and second["user"]["id"] == user_id, "Apple signs in to the linked user")

    listed = client.call("GET", "/auth/sessions", token=access)["sessions"]
    expect(len(listed) == 2, f"two sessions: {listed}")
    current = [session["id"] for session in listed if session["current"]]
    expect(current == [first["session"]["id"]], f"the caller's session is current: {listed}")

    signed_out = client.call("POST", "/auth/signout", {"refreshToken": refreshed["tokens"]["refreshToken"]})
    expect(signed_out == {"revokedSessions": 1}, f"signout: {signed_out}")
    client.call("POST", "/auth/refresh", {"refreshToken": refreshed["tokens"]["refreshToken"]}, expect=401)
    remaining = client.call("GET", "/auth/sessions", token=second["tokens"]["accessToken"])["sessions"]
    expect([session["id"] for session in remaining] == [second["session"]["id"]], f"one session left: {remaining}")

    # Deletion asks for a fresh proof of identity (a new ID token), as an app would prompt for.
    deleted = client.call("POST", "/auth/delete-account", {"provider": "google", "idToken": client.id_token("google", sub, email)},
                          token=second["tokens"]["accessToken"])
    expect(deleted == {"deleted": True, "userId": user_id}, f"delete: {deleted}")
    client.call("POST", "/auth/refresh", {"refreshToken": second["tokens"]["refreshToken"]}, expect=401)
    again = client.call("POST", "/auth/signin", {"provider": "google", "idToken": client.id_token("google", sub, email)})
    expect(again["isNewUser"] is True and again["user"]["id"] != user_id, "after deletion the subject is a new user")


def main():
    base, document_path = sys.argv[1], sys.argv[2]
    sub = sys.argv[3] if len(sys.argv) > 3 else "e2e-user"
    with open(document_path) as file:
        document = json.load(file)
    client = Client(base, document, sys.argv[4] if len(sys.argv) > 4 else None)
    try:
        journey(client, sub)
        print(json.dumps({"ok": True, "steps": client.steps}))
    except (Failure, KeyError, TypeError, urllib.error.URLError) as error:
        print(json.dumps({"ok": False, "error": f"{type(error).__name__}: {error}", "steps": client.steps}))


if __name__ == "__main__":
    main()
