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

Every model object moto makes is also appended to a class-wide list for its /moto-api/data.json,
the table copies above included, so nothing a transaction copied was ever freed: a 500-user import
grew the server by 30 MB a second to 18 GB, and the collector's passes over those objects made
each request slower than the last until the clients timed out. DynamoDB's models are left out of
that list (the SES test reads SES's messages from it; nothing reads DynamoDB's there).
The copies per transaction are also cut to one per table (moto copies the table again for each
action that names it; every copy is taken before the first write, so the first serves them all).
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

try:
    import moto.dynamodb.models as dynamodb_models
    from moto.core.common_models import BaseModel
    from moto.dynamodb.models.table import Table
except ImportError:  # a moto laid out otherwise: its models and transactions stay as they were
    pass
else:
    _tracked_new = BaseModel.__dict__["__new__"]

    def _untracked_new(cls, *args, **kwargs):
        instance = _tracked_new(cls, *args, **kwargs)
        if cls.__module__.startswith("moto.dynamodb."):
            cls.instances_tracked.pop()
        return instance

    BaseModel.__new__ = staticmethod(_untracked_new)

    class _OneCopyPerTransaction:
        """Stands for the `copy` module inside moto's DynamoDB backend."""

        def __init__(self):
            self.tables = None  # id of a table -> its copy, while a transaction runs

        def deepcopy(self, value, memo=None):
            if self.tables is None or not isinstance(value, Table):
                return copy.deepcopy(value, memo)
            if id(value) not in self.tables:
                self.tables[id(value)] = copy.deepcopy(value, memo)
            return self.tables[id(value)]

        def __getattr__(self, name):
            return getattr(copy, name)

    _copies = _OneCopyPerTransaction()
    dynamodb_models.copy = _copies
    _transact_write_items = dynamodb_models.DynamoDBBackend.transact_write_items

    def _transact_with_one_copy(self, *args, **kwargs):
        _copies.tables = {}
        try:
            return _transact_write_items(self, *args, **kwargs)
        finally:
            _copies.tables = None

    dynamodb_models.DynamoDBBackend.transact_write_items = _transact_with_one_copy

signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
application = DomainDispatcherApplication(create_backend_app)
run_simple("127.0.0.1", int(sys.argv[1]), serialized(application), threaded=True)
