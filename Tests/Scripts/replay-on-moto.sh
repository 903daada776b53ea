#!/usr/bin/env bash
# Replays the recorded scenarios against DynamoDB and STS as moto_server implements them:
# starts moto_server on 127.0.0.1 on a free port (one request at a time, as the tests run it: see
# serial-moto-server.py), runs `authctl replay --backend dynamodb` (a fresh table per
# scenario, credentials from moto's STS), and always stops the server.
# Usage: Tests/Scripts/replay-on-moto.sh AUTHCTL SCENARIO...
set -euo pipefail
authctl=$1
shift
python3 -c 'import moto.server' 2>/dev/null || { echo "replay-on-moto: moto_server is not installed (pip install 'moto[server]'; .ci/run does)" >&2; exit 1; }

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
log=$(mktemp -t moto-replay.XXXXXX)
python3 "$(dirname "$0")/serial-moto-server.py" "$port" >"$log" 2>&1 &
moto_pid=$!
stop() {
    kill "$moto_pid" 2>/dev/null || true
    wait "$moto_pid" 2>/dev/null || true
    rm -f "$log"
}
trap stop EXIT

endpoint="http://127.0.0.1:$port"
answers() { python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1] + "/moto-api/", timeout=1)' "$endpoint" 2>/dev/null; }
for _ in $(seq 1 300); do
    if answers; then break; fi
    kill -0 "$moto_pid" 2>/dev/null || { echo "replay-on-moto: moto_server exited:" >&2; cat "$log" >&2; exit 1; }
    sleep 0.1
done
answers || { echo "replay-on-moto: moto_server did not answer on $endpoint" >&2; exit 1; }

AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing \
    "$authctl" replay --backend dynamodb --endpoint "$endpoint" "$@"
