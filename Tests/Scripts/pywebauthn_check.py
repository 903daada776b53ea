#!/usr/bin/env python3
"""Duo Labs' py_webauthn (`webauthn` on PyPI, 3.x) as a relying party nobody here wrote: which WebAuthn
ceremonies it accepts. A second peer beside webauthn_check.py (python-fido2), with the same cases.

    pywebauthn_check.py < [case, ...]  > ["accept" | "refuse: <reason>", ...]

A case is {"kind": "registration" | "assertion", "rpId", "origin", "challenge" (base64url),
"userVerification": "required" | "preferred", "credential": RegistrationResponseJSON or
AuthenticationResponseJSON}, and for an assertion "publicKey" (the stored COSE key, base64url) and
"storedSignCount". Registrations go through webauthn.verify_registration_response (attestation
none, packed and the rest of its formats; no root certificates are given, so a packed x5c is checked
by its leaf's signature only, as ours is); assertions through webauthn.verify_authentication_response
with the stored key and count. py_webauthn applies WebAuthn Level 3 §7.2 step 22 itself: a count not
above the stored one is refused unless both are zero.
Runs in the virtual environment Tests/Scripts/prerequisites.sh makes (.build/py-webauthn-peer):
py_webauthn needs a newer `cryptography` than soft-webauthn's fido2 1.x allows.
"""
from webauthn import verify_authentication_response, verify_registration_response

from webauthn_cases import b64, decide


def check(case):
    common = {"credential": case["credential"], "expected_challenge": b64(case["challenge"]),
              "expected_rp_id": case["rpId"], "expected_origin": case["origin"],
              "require_user_verification": case["userVerification"] == "required"}
    if case["kind"] == "registration":
        verify_registration_response(**common)
    else:
        verify_authentication_response(**common, credential_public_key=b64(case["publicKey"]),
                                       credential_current_sign_count=case["storedSignCount"])


if __name__ == "__main__":
    decide(check)
