"""A small web of image hosts for the retrieval tests: one threaded HTTP server per
host, each on a loopback address of its own (127.0.0.2, 127.0.0.3, ...: Linux
routes all of 127/8 to the loopback), so per-host limits, robots.txt and pauses
can be told apart. The servers record what the tests assert: each request with its
time, robots.txt fetches per host, requests in flight per host (``InFlight``).

    web = Web(hosts=3, delay=0.05)
    web.url(0, "/img/1.jpg")          # http://127.0.0.2:<port>/img/1.jpg
    ...
    web.stop()

Paths: ``/robots.txt`` (disallows ``/private/``), ``/img/...`` (an image after
``delay`` seconds), ``/hang/...`` (nothing for ``hang_seconds``), ``/busy/...``
(429 with ``Retry-After: retry_after`` the first time, then an image),
``/missing/...`` (404).
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler

from imagegen import jpeg
from localnet import InFlight, send_body, start_server, stop_server

GOOD = jpeg(1)
ROBOTS = b"User-agent: *\nDisallow: /private/\n"


class WebHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        web: Web = self.server.web
        host = self.server.server_address[0]
        path = self.path
        with web.lock:
            web.log.append((time.monotonic(), host, path))
            if path == "/robots.txt":
                web.robots[host] = web.robots.get(host, 0) + 1
            busy_first = path.startswith("/busy") and path not in web.seen
            web.seen.add(path)
        try:
            if path == "/robots.txt":
                return send_body(self, 200, ROBOTS, "text/plain")
            if path.startswith("/hang"):
                time.sleep(web.hang_seconds)
                return send_body(self, 200, GOOD)
            if path.startswith("/missing"):
                return send_body(self, 404, b"not here", "text/plain")
            if busy_first:
                return send_body(self, 429, b"slow down", "text/plain", {"Retry-After": str(web.retry_after)})
            # Counted in flight while it is answered, up to its body: a client that has read the
            # body may send its next request before this thread leaves the count, which would
            # make the server count one more than the client has in flight.
            with web.in_flight.request(host):
                time.sleep(web.delay)
            return send_body(self, 200, GOOD)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up, as it may
            return None


class Web:
    """``hosts`` servers on 127.0.0.2, 127.0.0.3, ... sharing one record."""

    def __init__(self, hosts: int, delay: float = 0.0, hang_seconds: float = 3.0, retry_after: float = 1.0):
        self.delay = delay
        self.hang_seconds = hang_seconds
        self.retry_after = retry_after
        self.lock = threading.Lock()
        self.log: list[tuple[float, str, str]] = []  # (time, host, path) of every request
        self.robots: dict[str, int] = {}
        self.seen: set[str] = set()
        self.in_flight = InFlight()
        self.servers = [start_server(WebHandler, address=f"127.0.0.{2 + i}", web=self) for i in range(hosts)]

    def url(self, host: int, path: str) -> str:
        address, port = self.servers[host].server_address[:2]
        return f"http://{address}:{port}{path}"

    def host(self, i: int) -> str:
        return self.servers[i].server_address[0]

    def requests(self, host: str, prefix: str = "/") -> list[tuple[float, str]]:
        with self.lock:
            return [(t, p) for t, h, p in self.log if h == host and p.startswith(prefix)]

    def stop(self) -> None:
        for server in self.servers:
            stop_server(server)
