#!/usr/bin/env python3
"""Two checks of our access tokens that nobody here wrote the rules of, run against the JWKS that
the `well-known` executable serves over loopback HTTP (each request becomes an HTTP API event for
that executable, as API Gateway would deliver it):

- "authorizer": API Gateway's HTTP API JWT authorizer, step by step as AWS documents it
  (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-jwt-authorizer.html):
  the discovery document at the issuer names `jwks_uri`; the token's `kid` must name a key there;
  only RSA-based algorithms verify; `iss` must equal the issuer; `aud` must name an audience (or,
  when there is no `aud`, `client_id` must); `exp` after now; `nbf` and `iat` before now.
- "pyjwt": PyJWT's PyJWKClient fetching the JWKS, then jwt.decode with RS256 and ES256 allowed,
  `iss`, `aud`, `exp`, `iat` and `nbf` checked.

Usage: jwt_authorizer.py WELL_KNOWN_EXECUTABLE INPUT.json
INPUT: {"issuer", "audiences": [...], "now": epoch seconds, "tokens": ["...", ...]}
The executable runs with this process's environment. Prints one JSON object:
{"jwksURI": "...", "results": [{"authorizer": "ok" | reason, "pyjwt": "ok" | reason}, ...]}
"""
import base64
import json
import subprocess
import sys
import threading
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from well_known_events import http_api_event

RSA_ALGORITHMS = {"RS256": hashes.SHA256(), "RS384": hashes.SHA384(), "RS512": hashes.SHA512()}


def serve_well_known(executable):
    """A loopback server whose every GET runs `executable` once and answers what it answered."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (the http.server spelling)
            completed = subprocess.run([executable], input=json.dumps(http_api_event(self.path, "jwt-authorizer-peer")).encode(),
                                       capture_output=True, timeout=60)
            response = json.loads(completed.stdout)
            body = response.get("body", "").encode()
            self.send_response(response.get("statusCode", 502))
            for name, value in response.get("headers", {}).items():
                self.send_header(name, value)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *arguments):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def b64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def authorizer(token, issuer, audiences, now, jwks):
    """'ok', or the documented rule the token breaks."""
    try:
        header_part, payload_part, signature_part = token.split(".")
        header, claims = json.loads(b64url(header_part)), json.loads(b64url(payload_part))
    except Exception:  # noqa: BLE001
        return "not a JWT"
    algorithm = header.get("alg")
    if algorithm not in RSA_ALGORITHMS:
        return f"alg {algorithm} is not RSA-based"
    keys = [key for key in jwks.get("keys", []) if key.get("kid") == header.get("kid")]
    if not header.get("kid") or not keys or keys[0].get("kty") != "RSA":
        return "kid names no RSA key of jwks_uri"
    numbers = rsa.RSAPublicNumbers(int.from_bytes(b64url(keys[0]["e"]), "big"), int.from_bytes(b64url(keys[0]["n"]), "big"))
    try:
        numbers.public_key().verify(b64url(signature_part), f"{header_part}.{payload_part}".encode(),
                                    padding.PKCS1v15(), RSA_ALGORITHMS[algorithm])
    except Exception:  # noqa: BLE001
        return "signature does not verify"
    if claims.get("iss") != issuer:
        return "iss is not the issuer"
    if "aud" in claims:
        named = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
        if not any(audience in audiences for audience in named):
            return "aud names no audience"
    elif claims.get("client_id") not in audiences:
        return "no aud, and client_id names no audience"
    if not isinstance(claims.get("exp"), (int, float)) or not claims["exp"] > now:
        return "exp is not after now"
    for claim in ("nbf", "iat"):
        if claim in claims and not (isinstance(claims[claim], (int, float)) and claims[claim] <= now):
            return f"{claim} is not before now"
    return "ok"


def pyjwt(token, issuer, audiences, now, client):
    class FixedClock(datetime):
        @classmethod
        def now(cls, tz=None):
            return datetime.fromtimestamp(now, tz=timezone.utc)

    original = jwt.api_jwt.datetime
    jwt.api_jwt.datetime = FixedClock
    try:
        key = client.get_signing_key_from_jwt(token)
        jwt.decode(token, key.key, algorithms=["RS256", "ES256"], issuer=issuer, audience=audiences,
                   options={"require": ["exp", "iat", "iss", "aud", "sub"]})
        return "ok"
    except Exception as error:  # noqa: BLE001: any failure is a refusal, reported by name
        return type(error).__name__
    finally:
        jwt.api_jwt.datetime = original


def main():
    executable, input_path = sys.argv[1], sys.argv[2]
    with open(input_path) as handle:
        request = json.load(handle)
    issuer, audiences, now = request["issuer"], request["audiences"], request["now"]
    server = serve_well_known(executable)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        # API Gateway reads jwks_uri from the issuer's discovery document; the issuer's host is
        # this loopback server here.
        with jwt.jwks_client.urllib.request.urlopen(base + "/.well-known/openid-configuration", timeout=30) as answer:
            discovery = json.load(answer)
        if discovery.get("issuer") != issuer or not discovery.get("jwks_uri", "").startswith(issuer):
            sys.exit(f"the discovery document does not match the issuer {issuer}: {discovery}")
        jwks_url = base + discovery["jwks_uri"][len(issuer.rstrip("/")):]
        with jwt.jwks_client.urllib.request.urlopen(jwks_url, timeout=30) as answer:
            jwks = json.load(answer)
        client = jwt.PyJWKClient(jwks_url, cache_keys=False, cache_jwk_set=False)
        results = [{"authorizer": authorizer(token, issuer, audiences, now, jwks),
                    "pyjwt": pyjwt(token, issuer, audiences, now, client)} for token in request["tokens"]]
        print(json.dumps({"jwksURI": discovery["jwks_uri"], "algorithms": discovery.get("id_token_signing_alg_values_supported"),
                          "results": results}))
    finally:
        server.shutdown()


if __name__ == "__main__":
    main()
