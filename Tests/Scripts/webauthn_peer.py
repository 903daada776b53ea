#!/usr/bin/env python3
"""A WebAuthn authenticator nobody here wrote, for the passkey tests: soft-webauthn (on fido2 1.x).

    webauthn_peer.py STATE create ORIGIN   < {"publicKey": CreationOptionsJSON}  > RegistrationResponseJSON
    webauthn_peer.py STATE get ORIGIN      < {"publicKey": RequestOptionsJSON}   > AuthenticationResponseJSON

The device (its credential, private key and count) is kept in the JSON file STATE between calls,
so one process registers and later ones sign in. Options come in the JSON form our `passkey`
handler writes (binary fields base64url); soft-webauthn takes bytes and gives bytes, which are
written back as base64url, except `id`, which soft-webauthn pads: passed on padded, as Dashlane does.
Runs in the virtual environment Tests/Scripts/prerequisites.sh makes (.build/webauthn-peers).
"""
import base64
import json
import sys

from cryptography.hazmat.primitives import serialization
from soft_webauthn import SoftWebauthnDevice


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def b64url(data):
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def load(path):
    device = SoftWebauthnDevice()
    try:
        with open(path) as file:
            state = json.load(file)
    except FileNotFoundError:
        return device
    device.credential_id = b64url_decode(state["credentialId"])
    device.private_key = serialization.load_pem_private_key(state["privateKey"].encode(), password=None)
    device.rp_id = state["rpId"]
    device.user_handle = b64url_decode(state["userHandle"])
    device.sign_count = state["signCount"]
    return device


def save(path, device):
    pem = device.private_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()).decode()
    with open(path, "w") as file:
        json.dump({"credentialId": b64url(device.credential_id), "privateKey": pem, "rpId": device.rp_id,
                   "userHandle": b64url(device.user_handle), "signCount": device.sign_count}, file)


def main():
    path, action, origin = sys.argv[1:4]
    options = json.load(sys.stdin)["publicKey"]
    options["challenge"] = b64url_decode(options["challenge"])
    device = load(path)
    if action == "create":
        options["user"]["id"] = b64url_decode(options["user"]["id"])
        response = device.create({"publicKey": options}, origin)
        fields = ("clientDataJSON", "attestationObject")
    else:
        response = device.get({"publicKey": options}, origin)
        fields = ("clientDataJSON", "authenticatorData", "signature", "userHandle")
    save(path, device)
    out = {"id": response["id"].decode("ascii"), "rawId": b64url(response["rawId"]), "type": response["type"],
           "response": {name: b64url(response["response"][name]) for name in fields}, "clientExtensionResults": {}}
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
