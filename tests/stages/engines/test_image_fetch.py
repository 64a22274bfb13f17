"""Image retrieval against a real HTTP server on 127.0.0.1, hostile cases included."""

from __future__ import annotations

import asyncio
import socket
import time
from http.server import BaseHTTPRequestHandler

import pytest

from imagegen import SVG, jpeg, png_bomb
from localnet import drip, guard_connections, local_images_config, send_body, start_server, stop_server
from mmcurate.filters import reasons
from mmcurate.stages.engines.address_guard import refused_reason
from mmcurate.stages.engines.image_decode import normalize_image
from mmcurate.stages.engines.image_fetch import ImageFetcher
from mmcurate.stages.engines.publisher_policy import opted_out
from mmcurate.schemas.rows import STATUS_OK
from mmcurate.filters.url_forms import canonical_url

GOOD = jpeg(1)
# Hostile redirects: Locations that are not URLs one can fetch, or that name an
# address the guard refuses (never connected to: see the ``connections`` fixture).
REDIRECTS_TO = {
    "/to-unclosed-ipv6": "http://[::1/x.png",
    "/to-escaped-brackets": "http://%5B::1%5D:18080/ok.png",
    "/to-empty-label": "http://a..b/x.png",
    "/to-6to4-metadata": "http://[2002:a9fe:a9fe::1]/latest/meta-data/",
    "/to-nat64-metadata": "http://[64:ff9b::a9fe:a9fe]/latest/meta-data/",
    "/to-mapped-loopback": "http://[::ffff:127.0.0.2]/x.png",
}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    flaky_hits: dict[str, int] = {}

    def log_message(self, *args) -> None:  # quiet
        pass

    def _send(self, status: int, body: bytes = b"", content_type: str = "image/jpeg", headers: dict | None = None) -> None:
        send_body(self, status, body, content_type, headers)

    def do_GET(self) -> None:
        self.server.paths.append(self.path)
        self.server.agents.append(self.headers.get("User-Agent", ""))
        path = self.path
        if path == "/robots.txt":
            return self._send(200, b"User-agent: *\nDisallow: /private/\n", "text/plain")
        if path in ("/ok.jpg", "/private-ok.jpg"):
            return self._send(200, GOOD)
        if path == "/missing.jpg":
            return self._send(404, b"not here", "text/plain")
        if path == "/page.html":
            return self._send(200, b"<html></html>", "text/html")
        if path == "/corrupt.jpg":
            return self._send(200, b"\xff\xd8\xff\xe0" + b"\x13" * 500)
        if path == "/bomb.png":
            return self._send(200, png_bomb(), "image/png")
        if path == "/drawing.svg":
            return self._send(200, SVG, "image/svg+xml")
        if path == "/huge-declared.jpg":
            return self._send(200, b"\xff\xd8\xff" + b"\x00" * 200_000)
        if path == "/huge-streamed.jpg":  # no Content-Length: the limit must hold while streaming
            self.send_response(200)
            self.send_header("Content-Type", "image/jpeg")
            self.send_header("Connection", "close")
            self.end_headers()
            for _ in range(100):
                self.wfile.write(b"\x00" * 10_000)
            self.close_connection = True
            return None
        if path == "/slow.jpg":  # drips one byte at a time, past the deadline
            return drip(self, GOOD)
        if path == "/loop-a":
            return self._send(302, headers={"Location": "/loop-b"})
        if path == "/loop-b":
            return self._send(302, headers={"Location": "/loop-a"})
        if path.startswith("/hop"):
            n = int(path[4:])
            return self._send(302, headers={"Location": f"/hop{n + 1}"})
        if path == "/to-ok":
            return self._send(301, headers={"Location": "/ok.jpg"})
        if path == "/to-metadata":
            return self._send(302, headers={"Location": "http://169.254.169.254/latest/meta-data/"})
        if path in REDIRECTS_TO:
            return self._send(302, headers={"Location": REDIRECTS_TO[path]})
        if path == "/to-private-dir":
            return self._send(302, headers={"Location": "/private/x.jpg"})
        if path == "/noai.jpg":
            return self._send(200, GOOD, headers={"X-Robots-Tag": "noai, noimageai"})
        if path == "/otherbot.jpg":
            return self._send(200, GOOD, headers={"X-Robots-Tag": "otherbot: noai"})
        if path == "/flaky.jpg":
            hits = Handler.flaky_hits[path] = Handler.flaky_hits.get(path, 0) + 1
            if hits == 1:
                return self._send(503, b"busy", "text/plain", headers={"Retry-After": "0"})
            return self._send(200, GOOD)
        if path == "/always-500.jpg":
            return self._send(500, b"oops", "text/plain")
        if path == "/busy-for-a-while.jpg":  # asks for 0.5 s, far longer than the backoff
            hits = Handler.flaky_hits[path] = Handler.flaky_hits.get(path, 0) + 1
            if hits == 1:
                return self._send(429, b"slow down", "text/plain", headers={"Retry-After": "0.5"})
            return self._send(200, GOOD)
        if path == "/forbidden-status.jpg":
            return self._send(403, b"no", "text/plain")
        return self._send(404, b"", "text/plain")


@pytest.fixture(scope="module")
def server():
    httpd = start_server(Handler, paths=[], agents=[])
    yield httpd
    stop_server(httpd)


def base(server) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


CONFIG = local_images_config(retries=1, user_agent="mmcurate-tests/1 (+mailto:tests@example.org)")


def fetch(urls, config=CONFIG):
    async def run():
        fetcher = ImageFetcher(config)
        try:
            return await fetcher.fetch_all(urls), fetcher
        finally:
            await fetcher.close()

    return asyncio.run(run())


def reason_of(server, path, config=CONFIG):
    (result,), _ = fetch([base(server) + path], config)
    return result.reason


def test_success_sends_the_configured_user_agent(server):
    (result,), fetcher = fetch([base(server) + "/ok.jpg"])
    assert result.ok and result.payload == GOOD and result.content_type == "image/jpeg"
    assert server.agents[-1] == CONFIG.user_agent
    image = normalize_image(result.url, result.payload, CONFIG)
    assert image.status == STATUS_OK and (image.width, image.height, image.format) == (320, 240, "JPEG")


@pytest.mark.parametrize(
    "path, reason",
    [
        ("/missing.jpg", reasons.IMAGE_HTTP_STATUS),
        ("/forbidden-status.jpg", reasons.IMAGE_HTTP_STATUS),
        ("/always-500.jpg", reasons.IMAGE_HTTP_STATUS),
        ("/page.html", reasons.IMAGE_WRONG_CONTENT_TYPE),
        ("/huge-declared.jpg", reasons.IMAGE_TOO_MANY_BYTES),
        ("/huge-streamed.jpg", reasons.IMAGE_TOO_MANY_BYTES),
        ("/slow.jpg", reasons.IMAGE_TIMEOUT),
        ("/loop-a", reasons.IMAGE_REDIRECT_LOOP),
        ("/hop0", reasons.IMAGE_TOO_MANY_REDIRECTS),
        ("/to-metadata", reasons.IMAGE_REFUSED_ADDRESS),
        ("/private/x.jpg", reasons.IMAGE_ROBOTS_DISALLOWED),
        ("/to-private-dir", reasons.IMAGE_ROBOTS_DISALLOWED),
        ("/noai.jpg", reasons.IMAGE_OPTED_OUT),
    ],
)
def test_hostile_and_failing_servers(server, path, reason):
    started = time.monotonic()
    assert reason_of(server, path) == reason
    assert time.monotonic() - started < 3


def test_a_500_is_retried_then_given_up_a_503_retried_into_success(server):
    before = len(server.paths)
    (result,), _ = fetch([base(server) + "/always-500.jpg"])
    assert result.value == 500 and result.attempts == 2
    assert server.paths[before:].count("/always-500.jpg") == 2
    (result,), _ = fetch([base(server) + "/flaky.jpg"])
    assert result.ok and result.attempts == 2


def test_retry_after_longer_than_the_backoff_is_waited_for(server):
    config = CONFIG.model_copy(update={"deadline_seconds": 3.0})
    started = time.monotonic()
    (result,), _ = fetch([base(server) + "/busy-for-a-while.jpg"], config)
    assert result.ok and result.attempts == 2
    assert time.monotonic() - started >= 0.5  # the server's 0.5 s, not the 0.01 s backoff


def test_a_404_is_not_retried(server):
    (result,), _ = fetch([base(server) + "/missing.jpg"])
    assert result.attempts == 1 and result.value == 404


def test_redirect_followed_and_every_hop_checked(server):
    (result,), _ = fetch([base(server) + "/to-ok"])
    assert result.ok and result.redirects == 1 and result.final_url.endswith("/ok.jpg")


def test_an_opt_out_for_another_agent_does_not_apply(server):
    (result,), _ = fetch([base(server) + "/otherbot.jpg"])
    assert result.ok


def test_loopback_is_refused_without_the_allowlist(server):
    config = CONFIG.model_copy(update={"allowed_networks": ()})
    before = len(server.paths)
    assert reason_of(server, "/ok.jpg", config) == reasons.IMAGE_REFUSED_ADDRESS
    assert len(server.paths) == before  # nothing was sent


def test_robots_txt_is_fetched_once_per_host(server):
    before = len(server.paths)
    results, _ = fetch([base(server) + p for p in ("/ok.jpg", "/otherbot.jpg", "/private/a.jpg", "/private/b.jpg")])
    assert [r.ok for r in results] == [True, True, False, False]
    assert server.paths[before:].count("/robots.txt") == 1


def test_connection_refused_is_data_not_an_exception():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    (result,), _ = fetch([f"http://127.0.0.1:{port}/x.jpg"])
    assert not result.ok
    # robots.txt unreachable means complete disallow (RFC 9309 2.3.1.4)
    assert result.reason == reasons.IMAGE_ROBOTS_DISALLOWED
    config = CONFIG.model_copy(update={"respect_robots": False})
    (result,), _ = fetch([f"http://127.0.0.1:{port}/x.jpg"], config)
    assert result.reason == reasons.IMAGE_CONNECTION_FAILED


def test_unsupported_scheme():
    (result,), _ = fetch(["ftp://127.0.0.1/x.jpg"])
    assert result.reason == reasons.IMAGE_UNSUPPORTED_SCHEME


@pytest.mark.parametrize(
    "path, reason",
    [
        ("/corrupt.jpg", reasons.IMAGE_UNDECODABLE),
        ("/bomb.png", reasons.IMAGE_DECOMPRESSION_BOMB),
        ("/drawing.svg", reasons.IMAGE_SVG),
    ],
)
def test_fetched_but_refused_when_decoded(server, path, reason):
    (result,), _ = fetch([base(server) + path])
    assert result.ok
    assert normalize_image(result.url, result.payload, CONFIG).reason == reason


def test_dns_answers_are_cached():
    async def run():
        fetcher = ImageFetcher(CONFIG.model_copy(update={"respect_robots": False}))
        await fetcher.resolver.resolve("localhost", 80)
        await fetcher.resolver.resolve("localhost", 80)
        await fetcher.close()
        return fetcher.resolver.lookups

    assert asyncio.run(run()) == 1


@pytest.mark.parametrize(
    "a, b",
    [
        ("HTTP://Books.ToScrape.com:80/media/a.jpg", "http://books.toscrape.com/media/a.jpg"),
        ("https://example.org:443/a%2djpg?x=%7e#frag", "https://example.org/a-jpg?x=~"),
        ("http://example.org/caf%c3%a9.jpg", "http://example.org/café.jpg"),
        ("http://example.org/a b.jpg", "http://example.org/a%20b.jpg"),
        ("http://example.org", "http://example.org/"),
        ("http://example.org:8080/x", "http://example.org:8080/x"),
        ("http://bücher.example/x.jpg", "http://xn--bcher-kva.example/x.jpg"),
    ],
)
def test_canonical_url(a, b):
    assert canonical_url(a) == canonical_url(b)


def test_non_default_ports_and_paths_stay_distinct():
    assert canonical_url("http://example.org:8080/x") != canonical_url("http://example.org/x")
    assert canonical_url("http://example.org/a%2Fb") != canonical_url("http://example.org/a/b")


@pytest.mark.parametrize(
    "values, expected",
    [
        (["noai, noimageai"], "noai"),
        (["NoImageAI"], "noimageai"),
        (["otherbot: noai"], ""),
        (["mmcurate: noindex"], "noindex"),
        (["nofollow", "noarchive"], ""),
        (["unavailable_after: 25 Jun 2010 15:00:00 PST"], ""),
    ],
)
def test_x_robots_tag(values, expected):
    assert opted_out(values, "mmcurate", CONFIG.opt_out_directives) == expected


@pytest.mark.parametrize(
    "address, refused",
    [
        ("127.0.0.1", "loopback"),
        ("10.1.2.3", "private"),
        ("169.254.169.254", "private"),
        ("224.0.0.1", "multicast"),
        ("::1", "loopback"),
        ("::ffff:192.168.0.1", "private"),
        ("0.0.0.0", "private"),
        ("93.184.216.34", ""),
    ],
)
def test_refused_addresses(address, refused):
    assert refused_reason(address, []) == refused


# ---------------------------------------------------------------------------------
# Hostile URLs and addresses: rows, never exceptions, never a connection elsewhere
# ---------------------------------------------------------------------------------


@pytest.fixture
def connections(monkeypatch):
    return guard_connections(monkeypatch)


@pytest.mark.parametrize(
    "url",
    [
        "http://a..b/x.png",  # an empty DNS label: IDNA cannot encode it
        "http://127.0.0.1:99999/x.png",  # port out of range
        "http://[::1/x.png",  # unclosed IPv6 literal
        "http://%5B::1%5D:18080/ok.png",  # escaped brackets: not a host name
        "http://" + "a" * 64 + ".example/x.png",  # a label over 63 characters
        "http://exa mple.example/x.png",
        "http:///x.png",  # no host
    ],
)
def test_malformed_urls_fail_as_invalid_url_without_a_connection(url, connections):
    (result,), fetcher = fetch([url])
    assert (result.ok, result.kind, result.reason) == (False, "error", reasons.IMAGE_INVALID_URL)
    assert result.detail
    assert connections == [] and fetcher.requests == 0


@pytest.mark.parametrize("path", ["/to-unclosed-ipv6", "/to-escaped-brackets", "/to-empty-label"])
def test_a_redirect_to_a_malformed_url_is_invalid_url(server, path, connections):
    (result,), _ = fetch([base(server) + path])
    assert result.reason == reasons.IMAGE_INVALID_URL and REDIRECTS_TO[path][:12] in result.detail
    assert {address[0] for address in connections} == {"127.0.0.1"}


@pytest.mark.parametrize(
    "path, why",
    [
        ("/to-6to4-metadata", "6to4 embeds 169.254.169.254"),
        ("/to-nat64-metadata", "reserved"),  # 64:ff9b::/96 itself is IANA-reserved in Python's table
        ("/to-mapped-loopback", "loopback"),
    ],
)
def test_a_redirect_to_an_address_embedding_a_refused_ipv4_is_refused_without_connecting(server, path, why, connections):
    (result,), _ = fetch([base(server) + path])
    assert result.reason == reasons.IMAGE_REFUSED_ADDRESS and why in result.detail
    assert {address[0] for address in connections} == {"127.0.0.1"}


class RobotsRedirectHandler(BaseHTTPRequestHandler):
    """A host whose robots.txt redirects to ``server.robots_location``."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        self.server.paths.append(self.path)
        if self.path == "/robots.txt":
            self.send_response(301)
            self.send_header("Location", self.server.robots_location)
            body = b""
        else:
            self.send_response(200)
            self.send_header("Content-Type", "image/jpeg")
            body = GOOD
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.mark.parametrize(
    "location, fault",
    [
        ("http://a..b/robots.txt", reasons.IMAGE_INVALID_URL),
        ("http://[2002:a9fe:a9fe::1]/robots.txt", reasons.IMAGE_REFUSED_ADDRESS),
        ("http://169.254.169.254/robots.txt", reasons.IMAGE_REFUSED_ADDRESS),
        ("http://[::1/robots.txt", reasons.IMAGE_INVALID_URL),
    ],
)
def test_a_robots_txt_redirect_goes_through_the_same_checks(location, fault, connections):
    httpd = start_server(RobotsRedirectHandler, paths=[], robots_location=location)
    try:
        (result,), fetcher = fetch([f"http://127.0.0.1:{httpd.server_address[1]}/photo.jpg"])
    finally:
        stop_server(httpd)
    # An unreachable robots.txt is a complete disallow (RFC 9309 2.3.1.4); the row says why.
    assert result.reason == reasons.IMAGE_ROBOTS_DISALLOWED
    assert fault in result.detail and "unreachable" in result.detail
    assert httpd.paths == ["/robots.txt"]  # the image itself was never requested
    assert {address[0] for address in connections} == {"127.0.0.1"}
    assert fetcher.requests == 1


def test_an_unforeseen_exception_is_an_error_row_not_a_crash(server, monkeypatch):
    async def broken(self, url, state):
        raise KeyError("something nobody foresaw")

    monkeypatch.setattr(ImageFetcher, "_follow", broken)
    (result,), _ = fetch([base(server) + "/ok.jpg"])
    assert (result.ok, result.kind, result.reason) == (False, "error", "KeyError")


@pytest.mark.parametrize(
    "address, refused",
    [
        ("2002:a9fe:a9fe::1", "private: 6to4 embeds 169.254.169.254"),
        ("2002:0a00:0001::1", "private: 6to4 embeds 10.0.0.1"),
        ("2002:7f00:0001::1", "loopback: 6to4 embeds 127.0.0.1"),
        ("2002:5db8:d822::1", ""),  # 6to4 of a public address
        ("64:ff9b::a9fe:a9fe", "reserved"),  # NAT64 (RFC 6052)
        ("64:ff9b::7f00:1", "reserved"),
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "private"),  # Teredo: 2001::/32 is not global
        ("::a9fe:a9fe", "reserved"),  # IPv4-compatible (deprecated)
        ("2a00:1450::5efe:a9fe:a9fe", "private: ISATAP embeds 169.254.169.254"),
        ("2a00:1450::200:5efe:a00:1", "private: ISATAP embeds 10.0.0.1"),
        ("2a00:1450:4001:81c::200e", ""),  # an ordinary global IPv6 address
    ],
)
def test_ipv6_addresses_embedding_ipv4_are_checked_by_the_embedded_address(address, refused):
    assert refused_reason(address, []) == refused


def test_embedded_ipv4_forms():
    import ipaddress

    from mmcurate.stages.engines.address_guard import embedded_ipv4

    ip = ipaddress.IPv6Address
    assert embedded_ipv4(ip("2002:a9fe:a9fe::1")) == [("6to4", ipaddress.IPv4Address("169.254.169.254"))]
    assert embedded_ipv4(ip("64:ff9b::a9fe:a9fe")) == [("NAT64", ipaddress.IPv4Address("169.254.169.254"))]
    forms = dict(embedded_ipv4(ip("2001:0:4136:e378:8000:63bf:3fff:fdd2")))
    assert forms == {"Teredo server": ipaddress.IPv4Address("65.54.227.120"), "Teredo client": ipaddress.IPv4Address("192.0.2.45")}
    # The allowlist applies to the embedded address too.
    allowed = [ipaddress.ip_network("169.254.0.0/16")]
    assert refused_reason("2002:a9fe:a9fe::1", allowed) == ""


def test_candidates_are_fetched_in_order_until_one_is_retrieved(server):
    from mmcurate.stages.image_retrieval import FetchImagesFn

    b = base(server)
    fn = FetchImagesFn(CONFIG)
    fn.setup()
    try:
        server.paths.clear()
        fn.start_bundle()
        wants = [
            (f"{b}/missing.jpg", (f"{b}/gone-1x.jpg", f"{b}/ok.jpg", f"{b}/never.jpg")),
            (f"{b}/private/2x.jpg", (f"{b}/ok.jpg",)),
            (f"{b}/forbidden-status.jpg", ()),
        ]
        results = list(fn.process(("127.0.0.1", wants)))
        results += [wv.value for wv in fn.finish_bundle()]
    finally:
        fn.teardown()
    assert len(results) == 3
    by_url = {r.url: r for r in results}
    found = by_url[f"{b}/missing.jpg"]
    assert (found.status, found.source_url) == (STATUS_OK, f"{b}/ok.jpg")
    # robots.txt refuses the first candidate: the others would be refused too, so
    # the search ends there with that reason.
    assert by_url[f"{b}/private/2x.jpg"].reason == reasons.IMAGE_ROBOTS_DISALLOWED
    assert by_url[f"{b}/forbidden-status.jpg"].reason == reasons.IMAGE_HTTP_STATUS
    requested = [p for p in server.paths if p != "/robots.txt"]
    assert requested.index("/missing.jpg") < requested.index("/gone-1x.jpg") < requested.index("/ok.jpg")
    assert "/never.jpg" not in requested
    assert requested.count("/ok.jpg") == 1


@pytest.mark.parametrize("retries", [0, 1, 2])
def test_a_500_is_asked_retries_plus_one_times(server, retries):
    config = CONFIG.model_copy(update={"retries": retries})
    before = len(server.paths)
    (result,), _ = fetch([base(server) + "/always-500.jpg"], config)
    assert (result.reason, result.value, result.attempts) == (reasons.IMAGE_HTTP_STATUS, 500, retries + 1)
    assert result.detail == f"HTTP 500 after {retries + 1} attempts"
    assert server.paths[before:].count("/always-500.jpg") == retries + 1
