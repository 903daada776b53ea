#!/usr/bin/env python3
"""An attestation certificate for packed x5c tests, made by the `cryptography` package.

    attestation_certificate.py [VARIANT...]  > {"certificate": DER base64url, "privateKey": PKCS#8 DER base64url}

A self-signed P-256 leaf with what WebAuthn Level 3 §8.2.1 asks of a packed attestation
certificate (version 3; subject C, O, OU "Authenticator Attestation", CN; not a CA), so that a
relying party that checks those (python-fido2 does) accepts it. Variants, each breaking or adding
one thing: `bare` (the subject is the CN alone), `ou=TEXT` (another OU), `ca` (Basic Constraints
CA true), `no-constraints` (no Basic Constraints), `aaguid=HEX` (the id-fido-gen-ce-aaguid
extension holding those 16 bytes), `aaguid-critical=HEX` (the same, marked critical), and
`key=rsa` or `key=ed25519` for a leaf of that kind instead of P-256 (an Ed25519 key is also given
raw, as "privateKeyRaw").
"""
import base64
import datetime
import json
import sys

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import NameOID


def b64url(data):
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


variants = dict((argument.split("=", 1) + [""])[:2] for argument in sys.argv[1:])
kind = variants.get("key", "p256")
key = {"p256": lambda: ec.generate_private_key(ec.SECP256R1()), "rsa": lambda: rsa.generate_private_key(65537, 2048),
       "ed25519": ed25519.Ed25519PrivateKey.generate}[kind]()
unit = variants.get("ou", "Authenticator Attestation")
name = x509.Name(([] if "bare" in variants else [x509.NameAttribute(NameOID.COUNTRY_NAME, "SE"),
                                                 x509.NameAttribute(NameOID.ORGANIZATION_NAME, "lambda-auth tests"),
                                                 x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, unit)])
                 + [x509.NameAttribute(NameOID.COMMON_NAME, "test authenticator")])
now = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
builder = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
           .serial_number(x509.random_serial_number()).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=3650)))
if "no-constraints" not in variants:
    builder = builder.add_extension(x509.BasicConstraints(ca="ca" in variants, path_length=None), critical=True)
for option, critical in (("aaguid", False), ("aaguid-critical", True)):
    if option in variants:
        # id-fido-gen-ce-aaguid: an OCTET STRING holding the 16 bytes, DER-encoded as the extension's value.
        value = b"\x04\x10" + bytes.fromhex(variants[option])
        builder = builder.add_extension(x509.UnrecognizedExtension(x509.ObjectIdentifier("1.3.6.1.4.1.45724.1.1.4"), value), critical=critical)
certificate = builder.sign(key, None if kind == "ed25519" else hashes.SHA256())
made = {"certificate": b64url(certificate.public_bytes(serialization.Encoding.DER)),
        "privateKey": b64url(key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()))}
if kind == "ed25519":
    made["privateKeyRaw"] = b64url(key.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                                                     serialization.NoEncryption()))
json.dump(made, sys.stdout)
