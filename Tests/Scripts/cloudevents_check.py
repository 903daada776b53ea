"""Reads events (one JSON object a line on stdin) with the CloudEvents SDK from PyPI (cloudevents
2.x, pinned by prerequisites.sh), a reader this project did not write: each must parse as a
structured-mode CloudEvent 1.0 whose required and optional attributes validate (the SDK raises
otherwise). The SDK fills a missing `specversion`, `id` or `time` with a default, so the event as
written is checked to carry every attribute we publish first. Prints {"checked": n, "problems": [...]}."""
import json
import sys

from cloudevents.core.formats.json import JSONFormat
from cloudevents.core.v1.event import CloudEvent

EXPECTED = {"specversion", "id", "source", "type", "subject", "time", "datacontenttype", "data", "sequence"}


def main():
    problems, checked = [], 0
    reader = JSONFormat()
    for number, line in enumerate(sys.stdin, 1):
        line = line.strip()
        if not line:
            continue
        checked += 1
        try:
            written = json.loads(line)
        except ValueError as error:
            problems.append(f"line {number}: not JSON: {error}")
            continue
        missing = EXPECTED - set(written if isinstance(written, dict) else {})
        if missing:
            problems.append(f"line {number}: missing {sorted(missing)}")
            continue
        try:
            event = reader.read(CloudEvent, line.encode())
        except Exception as error:  # the SDK's validation errors and its parsing errors alike
            problems.append(f"line {number}: {type(error).__name__}: {error}")
            continue
        attributes = event.get_attributes()
        if attributes.get("specversion") != "1.0":
            problems.append(f"line {number}: specversion {attributes.get('specversion')!r}")
        data = event.get_data()
        if not isinstance(data, dict) or "userId" not in data:
            problems.append(f"line {number}: data is not an object with userId")
        elif attributes.get("subject") != data.get("userId"):
            problems.append(f"line {number}: subject is not data.userId")
    print(json.dumps({"checked": checked, "problems": problems}))


if __name__ == "__main__":
    main()
