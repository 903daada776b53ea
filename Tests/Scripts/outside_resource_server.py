#!/usr/bin/env python3
"""The promise of contract section 20 as an app's service sees it, from outside this package:
`authctl serve --authorizer lambda` on the dev defaults, and Tests/Packages/resource-server (a
package of its own that links LambdaAuthVerifier with the revocation feed, as an app's service
would). Sessions sign in; their tokens pass both; each kind of revocation (signout, revoke,
eviction, reuse, deletion); 5 s after the last one answered both refuse every revoked session's
token and still accept the bystander's. The calls before were accepted with at most one feed
fetch per 5 s.

Usage: outside_resource_server.py AUTHCTL RESOURCE_SERVER
Prints one JSON object {"problems": [...], ...}; exits 1 when there is a problem.
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request


def main():
    authctl, resource_server = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    directory = tempfile.mkdtemp(prefix="outside-resource-server-")
    environment = {name: value for name, value in os.environ.items() if not name.startswith("AUTH_")}
    environment.update({"AUTH_MAX_SESSIONS": "2", "AUTH_REFRESH_GRACE": "0"})
    serve = subprocess.Popen([authctl, "serve", "--port", "0", "--authorizer", "lambda", "--dev-dir", directory + "/dev"],
                             cwd=directory, env=environment, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    problems = []
    try:
        line = serve.stdout.readline()
        base = line.split("serving on ", 1)[1].split()[0]

        def call(method, path, body=None, bearer=None):
            headers = {"content-type": "application/json"}
            if bearer:
                headers["authorization"] = "Bearer " + bearer
            data = json.dumps(body).encode() if body is not None else None
            request = urllib.request.Request(base + path, data=data, method=method, headers=headers)
            try:
                with urllib.request.urlopen(request, timeout=30) as answer:
                    return answer.status, json.loads(answer.read() or b"null")
            except urllib.error.HTTPError as error:
                return error.code, json.loads(error.read() or b"null")

        def sign_in(sub):
            _, token = call("POST", "/dev/idp/google/token", {"sub": sub})
            status, body = call("POST", "/auth/signin", {"provider": "google", "idToken": token["idToken"]})
            assert status == 200, body
            return {"access": body["tokens"]["accessToken"], "refresh": body["tokens"]["refreshToken"],
                    "sid": body["session"]["id"], "sub": body["user"]["id"]}

        verifier = subprocess.Popen([resource_server, base, "lambda-auth"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

        def verify(token):
            verifier.stdin.write(token + "\n")
            verifier.stdin.flush()
            return verifier.stdout.readline().strip()

        victims = {"signout": sign_in("signout"), "revoke": sign_in("revoke"), "eviction": sign_in("evict"),
                   "reuse": sign_in("reuse"), "deletion": sign_in("delete")}
        revoker = sign_in("revoke")
        bystander = sign_in("bystander")
        started = time.time()
        for _ in range(3):
            for kind, session in victims.items():
                status, body = call("GET", "/example/whoami", bearer=session["access"])
                if status != 200 or body.get("sessionId") != session["sid"]:
                    problems.append(f"{kind} before: whoami answered {status} {body}")
                verdict = verify(session["access"])
                if verdict != f"ok {session['sub']} {session['sid']}":
                    problems.append(f"{kind} before: the resource server answered {verdict}")
        fetches = int(verify("fetches").split()[1])
        if fetches > int((time.time() - started) / 5) + 1:
            problems.append(f"{fetches} feed fetches for 15 verifications in {time.time() - started:.1f} s")

        call("POST", "/auth/signout", {"refreshToken": victims["signout"]["refresh"]})
        call("DELETE", "/auth/sessions", {"sessionId": victims["revoke"]["sid"]}, bearer=revoker["access"])
        sign_in("evict")
        sign_in("evict")
        call("POST", "/auth/refresh", {"refreshToken": victims["reuse"]["refresh"]})
        status, body = call("POST", "/auth/refresh", {"refreshToken": victims["reuse"]["refresh"]})
        if (body or {}).get("error", {}).get("code") != "REFRESH_TOKEN_REUSED":
            problems.append(f"reuse was not detected: {status} {body}")
        status, body = call("DELETE", "/auth/account", bearer=victims["deletion"]["access"])
        if status != 200:
            problems.append(f"deletion answered {status} {body}")
        answered = time.time()
        time.sleep(max(0.0, answered + 5 - time.time()))

        after = {}
        for kind, session in victims.items():
            status, _ = call("GET", "/example/whoami", bearer=session["access"])
            verdict = verify(session["access"])
            after[kind] = {"authorizer": status, "verifier": verdict}
            if status != 403:
                problems.append(f"{kind} 5 s after: the authorizer answered {status}")
            if verdict != "ACCESS_TOKEN_REVOKED":
                problems.append(f"{kind} 5 s after: the resource server answered {verdict}")
        status, _ = call("GET", "/example/whoami", bearer=bystander["access"])
        verdict = verify(bystander["access"])
        if status != 200 or not verdict.startswith("ok "):
            problems.append(f"the bystander was refused: {status} {verdict}")
        verifier.stdin.close()
        verifier.wait(timeout=10)
        print(json.dumps({"problems": problems, "after": after, "fetchesBefore": fetches}))
    finally:
        serve.terminate()
        serve.wait(timeout=30)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
