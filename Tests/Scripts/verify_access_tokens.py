#!/usr/bin/env python3
"""An independent resource server for AccessTokenPeerTests: fetches our JWKS the way API Gateway
would deliver the request (an HTTP API event run through the `well-known` executable), then
verifies access tokens with joserfc (on `cryptography`), RS256 or ES256, checking iss, aud and exp.

Usage: verify_access_tokens.py WELL_KNOWN_EXECUTABLE INPUT.json
INPUT: {"issuer": "...", "audience": "...", "now": 1700000000, "tokens": ["...", ...]}
The executable runs with this process's environment (its signing keys and store).
Prints one JSON object: {"jwks": {...}, "headers": {...}, "results": [{"valid": true, "sub": "..."} |
{"valid": false, "error": "..."}]}; exits non-zero only when the JWKS cannot be fetched.
"""
import json
import subprocess
import sys

from joserfc import jwt
from joserfc.jwk import KeySet

from well_known_events import http_api_event


def fetch(executable, path):
    completed = subprocess.run([executable], input=json.dumps(http_api_event(path, "joserfc-peer")).encode(),
                               capture_output=True, timeout=60)
    if completed.returncode != 0:
        sys.exit(f"{executable} exited {completed.returncode}: {completed.stderr.decode()[-2000:]}")
    response = json.loads(completed.stdout)
    if response.get("statusCode") != 200:
        sys.exit(f"GET {path} answered {response.get('statusCode')}: {response.get('body')}")
    return json.loads(response["body"]), response.get("headers", {})


def main():
    executable, input_path = sys.argv[1], sys.argv[2]
    with open(input_path) as handle:
        request = json.load(handle)
    discovery, _ = fetch(executable, "/.well-known/openid-configuration")
    if discovery.get("issuer") != request["issuer"]:
        sys.exit(f"the discovery document names issuer {discovery.get('issuer')!r}, not {request['issuer']!r}")
    jwks, headers = fetch(executable, "/.well-known/jwks.json")
    key_set = KeySet.import_key_set(jwks)
    registry = jwt.JWTClaimsRegistry(
        now=request["now"],
        iss={"essential": True, "value": request["issuer"]},
        aud={"essential": True, "value": request["audience"]},
        exp={"essential": True},
        sub={"essential": True},
    )
    results = []
    for token in request["tokens"]:
        try:
            decoded = jwt.decode(token, key_set, algorithms=["RS256", "ES256"])
            registry.validate(decoded.claims)
            results.append({"valid": True, "sub": decoded.claims["sub"], "kid": decoded.header.get("kid")})
        except Exception as error:  # noqa: BLE001: any failure is a refusal, reported by name
            results.append({"valid": False, "error": type(error).__name__})
    print(json.dumps({"discovery": discovery, "jwks": jwks, "headers": headers, "results": results}))


if __name__ == "__main__":
    main()
