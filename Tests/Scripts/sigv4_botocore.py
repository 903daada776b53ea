#!/usr/bin/env python3
"""Signs the requests described in a JSON file with botocore, the independent SigV4 implementation
that SigV4Tests compares ours with, and prints one JSON array of the resulting headers.

Input: [{"method", "url" (path percent-encoded, no query), "query": [[name, value], ...] (decoded)
or "rawQuery" (already encoded, appended to the url), "headers": [[name, value], ...], "body"
(UTF-8 text), "accessKey", "secretKey", "sessionToken" (or null), "region", "service",
"amzDate" ("20260101T000000Z")}, ...]

Output: [{"authorization", "x-amz-date", "x-amz-security-token", "x-amz-content-sha256"}, ...]
"""
import datetime
import json
import sys
from unittest import mock

from botocore.auth import S3SigV4Auth, SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials


def sign(case):
    credentials = Credentials(case["accessKey"], case["secretKey"], case["sessionToken"])
    signer_class = S3SigV4Auth if case["service"] == "s3" else SigV4Auth
    signer = signer_class(credentials, case["service"], case["region"])
    url = case["url"]
    params = None
    if "rawQuery" in case:
        url += "?" + case["rawQuery"]
    else:
        params = [tuple(pair) for pair in case["query"]]
    request = AWSRequest(
        method=case["method"],
        url=url,
        data=case["body"].encode("utf-8"),
        params=params,
    )
    # HTTPHeaders appends on assignment, so a repeated header keeps every value, in order.
    for name, value in case["headers"]:
        request.headers[name] = value
    instant = datetime.datetime.strptime(case["amzDate"], "%Y%m%dT%H%M%SZ")
    with mock.patch("botocore.auth.get_current_datetime", return_value=instant):
        signer.add_auth(request)
    return {
        name: request.headers.get(name)
        for name in ("authorization", "x-amz-date", "x-amz-security-token", "x-amz-content-sha256")
    }


def main():
    with open(sys.argv[1], encoding="utf-8") as handle:
        cases = json.load(handle)
    json.dump([sign(case) for case in cases], sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
