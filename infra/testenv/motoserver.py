"""moto's DynamoDB server for Parley's tests, one request at a time.

moto mirrors DynamoDB's validation but its backend is not safe under
concurrent requests (a version-conditioned transaction can commit twice).
This wraps moto's WSGI application in a lock that covers the whole request:
reading the body, running moto, and producing the whole response. Verdicts
then hold, and races between clients stay meaningful. (One more change,
for speed only: snapshot_tables_once.)

Started by infra/testenv (moto.go), which embeds this file. It binds
127.0.0.1 on a port the kernel picks and prints, on stdout, the port as the
first line and moto's version as the second. It exits when its stdin closes,
so a test binary that dies leaves no server behind.
"""

import io
import logging
import os
import sys
import threading


def snapshot_tables_once() -> None:
    """Speed only, verdicts unchanged (applied to moto 5.2.1, whose code it
    was checked against). TransactWriteItems deep-copies a table once per
    transaction item that names it, all before the first write, so every copy
    of one table in one transaction is the same snapshot: take it once. A
    five-item transaction on one table then copies the table once, not five
    times; the copy costs some 50 us per item in the table."""
    import copy
    import types

    import moto.dynamodb.models as models
    from moto.dynamodb.models.table import Table

    taken: dict = {}

    def deepcopy(x, memo=None):
        if memo is None and isinstance(x, Table):
            if id(x) not in taken:
                taken[id(x)] = (x, copy.deepcopy(x))  # x kept: its id stays its own
            return taken[id(x)][1]
        return copy.deepcopy(x, memo)

    transact = models.DynamoDBBackend.transact_write_items

    def transact_write_items(self, *args, **kwargs):
        taken.clear()
        try:
            return transact(self, *args, **kwargs)
        finally:
            taken.clear()

    # The module's own name `copy`, so nothing outside moto.dynamodb.models
    # is affected; requests are serialized, so `taken` is never shared.
    models.copy = types.SimpleNamespace(deepcopy=deepcopy, copy=copy.copy)
    models.DynamoDBBackend.transact_write_items = transact_write_items


def main() -> None:
    try:
        import moto
        from moto.server import DomainDispatcherApplication, create_backend_app
        from werkzeug.serving import WSGIRequestHandler, make_server
    except ImportError as e:
        print(f"moto[server] is not importable with {sys.executable}: {e}", file=sys.stderr)
        sys.exit(3)

    # The lifeline: when the parent closes stdin (or dies), exit at once.
    def watch_stdin() -> None:
        try:
            while sys.stdin.buffer.read(65536):
                pass
        finally:
            os._exit(0)

    threading.Thread(target=watch_stdin, daemon=True).start()

    logging.getLogger("werkzeug").setLevel(logging.ERROR)

    class QuietHandler(WSGIRequestHandler):
        def log_request(self, code="-", size="-") -> None:  # one line per request: none
            pass

    if moto.__version__ == "5.2.1":
        snapshot_tables_once()

    moto_app = DomainDispatcherApplication(create_backend_app)
    lock = threading.Lock()

    def serialized(environ, start_response):
        with lock:
            # The body, read whole under the lock.
            stream = environ["wsgi.input"]
            length = environ.get("CONTENT_LENGTH") or ""
            if length.isdigit():
                body = stream.read(int(length)) if int(length) > 0 else b""
            elif environ.get("wsgi.input_terminated"):
                body = stream.read()
            else:
                body = b""
            environ["wsgi.input"] = io.BytesIO(body)
            environ["CONTENT_LENGTH"] = str(len(body))

            # moto, and the whole response, produced under the lock; the
            # server writes it out after the lock is released.
            result = moto_app(environ, start_response)
            try:
                out = b"".join(result)
            finally:
                close = getattr(result, "close", None)
                if close is not None:
                    close()
            return [out]

    # Build the DynamoDB (and Streams) apps before announcing the port, so the
    # first request does not pay for it.
    try:
        for name in ("dynamodb", "dynamodbstreams"):
            moto_app.app_instances.setdefault(name, create_backend_app(name))
    except Exception:  # an internal detail of moto; requests build them anyway
        pass

    server = make_server("127.0.0.1", 0, serialized, threaded=True, request_handler=QuietHandler)
    sys.stdout.write(f"{server.server_port}\n{moto.__version__}\n")
    sys.stdout.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()
