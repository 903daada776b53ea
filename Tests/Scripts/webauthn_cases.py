"""What the WebAuthn peer scripts (webauthn_check.py: python-fido2; pywebauthn_check.py: py_webauthn) share:
the case list on stdin, one verdict per case on stdout ("accept" or "refuse: <type>: <reason>")."""
import base64
import json
import sys


def b64(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def decide(check):
    """Runs `check(case)` on every case of stdin: a case it returns from is accepted, one it raises on refused."""
    verdicts = []
    for case in json.load(sys.stdin):
        try:
            check(case)
            verdicts.append("accept")
        except Exception as error:  # every refusal of the peer, whatever its type, is a refusal
            verdicts.append(f"refuse: {type(error).__name__}: {error}")
    json.dump(verdicts, sys.stdout)
