"""16 concurrent clients for 10 seconds against a running `authctl serve` on 127.0.0.1: each
signs in with a dev-IdP token and rotates its own refresh-token family; some steps present the
just-used token again (a client's retry within the grace period: the live successor comes back,
the same token) and some present a token whose successor was already used (refused as reuse,
after which the family is dead and the client signs in again). Every answer's status and body
are checked (bodies against Infra/openapi.json, as serve_e2e.py does).

Usage: serve_load.py BASE_URL OPENAPI_JSON [CLIENTS] [SECONDS]. Loopback only (it refuses any
other host), bounded in time and in requests per client. Prints one JSON object of counts and
the first errors; exits 0 either way (the Swift test reads it)."""
import json
import os
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_e2e import Client, Failure  # noqa: E402

# Per client, whatever the clock says: the loop stops by itself even on a stalled clock.
MAX_STEPS_PER_CLIENT = 5000


class Counts:
    def __init__(self):
        self.lock = threading.Lock()
        self.values = {"signins": 0, "refreshes": 0, "graceRetries": 0, "reuseRefused": 0, "revokedRefused": 0, "requests": 0}
        self.errors = []

    def add(self, name, count=1):
        with self.lock:
            self.values[name] += count

    def error(self, message):
        with self.lock:
            self.errors.append(message)


def run_client(number, base, document, deadline, counts):
    client = Client(base, document)
    sub = f"load-{number}"
    step = 0

    def call(*args, **kwargs):
        counts.add("requests")
        return client.call(*args, record=False, **kwargs)

    try:
        while time.monotonic() < deadline and step < MAX_STEPS_PER_CLIENT:
            # A new family: sign in (a dev-IdP token each time, as a fresh app launch would).
            counts.add("requests")
            id_token = client.id_token("google", sub, f"{sub}@example.com")
            signed_in = call("POST", "/auth/signin", {"provider": "google", "idToken": id_token})
            counts.add("signins")
            user_id = signed_in["user"]["id"]
            previous, current = None, signed_in["tokens"]["refreshToken"]
            generation = 0
            while time.monotonic() < deadline and step < MAX_STEPS_PER_CLIENT:
                step += 1
                generation += 1
                answer = call("POST", "/auth/refresh", {"refreshToken": current})
                counts.add("refreshes")
                successor = answer["tokens"]["refreshToken"]
                if answer["user"]["id"] != user_id or successor == current:
                    raise Failure(f"client {number}: refresh answered another user or the same token")
                previous, current = current, successor
                if generation % 3 == 1:
                    # The retry of a request whose answer was lost: the token just used, again,
                    # before its successor is used. Within the grace period: the same successor.
                    retried = call("POST", "/auth/refresh", {"refreshToken": previous})
                    counts.add("graceRetries")
                    if retried["tokens"]["refreshToken"] != current:
                        raise Failure(f"client {number}: a grace retry handed out a second live token")
                if generation % 5 == 0:
                    # Use the successor, then present the token before it: its successor was used,
                    # so it is reuse, whatever the grace period; the whole family is revoked.
                    answer = call("POST", "/auth/refresh", {"refreshToken": current})
                    counts.add("refreshes")
                    stale, current = current, answer["tokens"]["refreshToken"]
                    refused = call("POST", "/auth/refresh", {"refreshToken": previous}, expect=401)
                    if refused["error"]["code"] != "REFRESH_TOKEN_REUSED":
                        raise Failure(f"client {number}: a reused token answered {refused}")
                    counts.add("reuseRefused")
                    for dead in (stale, current):
                        refused = call("POST", "/auth/refresh", {"refreshToken": dead}, expect=401)
                        if refused["error"]["code"] not in ("REFRESH_TOKEN_REVOKED", "REFRESH_TOKEN_REUSED"):
                            raise Failure(f"client {number}: a revoked family's token answered {refused}")
                        counts.add("revokedRefused")
                    break
    except Exception as error:  # every kind: a client's failure is a reported error, not a hang
        counts.error(f"client {number}: {type(error).__name__}: {error}")


def main():
    base, document_path = sys.argv[1], sys.argv[2]
    clients = int(sys.argv[3]) if len(sys.argv) > 3 else 16
    seconds = float(sys.argv[4]) if len(sys.argv) > 4 else 10
    host = urllib.parse.urlsplit(base).hostname
    if host not in ("127.0.0.1", "localhost", "::1"):
        print(json.dumps({"errors": [f"refusing a non-loopback host {host}"]}))
        return
    with open(document_path) as file:
        document = json.load(file)
    counts = Counts()
    started = time.monotonic()
    deadline = started + seconds
    threads = [threading.Thread(target=run_client, args=(number, base, document, deadline, counts), daemon=True) for number in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        # A request's own timeout is 20 s, so no client runs past deadline + 20 s.
        thread.join(timeout=seconds + 30)
    elapsed = time.monotonic() - started
    stuck = sum(thread.is_alive() for thread in threads)
    if stuck:
        counts.error(f"{stuck} clients still running after {elapsed:.1f} s")
    result = dict(counts.values, clients=clients, seconds=round(elapsed, 2), errors=counts.errors[:10], errorCount=len(counts.errors))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
