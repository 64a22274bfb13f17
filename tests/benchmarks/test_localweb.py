"""The local web of benchmarks/bench_web.py (benchmarks/localweb.py): the planned web
has the shape it promises, and the server answers each kind of URL as planned and
counts what a benchmark checks (peak requests in flight per host, robots.txt
fetches, requests for disallowed paths)."""

from __future__ import annotations

import io
import ssl
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import localweb  # noqa: E402
from localweb import (  # noqa: E402
    KIND_ERROR_ONCE,
    KIND_HANG,
    KIND_NOT_FOUND,
    KIND_OK,
    KIND_REFUSED,
    KIND_ROBOTS,
    LocalWeb,
    Shape,
    plan_web,
)


def test_the_planned_web_has_the_promised_shape():
    web = plan_web(20_000, 1_000, seed=1, http_port=20001, https_port=20002)
    assert len(web.urls) == 20_000 and len(web.hosts) == 1_000
    assert len({h.address for h in web.hosts}) == 1_000
    assert all(h.address.startswith("127.") and not h.address.startswith("127.0.") for h in web.hosts)
    assert len({u.url for u in web.urls}) == 20_000
    # Zipf-like: busiest first, every host at least one URL, a heavy head.
    per_host = web.urls_per_host()
    counts = [per_host[k] for k in range(1_000)]
    assert counts == sorted(counts, reverse=True) and counts[-1] >= 1
    assert counts[0] > 50 * counts[-1]
    assert sum(h.https for h in web.hosts) >= 500
    latencies = sorted(h.latency for h in web.hosts)
    assert 0.12 < latencies[500] < 0.18  # median ~150 ms
    assert latencies[-1] > 1.0  # a slow tail of seconds
    kinds = web.kinds()
    assert set(kinds) == {KIND_OK, KIND_NOT_FOUND, KIND_ERROR_ONCE, KIND_HANG, KIND_REFUSED, KIND_ROBOTS}
    assert kinds[KIND_OK] > 0.85 * 20_000
    # Every URL of a refusing host is refused; robots-disallowed URLs sit under the prefix.
    for u in web.urls:
        assert (u.kind == KIND_REFUSED) == web.hosts[u.host].refuses
        assert (u.kind == KIND_ROBOTS) == u.path.startswith(localweb.DISALLOWED_PREFIX)
        assert not (u.kind == KIND_ROBOTS and not web.hosts[u.host].disallows)
        assert u.url == web.hosts[u.host].origin(20001, 20002) + u.path
    # The slow and refusing hosts are among the less busy half; CDNs at most the median.
    assert all(k >= 500 for k, h in enumerate(web.hosts) if h.refuses or h.latency > 1.0)
    assert all(web.hosts[k].latency <= 0.150 for k in range(10))


def test_the_same_seed_gives_the_same_web_and_another_seed_another():
    one = plan_web(500, 50, seed=3, http_port=1, https_port=2)
    assert one == plan_web(500, 50, seed=3, http_port=1, https_port=2)
    assert one.urls != plan_web(500, 50, seed=4, http_port=1, https_port=2).urls


def test_the_politeness_floor_is_the_slowest_host_at_its_limit():
    web = plan_web(400, 40, seed=2, http_port=1, https_port=2)
    requests, hangs = Counter(), Counter()
    for u in web.urls:
        if u.kind == KIND_HANG:
            hangs[u.host] += 1
        elif u.kind not in (KIND_ROBOTS, KIND_REFUSED):
            requests[u.host] += 2 if u.kind == KIND_ERROR_ONCE else 1
    for deadline in (0.0, 100.0):
        floor, host = web.politeness_floor(4, deadline)
        each = {k: ((requests[k] + 1) * web.hosts[k].latency + hangs[k] * deadline) / 4 for k in set(requests) | set(hangs)}
        assert floor == pytest.approx(each[host]) == pytest.approx(max(each.values()))
    # Hanging URLs held to a long deadline move the floor to a host that has them.
    assert sum(hangs.values()) and hangs[web.politeness_floor(4, 100.0)[1]] > 0
    assert web.politeness_floor(4, 100.0)[0] > web.politeness_floor(4)[0]


def test_too_few_urls_for_the_hosts_is_an_error():
    with pytest.raises(ValueError, match="cannot give each of 10 hosts one"):
        plan_web(5, 10, seed=1)


def test_a_comment_changes_the_bytes_not_the_pixels():
    image = localweb.base_images(1)[0]
    marked = localweb.with_comment(image, b"http://127.10.0.1/img/1.jpg")
    assert marked != image and b"http://127.10.0.1/img/1.jpg" in marked
    assert Image.open(io.BytesIO(marked)).tobytes() == Image.open(io.BytesIO(image)).tobytes()
    with pytest.raises(ValueError):
        localweb.with_comment(b"GIF89a", b"x")


# A small web with every kind of URL, fast hosts, served for the tests below.
SHAPE = Shape(latency_median=0.05, latency_sigma=0.1, slow_hosts=0.0, https_hosts=0.5, refusing_hosts=0.2,
              disallowing_hosts=0.5, disallowed_urls=0.3, not_found=0.15, error_once=0.15, hang=0.1, quiet_half=1.0)


@pytest.fixture(scope="module")
def served():
    http_port, https_port = localweb.free_ports(2)
    web = plan_web(120, 10, seed=5, http_port=http_port, https_port=https_port, shape=SHAPE)
    with LocalWeb(web, processes=2, images=localweb.base_images(4)) as server:
        context = ssl.create_default_context()
        context.load_verify_locations(cadata=server.authority.cert_pem.decode())
        yield web, server, context


def _get(url: str, context: ssl.SSLContext, timeout: float = 5.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout, context=context) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _first(web, kind: str, https=None):
    for u in web.urls:
        if u.kind == kind and (https is None or web.hosts[u.host].https == https):
            return u
    raise AssertionError(f"the test web has no {kind} URL")


def test_each_kind_of_url_is_answered_as_planned(served):
    web, server, context = served
    server.reset()
    for https in (False, True):
        ok = _first(web, KIND_OK, https)
        status, body = _get(ok.url, context)
        assert status == 200 and ok.url.encode() in body
        assert Image.open(io.BytesIO(body)).size in localweb.IMAGE_SIZES
    assert _get(_first(web, KIND_NOT_FOUND).url, context)[0] == 404
    once = _first(web, KIND_ERROR_ONCE)
    assert [_get(once.url, context)[0] for _ in range(3)] == [500, 200, 200]
    server.reset()  # armed again
    assert _get(once.url, context)[0] == 500
    with pytest.raises(urllib.error.URLError, match="refused"):
        _get(_first(web, KIND_REFUSED).url, context)
    # A disallowed URL is served to whoever ignores robots.txt, and counted.
    robots = _first(web, KIND_ROBOTS)
    assert _get(robots.url, context)[0] == 200
    stats = server.stats()
    assert stats.disallowed_requests() == 1
    assert stats.statuses == Counter({500: 1, 200: 1})


def test_https_needs_the_test_authority(served):
    web, _, _ = served
    with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
        _get(_first(web, KIND_OK, https=True).url, ssl.create_default_context())


def test_robots_txt_disallows_the_prefix_on_disallowing_hosts_only(served):
    web, server, context = served
    server.reset()
    for k, host in enumerate(web.hosts):
        if host.refuses:
            continue
        status, body = _get(host.origin(web.http_port, web.https_port) + "/robots.txt", context)
        assert status == 200
        assert (f"Disallow: {localweb.DISALLOWED_PREFIX}".encode() in body) == host.disallows
    stats = server.stats()
    listening = [h.address for h in web.hosts if not h.refuses]
    assert {a: c[1] for a, c in stats.hosts.items()} == {a: 1 for a in listening}
    assert stats.robots_fetches()[0] == 1


def test_time_to_first_byte_and_peak_in_flight_per_host(served):
    web, server, context = served
    server.reset()
    host = next(k for k, h in enumerate(web.hosts) if not h.refuses and sum(
        1 for u in web.urls if u.host == k and u.kind == KIND_OK) >= 3)
    urls = [u.url for u in web.urls if u.host == host and u.kind == KIND_OK][:3]
    start = time.perf_counter()
    assert _get(urls[0], context)[0] == 200
    assert time.perf_counter() - start >= web.hosts[host].latency
    server.reset()
    with ThreadPoolExecutor(3) as pool:
        assert [s for s, _ in pool.map(lambda u: _get(u, context), urls)] == [200, 200, 200]
    stats = server.stats()
    address = web.hosts[host].address
    assert stats.hosts[address][0] == 3 and stats.hosts[address][3] in (2, 3)  # overlapping, as the threads allow
    assert stats.peak_in_flight() == (stats.hosts[address][3], address)
    assert stats.cpu_seconds > 0 and stats.wall_seconds > 0
    assert 0 <= stats.loop_lag_p99 <= stats.max_loop_lag


def test_a_hanging_url_holds_its_request_until_the_client_leaves(served):
    web, server, context = served
    server.reset()
    hang = _first(web, KIND_HANG)
    start = time.perf_counter()
    with pytest.raises((TimeoutError, urllib.error.URLError)):
        _get(hang.url, context, timeout=0.5)
    assert time.perf_counter() - start < 3
    time.sleep(0.3)  # the server notices the closed connection
    stats = server.stats()
    address = web.hosts[hang.host].address
    assert stats.hosts[address][3] == 1
    assert stats.statuses == Counter({0: 1})  # the client left before an answer; nothing in flight now
    ok = next(u for u in web.urls if u.host == hang.host and u.kind == KIND_OK)
    assert _get(ok.url, context)[0] == 200
    assert server.stats().hosts[address][3] == 1  # the hanging request no longer counts as in flight
