"""The sandbox's HTTP server keeps a client's connection open between calls, as AWS's endpoints do.

werkzeug's development server, which moto's server runs on, answers every request with
`Connection: close`: each AWS call of the control plane opened a TCP connection, and the sandbox
started a thread for it and, after answering, waited 10 ms for stray request bytes before
closing. Against AWS, botocore's pool keeps connections alive; here that cost about a third of
each call's CPU on both sides (`ecs:ListClusters`, one client: 1.6 → 1.0 ms of the client's CPU
a call, 3.1 → 2.1 ms of the sandbox's; docs/decisions/0101).

`KeepAliveHandler` answers an HTTP/1.1 request with a `Content-Length` body (or none) itself:
it gives moto's app the request's body as a stream of exactly `Content-Length` bytes, reads
what the app left of it (so the next request's line is what comes next on the connection),
buffers the answer and sends it with its length, the connection left open. A request it cannot
frame that way (HTTP/1.0, `Connection: close`, a chunked body) goes to werkzeug's own
`run_wsgi`, which answers and closes, as before. The environ is werkzeug's and moto's
(`make_environ`: moto keeps S3 metadata headers with underscores).

`KeepAliveServer` knows its open connections and closes them when it is closed: a sandbox that
was stopped answers nothing more, also on the connections its clients keep. A connection idle
for `IDLE_SECONDS` is closed by the sandbox; a client (urllib3) sees that before reusing it.
"""

from __future__ import annotations

import socket
import threading
import traceback
from contextlib import suppress
from typing import IO, Any, cast

from moto.moto_server.werkzeug_app import MotoRequestHandler
from werkzeug.serving import ThreadedWSGIServer
from werkzeug.wsgi import LimitedStream

# AWS's load balancers close a connection idle for 60 s (their default idle timeout).
IDLE_SECONDS = 60
# Headers about the connection itself: the server decides them, not the app.
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length"})
_NO_BODY_STATUSES = frozenset({204, 304})


class KeepAliveHandler(MotoRequestHandler):
    timeout = IDLE_SECONDS  # on the connection's socket (`StreamRequestHandler.setup`)
    server: KeepAliveServer

    def setup(self) -> None:
        super().setup()
        # An answer's head and body are two writes: without this the body waits for the
        # client's delayed ACK of the head (40 ms) once the connection is reused.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.opened(self.connection)

    def finish(self) -> None:
        self.server.finished(self.connection)
        super().finish()

    def log_error(self, format: str, *args: Any) -> None:
        if format.startswith("Request timed out"):
            return  # an idle connection closed after IDLE_SECONDS: nothing went wrong
        super().log_error(format, *args)

    def run_wsgi(self) -> None:
        length = self._body_length()
        if self.close_connection or length is None:
            super().run_wsgi()  # werkzeug's: answered with `Connection: close`
            return
        if self.headers.get("Expect", "").lower().strip(" \t") == "100-continue":
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        self.environ = environ = self.make_environ()
        body = LimitedStream(cast(IO[bytes], self.rfile), length)  # rfile: the socket, buffered
        environ["wsgi.input"] = body
        status, headers, chunks = self._answer(environ)
        body.exhaust()  # what the app did not read: the next request starts after it
        self._send(environ["REQUEST_METHOD"], status, headers, b"".join(chunks))

    def _body_length(self) -> int | None:
        """The request body's length, or None when it is not framed by one valid length."""
        if "Transfer-Encoding" in self.headers:
            return None
        lengths = self.headers.get_all("Content-Length") or ["0"]
        if len(lengths) != 1 or not lengths[0].strip().isdigit():
            return None
        return int(lengths[0])

    def _answer(self, environ: dict[str, Any]) -> tuple[str, list[tuple[str, str]], list[bytes]]:
        started: list[Any] = []
        chunks: list[bytes] = []

        def start_response(
            status: str, headers: list[tuple[str, str]], exc_info: Any = None
        ) -> Any:
            started[:] = [status, headers]  # nothing is sent before the app has answered
            return chunks.append

        try:
            answer = self.server.app(environ, start_response)
            try:
                chunks.extend(answer)
            finally:
                if hasattr(answer, "close"):
                    answer.close()
        except Exception:
            self.server.log("error", f"Error on request:\n{traceback.format_exc()}")
            return (
                "500 Internal Server Error",
                [("Content-Type", "text/plain")],
                [b"Internal Server Error"],
            )
        return started[0], started[1], chunks

    def _send(self, method: str, status: str, headers: list[tuple[str, str]], body: bytes) -> None:
        code_text, _, reason = status.partition(" ")
        code = int(code_text)
        self.send_response(code, reason)
        for name, value in headers:
            # A HEAD's length is the app's: that of the body a GET would have.
            keep = name.lower() not in _HOP_BY_HOP
            if keep or (method == "HEAD" and name.lower() == "content-length"):
                self.send_header(name, value)
        if code in _NO_BODY_STATUSES or code < 200:
            body = b""
        elif method != "HEAD":
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body and method != "HEAD":
            self.wfile.write(body)


class KeepAliveServer(ThreadedWSGIServer):
    """werkzeug's threaded server (a thread per connection) with `KeepAliveHandler`, closing its
    open connections when it is closed."""

    def __init__(self, host: str, port: int, app: Any) -> None:
        super().__init__(host, port, app, handler=KeepAliveHandler)
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()

    def opened(self, connection: socket.socket) -> None:
        with self._lock:
            self._open.add(connection)

    def finished(self, connection: socket.socket) -> None:
        with self._lock:
            self._open.discard(connection)

    def server_close(self) -> None:
        super().server_close()
        with self._lock:
            connections, self._open = list(self._open), set()
        for connection in connections:
            with suppress(OSError):  # closed meanwhile
                connection.shutdown(socket.SHUT_RDWR)  # its thread reads the end and leaves
