"""A test's own HTTP server on 127.0.0.1, and a guard that lets sockets connect
nowhere else: hostile-input tests use both, so that an SSRF guard that fails cannot
reach beyond the machine, and the test can assert what was (not) connected to.

    httpd = start_server(Handler, paths=[])     # handler sees self.server.paths
    ...
    stop_server(httpd)

    seen = guard_connections(monkeypatch)       # every (host, port) connected to
    send_json(handler, 200, {"ok": True})       # a JSON answer from a handler
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:  # clients that hang up on purpose
        pass


def start_server(handler: type[BaseHTTPRequestHandler], address: str = "127.0.0.1", **attributes) -> QuietServer:
    """A threaded server on a free port of ``address`` (127.0.0.1; Linux routes all
    of 127/8 to the loopback, so 127.0.0.2 is another host), serving in a daemon
    thread; ``attributes`` are set on it for the handler (``self.server.<name>``)."""
    httpd = QuietServer((address, 0), handler)
    for name, value in attributes.items():
        setattr(httpd, name, value)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def drip(handler: BaseHTTPRequestHandler, body: bytes, content_type: str = "image/jpeg", pause: float = 0.1, count: int = 30) -> None:
    """Answer 200 with ``body`` declared in full but sent one byte every ``pause``
    seconds, ``count`` bytes at most: a server slower than any fetch deadline."""
    handler.send_response(200)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    try:
        for i in range(min(count, len(body))):
            handler.wfile.write(body[i : i + 1])
            handler.wfile.flush()
            time.sleep(pause)
    except (BrokenPipeError, ConnectionResetError):  # the client gave up, as it should
        pass


def stop_server(httpd: QuietServer) -> None:
    httpd.shutdown()
    httpd.server_close()


def send_body(handler: BaseHTTPRequestHandler, status: int, body: bytes = b"", content_type: str = "image/jpeg", headers=None) -> None:
    """Answers the handler's request with ``body`` (and extra ``headers``)."""
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(body)


def send_json(handler: BaseHTTPRequestHandler, status: int, data, headers=None) -> None:
    """Answers the handler's request with ``data`` as JSON (and extra ``headers``)."""
    send_body(handler, status, json.dumps(data).encode(), "application/json", headers)


def guard_connections(monkeypatch) -> list:
    """Records every address a socket connects to while the test runs; anything but
    127.0.0.1 is refused (ConnectionRefusedError) instead of connected."""
    seen: list = []
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def check(address) -> None:
        seen.append(address)
        if not (isinstance(address, tuple) and address[0] == "127.0.0.1"):
            raise ConnectionRefusedError(f"test guard: no connection to {address!r}")

    def connect(self, address):
        check(address)
        return real_connect(self, address)

    def connect_ex(self, address):
        check(address)
        return real_connect_ex(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    return seen


def local_images_config(**overrides):
    """Image retrieval over HTTP against servers on 127.0.0.1 with short limits: the
    settings the fetch tests and the reason-code cases share."""
    from mmcurate.stages.config import ImagesConfig

    settings = dict(
        http=True,
        allowed_networks=("127.0.0.1/32",),
        connect_timeout=1.0,
        read_timeout=1.0,
        deadline_seconds=1.0,
        max_bytes=100_000,
        max_redirects=3,
        backoff_seconds=0.01,
    )
    return ImagesConfig(**{**settings, **overrides})


class InFlight:
    """Requests a test server is answering now, and the most at once, per host
    (thread-safe): ``with counter.request(host): ...`` around an answer."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.now: dict[str, int] = {}
        self.peak: dict[str, int] = {}
        self.total_peak = 0

    @contextlib.contextmanager
    def request(self, host: str):
        with self._lock:
            self.now[host] = self.now.get(host, 0) + 1
            self.peak[host] = max(self.peak.get(host, 0), self.now[host])
            self.total_peak = max(self.total_peak, sum(self.now.values()))
        try:
            yield
        finally:
            with self._lock:
                self.now[host] -= 1
