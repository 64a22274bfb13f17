"""A local web of many hosts, shaped like the one image retrieval meets, for
benchmarks/bench_web.py: nothing beyond 127.0.0.1's network (all of 127.0.0.0/8,
which Linux routes to the loopback interface).

``plan_web`` draws the web from a seed:

* ``hosts`` hosts, each a loopback address of its own (127.10.0.1, 127.10.0.2, ...),
  with a Zipf-like number of URLs (the k-th busiest holds about k**-zipf of them,
  each at least one);
* a time to first byte per host: log-normal around a median of 150 ms, and a slow
  tail of hosts at 1-5 s; every answer of a host (robots.txt and 404s too) waits it;
* kinds of URL: images that are served (``ok``), ``not_found`` (404), ``error_once``
  (500 on the first request since the last reset, then the image), ``hang`` (headers
  never come; the request is held until the client gives up), ``refused`` (every URL
  of a host where nothing listens), ``robots_disallowed`` (under a path the host's
  robots.txt disallows to every user agent; served if asked anyway);
* a robots.txt on every host that listens;
* a share of the hosts over HTTPS, each with its own certificate (its IP address as
  subject alternative name) from a test certificate authority made with ``trustme``;
  a client trusts it through ``SSL_CERT_FILE`` (Python's default SSL context: urllib,
  aiohttp) or ``REQUESTS_CA_BUNDLE`` (requests).

Hosts are ranked by URLs. The slow tail and the refusing hosts are drawn among the
less busy half (a host that answers in seconds does not serve a crawl's most linked
images), and the busiest 1% stand for CDNs: their time to first byte is at most the
median. Both keep the floor the per-host limit puts on a polite client's wall time
(``Web.politeness_floor``) from standing for one unlucky draw. Image bytes are JPEGs from tests/imagegen.py, a few dozen sizes and scenes,
each URL's made distinct by a JPEG comment segment naming it (so sha256 differs per
URL while the pixels repeat).

``LocalWeb`` serves a planned web from a few child processes, each an asyncio
server (aiohttp's low-level ``web.Server``) listening on many addresses, and counts
per host: requests, robots.txt fetches, requests for disallowed paths, the peak
number of requests in flight; per process: CPU seconds and the event loop's worst
lag, so that a benchmark can show the server was not its bottleneck::

    web = plan_web(urls=20_000, hosts=1_000, seed=1)
    with LocalWeb(web, processes=2) as server:
        server.reset()                 # counters to zero, 500-once URLs armed again
        ...                            # a client fetches web.urls
        stats = server.stats()         # ServerStats
"""

from __future__ import annotations

import asyncio
import bisect
import math
import multiprocessing
import random
import socket
import ssl
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

ROOT = Path(__file__).resolve().parents[1]

KIND_OK = "ok"
KIND_NOT_FOUND = "not_found"
KIND_ERROR_ONCE = "error_once"
KIND_HANG = "hang"
KIND_REFUSED = "refused"
KIND_ROBOTS = "robots_disallowed"
KINDS = (KIND_OK, KIND_NOT_FOUND, KIND_ERROR_ONCE, KIND_HANG, KIND_REFUSED, KIND_ROBOTS)

DISALLOWED_PREFIX = "/private/"
# Sizes of the served images (all pass the images stage's default size and aspect rules).
IMAGE_SIZES = ((320, 240), (400, 300), (480, 360), (640, 480), (800, 600), (1024, 768))
DISTINCT_IMAGES = 48


@dataclass(frozen=True)
class Shape:
    """What the web is made of; shares are of hosts or of URLs, as named."""

    zipf: float = 0.8  # URLs of the k-th busiest host ~ k**-zipf
    latency_median: float = 0.150  # seconds to first byte, log-normal
    latency_sigma: float = 0.5  # of the log
    slow_hosts: float = 0.05  # share of hosts in the slow tail ...
    slow_latency: tuple[float, float] = (1.0, 5.0)  # ... with a time to first byte drawn here
    https_hosts: float = 0.6
    refusing_hosts: float = 0.03
    disallowing_hosts: float = 0.10  # their robots.txt disallows DISALLOWED_PREFIX
    disallowed_urls: float = 0.25  # share of such a host's URLs under it
    not_found: float = 0.03  # shares of the other URLs
    error_once: float = 0.02
    hang: float = 0.01
    cdn_hosts: float = 0.01  # the busiest hosts: time to first byte at most the median
    quiet_half: float = 0.5  # slow and refusing hosts are drawn among this less busy share


@dataclass(frozen=True)
class Host:
    address: str
    https: bool
    latency: float
    refuses: bool
    disallows: bool

    def origin(self, http_port: int, https_port: int) -> str:
        return f"https://{self.address}:{https_port}" if self.https else f"http://{self.address}:{http_port}"


@dataclass(frozen=True)
class WebUrl:
    url: str
    host: int  # index into Web.hosts
    path: str
    kind: str
    image: int  # which of the distinct images it serves


@dataclass
class Web:
    hosts: list[Host]
    urls: list[WebUrl]
    http_port: int
    https_port: int
    shape: Shape
    seed: int

    def urls_per_host(self) -> Counter:
        return Counter(u.host for u in self.urls)

    def kinds(self) -> Counter:
        return Counter(u.kind for u in self.urls)

    def politeness_floor(self, per_host: int, deadline: float = 0.0) -> tuple[float, int]:
        """The least wall time a client keeping at most ``per_host`` requests in flight
        per host can take: the max over hosts of its requests (robots.txt, each URL it
        fetches, a 500-once URL twice) x its time to first byte, plus its hanging URLs x
        ``deadline`` (a slot each holds until the client gives up), / ``per_host``; and
        the host that sets it. With ``deadline=0``: the requests alone."""
        requests: Counter = Counter()
        hangs: Counter = Counter()
        for u in self.urls:
            if u.kind == KIND_HANG:
                hangs[u.host] += 1
            elif u.kind not in (KIND_ROBOTS, KIND_REFUSED):
                requests[u.host] += 2 if u.kind == KIND_ERROR_ONCE else 1
        best, which = 0.0, -1
        for host in set(requests) | set(hangs):
            floor = ((requests[host] + 1) * self.hosts[host].latency + hangs[host] * deadline) / per_host
            if floor > best:
                best, which = floor, host
        return best, which

    def busiest_host(self) -> tuple[int, int]:
        """(host index, URLs) of the host with the most URLs."""
        host, n = self.urls_per_host().most_common(1)[0]
        return host, n


def host_address(index: int) -> str:
    """The loopback address of host ``index``: 127.10.0.1, ..., never a .0 or .255."""
    a, rest = divmod(index, 254 * 254)
    b, c = divmod(rest, 254)
    if a > 100:
        raise ValueError(f"too many hosts: {index + 1}")
    return f"127.{10 + a}.{b + 1}.{c + 1}"


def _zipf_counts(total: int, hosts: int, exponent: float) -> list[int]:
    """URLs per host, busiest first: each at least 1, the rest spread as k**-exponent
    (largest remainders), summing to ``total``."""
    if total < hosts:
        raise ValueError(f"{total} URLs cannot give each of {hosts} hosts one")
    weights = [(k + 1) ** -exponent for k in range(hosts)]
    scale = (total - hosts) / sum(weights)
    exact = [w * scale for w in weights]
    counts = [1 + int(e) for e in exact]
    order = sorted(range(hosts), key=lambda k: exact[k] - int(exact[k]), reverse=True)
    for k in order[: total - sum(counts)]:
        counts[k] += 1
    return counts


def plan_web(urls: int, hosts: int, seed: int, http_port: int = 0, https_port: int = 0, shape: Shape = Shape()) -> Web:
    """A web of ``hosts`` hosts and ``urls`` image URLs drawn from ``seed`` (the same
    seed and ports give the same web); URLs in a seeded random order."""
    rng = random.Random(seed)
    counts = _zipf_counts(urls, hosts, shape.zipf)
    cdn = max(1, int(hosts * shape.cdn_hosts))
    others = list(range(hosts - int(hosts * shape.quiet_half), hosts))
    slow = set(rng.sample(others, int(hosts * shape.slow_hosts)))
    refusing = set(rng.sample([h for h in others if h not in slow], int(hosts * shape.refusing_hosts)))
    planned = []
    for k in range(hosts):
        if k in slow:
            latency = rng.uniform(*shape.slow_latency)
        else:
            latency = shape.latency_median * math.exp(rng.gauss(0.0, shape.latency_sigma))
            if k < cdn:
                latency = min(latency, shape.latency_median)
        planned.append(
            Host(
                address=host_address(k),
                https=rng.random() < shape.https_hosts,
                latency=round(latency, 4),
                refuses=k in refusing,
                disallows=rng.random() < shape.disallowing_hosts,
            )
        )
    # Cumulative shares of the URL kinds drawn on a host that listens.
    kinds = [(KIND_NOT_FOUND, shape.not_found), (KIND_ERROR_ONCE, shape.error_once), (KIND_HANG, shape.hang)]
    edges = list(_cumulative(share for _, share in kinds))
    items = []
    for k, host in enumerate(planned):
        for _ in range(counts[k]):
            if host.refuses:
                kind = KIND_REFUSED
            elif host.disallows and rng.random() < shape.disallowed_urls:
                kind = KIND_ROBOTS
            else:
                i = bisect.bisect_right(edges, rng.random())
                kind = kinds[i][0] if i < len(kinds) else KIND_OK
            items.append((k, kind))
    rng.shuffle(items)
    web_urls = []
    for n, (k, kind) in enumerate(items):
        path = f"{DISALLOWED_PREFIX if kind == KIND_ROBOTS else '/img/'}{n}.jpg"
        url = planned[k].origin(http_port, https_port) + path
        web_urls.append(WebUrl(url=url, host=k, path=path, kind=kind, image=rng.randrange(DISTINCT_IMAGES)))
    return Web(planned, web_urls, http_port, https_port, shape, seed)


def _cumulative(shares) -> list[float]:
    total, out = 0.0, []
    for share in shares:
        total += share
        out.append(total)
    return out


def free_ports(count: int, low: int = 20_000, high: int = 32_000, seed: Optional[int] = None) -> list[int]:
    """Ports below Linux's ephemeral range that nothing has bound on any address (a
    wildcard bind succeeds), so every loopback address can listen on them."""
    rng = random.Random(seed)
    ports: list[int] = []
    for _ in range(1000):
        port = rng.randrange(low, high)
        if port in ports:
            continue
        with socket.socket() as probe:
            try:
                probe.bind(("0.0.0.0", port))
            except OSError:
                continue
        ports.append(port)
        if len(ports) == count:
            return ports
    raise RuntimeError(f"no {count} free ports in {low}-{high}")


# ---------------------------------------------------------------------------------
# Images and certificates
# ---------------------------------------------------------------------------------


def base_images(count: int = DISTINCT_IMAGES) -> list[bytes]:
    """``count`` JPEGs of the sizes in IMAGE_SIZES, deterministic."""
    sys.path.insert(0, str(ROOT / "tests"))
    from imagegen import jpeg

    return [jpeg(1000 + i, IMAGE_SIZES[i % len(IMAGE_SIZES)], quality=85) for i in range(count)]


def with_comment(jpeg_bytes: bytes, text: bytes) -> bytes:
    """The same JPEG with a comment segment (COM) after its start marker: other bytes,
    same pixels."""
    if jpeg_bytes[:2] != b"\xff\xd8" or len(text) > 65_000:
        raise ValueError("not a JPEG, or comment too long")
    return b"\xff\xd8\xff\xfe" + (len(text) + 2).to_bytes(2, "big") + text + jpeg_bytes[2:]


@dataclass(frozen=True)
class Authority:
    """A test certificate authority: its certificate (what clients trust) and key."""

    cert_pem: bytes
    key_pem: bytes

    @classmethod
    def create(cls) -> "Authority":
        import trustme

        ca = trustme.CA(organization_name="mmcurate local web")
        return cls(ca.cert_pem.bytes(), ca.private_key_pem.bytes())

    def write(self, path: Path) -> Path:
        path.write_bytes(self.cert_pem)
        return path

    def server_context(self, address: str) -> ssl.SSLContext:
        """An SSL context serving a certificate for ``address`` (an IP SAN)."""
        import trustme

        leaf = trustme.CA.from_pem(self.cert_pem, self.key_pem).issue_cert(address)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        leaf.configure_cert(context)
        return context


# ---------------------------------------------------------------------------------
# The server
# ---------------------------------------------------------------------------------


@dataclass
class HostCounts:
    requests: int = 0
    robots: int = 0
    disallowed: int = 0  # requests for a path robots.txt disallows
    in_flight: int = 0
    peak: int = 0

    def as_tuple(self) -> tuple[int, int, int, int]:
        return self.requests, self.robots, self.disallowed, self.peak


@dataclass
class ServerStats:
    """What the server saw since the last reset."""

    cpu_seconds: float  # all serving processes together
    wall_seconds: float
    max_loop_lag: float  # worst delay of a 50 ms timer in any process, seconds
    loop_lag_p99: float  # its 99th percentile (the worst process's), seconds
    statuses: Counter  # answers by status (0: the client left before an answer)
    hosts: dict = field(default_factory=dict)  # address -> (requests, robots.txt, disallowed, peak in flight)

    @property
    def cores(self) -> float:
        return self.cpu_seconds / self.wall_seconds if self.wall_seconds else 0.0

    def peak_in_flight(self) -> tuple[int, str]:
        if not self.hosts:
            return 0, ""
        address, counts = max(self.hosts.items(), key=lambda item: item[1][3])
        return counts[3], address

    def robots_fetches(self) -> tuple[int, str]:
        if not self.hosts:
            return 0, ""
        address, counts = max(self.hosts.items(), key=lambda item: item[1][1])
        return counts[1], address

    def disallowed_requests(self) -> int:
        return sum(c[2] for c in self.hosts.values())


class _Serving:
    """One serving process: its hosts' sites on one event loop, and their counters."""

    def __init__(self, web: Web, hosts: Sequence[int], images: Sequence[bytes]):
        self.web = web
        self.images = images
        self.by_address = {web.hosts[k].address: k for k in hosts}
        ours = set(hosts)
        self.paths: dict[tuple[int, str], WebUrl] = {(u.host, u.path): u for u in web.urls if u.host in ours}
        self.robots = {
            k: (
                f"User-agent: *\nDisallow: {DISALLOWED_PREFIX}\n" if web.hosts[k].disallows else "User-agent: *\nDisallow: /cgi-bin/\n"
            ).encode()
            for k in hosts
        }
        self.reset()

    def reset(self) -> None:
        self.counts = {k: HostCounts() for k in self.by_address.values()}
        self.failed_once: set[str] = set()
        self.statuses: Counter = Counter()
        self.cpu0 = time.process_time()
        self.wall0 = time.perf_counter()
        self.lags: list[float] = []

    def snapshot(self) -> dict:
        return {
            "cpu": time.process_time() - self.cpu0,
            "wall": time.perf_counter() - self.wall0,
            "lag": max(self.lags, default=0.0),
            "lag_p99": sorted(self.lags)[int(len(self.lags) * 0.99)] if self.lags else 0.0,
            "statuses": dict(self.statuses),
            "hosts": {self.web.hosts[k].address: c.as_tuple() for k, c in self.counts.items() if c.requests},
        }

    async def ticker(self) -> None:
        period = 0.05
        while True:
            start = time.perf_counter()
            await asyncio.sleep(period)
            self.lags.append(time.perf_counter() - start - period)

    async def handle(self, request):
        from aiohttp import web

        k = self.by_address[request.transport.get_extra_info("sockname")[0]]
        host = self.web.hosts[k]
        counts = self.counts[k]
        counts.requests += 1
        counts.in_flight += 1
        counts.peak = max(counts.peak, counts.in_flight)
        status = 0
        try:
            path = request.path
            if path.startswith(DISALLOWED_PREFIX) and host.disallows:
                counts.disallowed += 1
            await asyncio.sleep(host.latency)
            if path == "/robots.txt":
                counts.robots += 1
                status = 200
                return web.Response(body=self.robots[k], content_type="text/plain")
            item = self.paths.get((k, path))
            if item is None or item.kind == KIND_NOT_FOUND:
                status = 404
                return web.Response(status=404, text="not found")
            if item.kind == KIND_HANG:
                await asyncio.Event().wait()  # until the client leaves (handler cancelled)
            if item.kind == KIND_ERROR_ONCE and path not in self.failed_once:
                self.failed_once.add(path)
                status = 500
                return web.Response(status=500, text="try again")
            body = with_comment(self.images[item.image % len(self.images)], item.url.encode())
            response = web.StreamResponse(headers={"Content-Type": "image/jpeg"})
            response.content_length = len(body)
            await response.prepare(request)
            await response.write(body)
            await response.write_eof()
            status = 200
            return response
        finally:
            counts.in_flight -= 1
            self.statuses[status] += 1

    async def serve(self, conn) -> None:
        from aiohttp import web

        authority = Authority(*conn.recv())
        server = web.Server(self.handle, handler_cancellation=True, access_log=None)
        runner = web.ServerRunner(server, handle_signals=False)
        await runner.setup()
        try:
            for address, k in self.by_address.items():
                host = self.web.hosts[k]
                context = authority.server_context(address) if host.https else None
                port = self.web.https_port if host.https else self.web.http_port
                await web.TCPSite(runner, address, port, ssl_context=context, backlog=256).start()
        except OSError as exc:
            conn.send(("failed", f"{type(exc).__name__}: {exc}"))
            return
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        tick = asyncio.ensure_future(self.ticker())

        def command() -> None:
            try:
                what = conn.recv()
            except EOFError:
                what = "stop"
            if what == "reset":
                self.reset()
                conn.send("ok")
            elif what == "stats":
                conn.send(self.snapshot())
            elif not done.done():
                done.set_result(None)

        loop.add_reader(conn.fileno(), command)
        self.reset()
        conn.send(("ready", len(self.by_address)))
        await done
        loop.remove_reader(conn.fileno())
        tick.cancel()
        await runner.cleanup()


def _serve_process(web: Web, hosts: Sequence[int], images: Sequence[bytes], conn) -> None:
    asyncio.run(_Serving(web, hosts, images).serve(conn))


class LocalWeb:
    """Serves ``web`` from ``processes`` child processes (hosts dealt round-robin;
    refusing hosts are not served), until ``close``."""

    def __init__(self, web: Web, processes: int = 2, authority: Optional[Authority] = None, images: Optional[list[bytes]] = None):
        self.web = web
        self.authority = authority or Authority.create()
        self._images = images if images is not None else base_images()
        served = [k for k, h in enumerate(web.hosts) if not h.refuses]
        context = multiprocessing.get_context("fork")
        self._children = []
        for p in range(processes):
            ours, theirs = context.Pipe()
            child = context.Process(target=_serve_process, args=(web, served[p::processes], self._images, theirs), daemon=True)
            child.start()
            theirs.close()
            ours.send((self.authority.cert_pem, self.authority.key_pem))
            self._children.append((child, ours))
        try:
            for child, conn in self._children:
                if not conn.poll(300):
                    raise RuntimeError("a server process did not start within 300 s")
                state, detail = conn.recv()
                if state != "ready":
                    raise RuntimeError(f"a server process could not listen: {detail}")
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> "LocalWeb":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def reset(self) -> None:
        for _, conn in self._children:
            conn.send("reset")
        for _, conn in self._children:
            conn.recv()

    def stats(self) -> ServerStats:
        for _, conn in self._children:
            conn.send("stats")
        parts = [conn.recv() for _, conn in self._children]
        statuses: Counter = Counter()
        hosts: dict = {}
        for part in parts:
            statuses.update({int(k): v for k, v in part["statuses"].items()})
            hosts.update(part["hosts"])
        return ServerStats(
            cpu_seconds=sum(p["cpu"] for p in parts),
            wall_seconds=max(p["wall"] for p in parts),
            max_loop_lag=max(p["lag"] for p in parts),
            loop_lag_p99=max(p["lag_p99"] for p in parts),
            statuses=statuses,
            hosts=hosts,
        )

    def close(self) -> None:
        for child, conn in self._children:
            try:
                conn.send("stop")
            except (OSError, ValueError):
                pass
        for child, conn in self._children:
            child.join(10)
            if child.is_alive():
                child.terminate()
                child.join(5)
            conn.close()
        self._children = []
