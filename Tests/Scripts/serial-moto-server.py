"""moto_server with one request at a time: python3 serial-moto-server.py PORT

moto's DynamoDB has no concurrency control: under moto_server's threaded server a conditional
write checks and writes without a lock, and a cancelled transaction rolls the whole table back to
a copy taken before it started, undoing other requests' writes. Real DynamoDB evaluates each
condition and transaction atomically, which is what the flows' race tests rely on. Serialising
the requests (connections are still served by threads) restores that atomicity.
"""
import signal
import sys
import threading

from werkzeug.serving import run_simple
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app


def serialized(app):
    lock = threading.Lock()

    def call(environ, start_response):
        with lock:
            return list(app(environ, start_response))

    return call


signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
application = DomainDispatcherApplication(create_backend_app)
run_simple("127.0.0.1", int(sys.argv[1]), serialized(application), threaded=True)
