"""moto_server with one request at a time: python3 serial-moto-server.py PORT

moto's DynamoDB has no concurrency control: under moto_server's threaded server a conditional
write checks and writes without a lock, and a cancelled transaction rolls the whole table back to
a copy taken before it started, undoing other requests' writes. Real DynamoDB evaluates each
condition and transaction atomically, which is what the flows' race tests rely on. Serialising
the requests (connections are still served by threads) restores that atomicity.

moto's EventBridge turns each event it delivers to a target into the target's input through
jsonpath_ng, parsing the same eight paths for every entry; jsonpath_ng builds its parser's
tables anew for each parse, about 0.5 s an entry on a loaded machine, so a PutEvents of 10
entries to a rule with an SQS target took longer than a client's 3 s timeout. The parsed paths
are kept (the same strings always parse to the same path).

A transaction deep-copies its table, once per action, to roll back on failure; a table with a
stream (every table `authctl store create-table` makes) copies every stream record it ever
wrote, so each transaction cost more than the one before, past the clients' 3 s within a few
hundred writes. A record is never changed once written: the copy takes the list of records, not
copies of them, and a rollback still drops the records of the writes it undoes.
"""
import copy
import functools
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


try:
    import jsonpath_ng.ext
except ImportError:  # a moto installed without EventBridge's extras: nothing to speed up
    pass
else:
    # moto imports `parse` from jsonpath_ng.ext at each call, so the module's name is what it gets.
    jsonpath_ng.ext.parse = functools.lru_cache(maxsize=256)(jsonpath_ng.ext.parse)

try:
    from moto.dynamodb.models.table import StreamShard
except ImportError:  # a moto whose stream shard lives elsewhere: its copies stay as they are
    pass
else:
    def _copy_shard(shard, memo):
        copied = StreamShard.__new__(StreamShard)
        memo[id(shard)] = copied
        for name, value in shard.__dict__.items():
            setattr(copied, name, list(value) if name == "items" else copy.deepcopy(value, memo))
        return copied

    StreamShard.__deepcopy__ = _copy_shard

signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
application = DomainDispatcherApplication(create_backend_app)
run_simple("127.0.0.1", int(sys.argv[1]), serialized(application), threaded=True)
