#!/usr/bin/env python3
"""The app's side of hooks for HookTests (contract section 19), on 127.0.0.1: a URL hook whose
requests the `standardwebhooks` package verifies, and a Lambda Invoke API whose requests
botocore's SigV4 signer checks; neither verifier was written here. It also reads access tokens
with PyJWT, as a resource server would, to show that a hook's claims reach one.

Usage: hook_peer.py WHSEC_SECRET AWS_ACCESS_KEY AWS_SECRET_KEY REGION
Commands, one JSON object per line on stdin, each answered with one JSON line on stdout:
  {"op": "port"}                                 -> {"port": N}
  {"op": "answer", "hook": TYPE, "status": 200, "body": <JSON> | "raw": TEXT, "delayMs": 0,
   "functionError": "Unhandled"?}                -> {"ok": true}   (TYPE's next answers, both kinds)
  {"op": "requests"}                             -> {"requests": [...]} (and forgets them)
  {"op": "decode", "jwks": {...}, "audience": A, "tokens": [...]} -> {"claims": [{...}, ...]}
Each request recorded: {"kind": "url" | "lambda", "hook": TYPE, "function"?, "verified": bool,
"problem": str | null, "payload": {...} | null, "invocationType"?}. Exits at the end of stdin.
"""
import datetime
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from unittest import mock

import jwt
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

SECRET, ACCESS_KEY, SECRET_KEY, REGION = sys.argv[1:5]
LAMBDA_PATH = re.compile(r"^/2015-03-31/functions/([^/]+)/invocations$")
lock = threading.Lock()
answers = {}
recorded = []


def verify_sigv4(handler, body):
    """Signs the request again with botocore over the headers we signed; the two must agree."""
    authorization = handler.headers.get("Authorization", "")
    match = re.search(r"SignedHeaders=([^,]+), Signature=([0-9a-f]+)", authorization)
    if not match:
        return "no SigV4 Authorization header"
    signed = match.group(1).split(";")
    request = AWSRequest(method=handler.command, url=f"http://{handler.headers['Host']}{handler.path}", data=body)
    for name in signed:
        if name != "x-amz-date":
            request.headers[name] = handler.headers.get(name, "")
    instant = datetime.datetime.strptime(handler.headers.get("X-Amz-Date", ""), "%Y%m%dT%H%M%SZ")
    with mock.patch("botocore.auth.get_current_datetime", return_value=instant):
        SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY, None), "lambda", REGION).add_auth(request)
    if request.headers["Authorization"] != authorization:
        return f"botocore signs {request.headers['Authorization']!r}, the request carried {authorization!r}"
    return None


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *arguments):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        entry = {"problem": None}
        lambda_match = LAMBDA_PATH.match(self.path)
        if lambda_match:
            entry["kind"] = "lambda"
            entry["function"] = lambda_match.group(1)
            entry["invocationType"] = self.headers.get("X-Amz-Invocation-Type")
            entry["problem"] = verify_sigv4(self, body)
        elif self.path.startswith("/hook"):
            entry["kind"] = "url"
            try:
                Webhook(SECRET).verify(body, {name: value for name, value in self.headers.items()})
            except WebhookVerificationError as error:
                entry["problem"] = f"standardwebhooks: {error}"
            entry["webhookId"] = self.headers.get("webhook-id")
        else:
            self.send_error(404)
            return
        entry["verified"] = entry["problem"] is None
        try:
            entry["payload"] = json.loads(body)
        except ValueError:
            entry["payload"] = None
        hook = (entry["payload"] or {}).get("type", "")
        entry["hook"] = hook
        with lock:
            recorded.append(entry)
            answer = answers.get(hook, {"status": 200, "body": {"decision": "allow"} if hook != "accessTokenClaims" else {"claims": {}}})
        time.sleep(answer.get("delayMs", 0) / 1000)
        payload = answer["raw"].encode() if "raw" in answer else json.dumps(answer.get("body")).encode()
        try:
            self.send_response(answer.get("status", 200))
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            if answer.get("location"):
                self.send_header("Location", answer["location"])
            if answer.get("functionError") and entry["kind"] == "lambda":
                self.send_header("X-Amz-Function-Error", answer["functionError"])
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the caller gave up (a timeout under test)


def decode(command):
    keys = {key["kid"]: jwt.PyJWK(key) for key in command["jwks"]["keys"]}
    claims = []
    for token in command["tokens"]:
        kid = jwt.get_unverified_header(token)["kid"]
        key = keys[kid]
        # exp is not checked: the handlers run on a fixed clock in the past; signature, aud are.
        claims.append(jwt.decode(token, key.key, algorithms=[key.algorithm_name], audience=command["audience"],
                                 options={"verify_exp": False, "verify_iat": False}))
    return {"claims": claims}


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    for line in sys.stdin:
        command = json.loads(line)
        if command["op"] == "port":
            reply = {"port": server.server_address[1]}
        elif command["op"] == "answer":
            with lock:
                answers[command["hook"]] = command
            reply = {"ok": True}
        elif command["op"] == "requests":
            with lock:
                reply = {"requests": list(recorded)}
                recorded.clear()
        elif command["op"] == "decode":
            try:
                reply = decode(command)
            except Exception as error:  # reported to the test, which fails on it
                reply = {"error": f"{type(error).__name__}: {error}"}
        else:
            reply = {"error": f"unknown op {command['op']!r}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
    server.shutdown()


if __name__ == "__main__":
    main()
