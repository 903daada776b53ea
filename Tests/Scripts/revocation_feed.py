#!/usr/bin/env python3
"""The revocation list as a reader nobody here wrote sees it: PyJWT fetches the issuer's JWKS
through PyJWKClient and verifies `/.well-known/revocations` with it, as any resource server in
another language would (contract section 20).

Usage: revocation_feed.py BASE_URL ISSUER
Prints one JSON object: {"contentType", "cacheControl", "typ", "kid", "iss", "iat", "exp", "sids", "subs"}
or {"error": "<PyJWT's exception name>: <message>"}.
"""
import json
import sys
import urllib.request

import jwt


def main():
    base, issuer = sys.argv[1], sys.argv[2]
    with urllib.request.urlopen(base + "/.well-known/revocations", timeout=30) as answer:
        document = answer.read().decode("ascii")
        content_type = answer.headers.get("content-type")
        cache_control = answer.headers.get("cache-control")
    try:
        header = jwt.get_unverified_header(document)
        key = jwt.PyJWKClient(base + "/.well-known/jwks.json").get_signing_key_from_jwt(document)
        claims = jwt.decode(document, key.key, algorithms=["RS256", "ES256"], issuer=issuer,
                            options={"require": ["iss", "iat", "exp"], "verify_aud": False})
    except Exception as error:  # noqa: BLE001 (the verdict is the exception's name)
        print(json.dumps({"error": f"{type(error).__name__}: {error}"}))
        return
    print(json.dumps({"contentType": content_type, "cacheControl": cache_control, "typ": header.get("typ"),
                      "kid": header.get("kid"), "iss": claims["iss"], "iat": claims["iat"], "exp": claims["exp"],
                      "sids": claims.get("sids"), "subs": claims.get("subs")}))


if __name__ == "__main__":
    main()
