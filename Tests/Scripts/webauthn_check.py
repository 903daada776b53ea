#!/usr/bin/env python3
"""Yubico's python-fido2 (1.x) as a relying party nobody here wrote: which WebAuthn ceremonies it accepts.

    webauthn_check.py < [case, ...]  > ["accept" | "refuse: <reason>", ...]

A case is {"kind": "registration" | "assertion", "rpId", "origin", "challenge" (base64url),
"userVerification": "required" | "preferred", "credential": RegistrationResponseJSON or
AuthenticationResponseJSON}, and for an assertion "publicKey" (the stored COSE key, base64url) and
"storedSignCount". Registrations go through Fido2Server.register_complete and the attestation
statement's own verifier (none, packed); assertions through Fido2Server.authenticate_complete.
python-fido2 leaves the sign count to its caller, so this script applies WebAuthn Level 3 §7.2
step 22 itself: a count not above the stored one is refused unless both are zero.
Runs in the virtual environment Tests/Scripts/prerequisites.sh makes (.build/webauthn-peers).
"""
import base64

from fido2 import cbor
from fido2.attestation import Attestation
from fido2.cose import CoseKey
from fido2.server import Fido2Server
from fido2.webauthn import (AttestationObject, AttestedCredentialData, AuthenticatorData, CollectedClientData,
                            UserVerificationRequirement)

from webauthn_cases import b64, decide


def check(case):
    origin = case["origin"]
    server = Fido2Server({"id": case["rpId"], "name": "peer"}, attestation="direct", verify_origin=lambda o: o == origin,
                         verify_attestation=lambda obj, client_data_hash: Attestation.for_type(obj.fmt)().verify(
                             obj.att_stmt, obj.auth_data, client_data_hash))
    state = {"challenge": base64.urlsafe_b64encode(b64(case["challenge"])).decode().rstrip("="),
             "user_verification": UserVerificationRequirement(case["userVerification"])}
    response = case["credential"]["response"]
    client_data = CollectedClientData(b64(response["clientDataJSON"]))
    if case["kind"] == "registration":
        server.register_complete(state, client_data, AttestationObject(b64(response["attestationObject"])))
        return
    key = CoseKey.parse(cbor.decode(b64(case["publicKey"])))
    credential_id = b64(case["credential"]["rawId"])
    stored = AttestedCredentialData.create(b"\0" * 16, credential_id, key)
    auth_data = AuthenticatorData(b64(response["authenticatorData"]))
    server.authenticate_complete(state, [stored], credential_id, client_data, auth_data, b64(response["signature"]))
    if (auth_data.counter != 0 or case["storedSignCount"] != 0) and auth_data.counter <= case["storedSignCount"]:
        raise ValueError(f"sign count {auth_data.counter} not above {case['storedSignCount']}")


if __name__ == "__main__":
    decide(check)
