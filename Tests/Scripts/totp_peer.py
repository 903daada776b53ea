#!/usr/bin/env python3
"""A real authenticator's algorithm for the MFA tests: pyotp reads the `uri` our totp-enroll
answered (its Key Uri Format parser, `pyotp.parse_uri`) and makes the codes of the given Unix
times. Prints {"issuer", "name", "secret", "digits", "interval", "algorithm", "codes": [...]};
exits 1 when the uri is not a TOTP uri pyotp reads as SHA1, 6 digits, 30 s."""
import json
import sys

import pyotp


def main():
    uri, times = sys.argv[1], [int(t) for t in sys.argv[2:]]
    otp = pyotp.parse_uri(uri)
    if not isinstance(otp, pyotp.TOTP):
        sys.exit(f"not a TOTP uri: {uri}")
    algorithm = otp.digest().name
    if (otp.digits, otp.interval, algorithm) != (6, 30, "sha1"):
        sys.exit(f"unexpected parameters: digits {otp.digits}, interval {otp.interval}, algorithm {algorithm}")
    print(json.dumps({"issuer": otp.issuer, "name": otp.name, "secret": otp.secret, "digits": otp.digits,
                      "interval": otp.interval, "algorithm": algorithm, "codes": [otp.at(t) for t in times]}))


if __name__ == "__main__":
    main()
