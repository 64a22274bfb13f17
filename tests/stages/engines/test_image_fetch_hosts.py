"""Host-keyed retrieval on one event loop (``engines.host_fetch.HostScheduler``) and
the DNS cache (``engines.dns_cache``), against servers of our own on 127/8 and a
resolver the tests control."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest
from aiohttp.abc import AbstractResolver

from localnet import local_images_config
from mmcurate.filters import reasons
from mmcurate.stages.engines.address_guard import RefusedAddress
from mmcurate.stages.engines.dns_cache import DnsCache, GuardedDnsResolver
from mmcurate.stages.engines.host_fetch import HostScheduler
from mmcurate.stages.engines.image_fetch import HOST_REFUSED, HOST_TIMEOUT, ImageFetcher, politeness_host
from webhosts import Web

CONFIG = local_images_config(allowed_networks=("127.0.0.0/8",), retries=1, deadline_seconds=2.0)


def schedule(config, wants_by_host: dict[str, list]) -> tuple[list, ImageFetcher, HostScheduler]:
    """Every want through one scheduler; [(seconds since start, want, fetched)] in
    the order they were reported."""

    async def run():
        done: list = []
        finished = asyncio.Event()
        total = sum(len(w) for w in wants_by_host.values())
        started = time.monotonic()
        fetcher = ImageFetcher(config)

        def on_done(tag, want, fetched):
            done.append((time.monotonic() - started, want, fetched))
            if len(done) == total:
                finished.set()

        scheduler = HostScheduler(
            fetcher, config.concurrency, config.per_host_concurrency, config.host_give_up_after, on_done
        )
        for host, wants in wants_by_host.items():
            scheduler.submit(host, wants)
        try:
            await asyncio.wait_for(finished.wait(), 30)
        finally:
            await scheduler.close()
            await fetcher.close()
        return done, fetcher, scheduler

    return asyncio.run(run())


@pytest.fixture
def web():
    web = Web(hosts=3, delay=0.1)
    yield web
    web.stop()


def test_at_most_per_host_requests_in_flight_per_host(web):
    wants = {web.host(h): [(web.url(h, f"/img/{i}.jpg"), ()) for i in range(16)] for h in range(2)}
    done, _, scheduler = schedule(CONFIG, wants)
    assert all(f.ok for _, _, f in done) and len(done) == 32
    # Exactly the limit: never above it, and the scheduler does use it.
    assert web.in_flight.peak == {web.host(0): 4, web.host(1): 4}
    assert web.in_flight.total_peak == 8
    assert scheduler.peak_running == 8


def test_the_overall_limit_holds_over_hosts(web):
    config = CONFIG.model_copy(update={"concurrency": 3})
    wants = {web.host(h): [(web.url(h, f"/img/{i}.jpg"), ()) for i in range(6)] for h in range(3)}
    done, _, scheduler = schedule(config, wants)
    assert len(done) == 18 and scheduler.peak_running == 3 and web.in_flight.total_peak <= 3


def test_a_slow_url_does_not_hold_the_others(web):
    """One URL hangs past the deadline; 20 others on the same host finish and are
    reported long before it ends."""
    host = web.host(0)
    wants = [(web.url(0, "/hang/1.jpg"), ())] + [(web.url(0, f"/img/{i}.jpg"), ()) for i in range(20)]
    config = CONFIG.model_copy(update={"read_timeout": 5.0})  # the deadline ends it
    done, _, _ = schedule(config, {host: wants})
    hung = next(t for t, w, f in done if "/hang/" in w[0])
    fast = [t for t, w, f in done if "/img/" in w[0]]
    assert [f.reason for _, w, f in done if "/hang/" in w[0]] == [reasons.IMAGE_TIMEOUT]
    assert len(fast) == 20 and max(fast) < 1.5 < config.deadline_seconds <= hung
    assert [w[0] for _, w, _ in done][-1].endswith("/hang/1.jpg")


def test_robots_txt_is_fetched_once_per_host(web):
    wants = {
        web.host(h): [(web.url(h, f"/img/{i}.jpg"), ()) for i in range(8)] + [(web.url(h, "/private/x.jpg"), ())]
        for h in range(3)
    }
    done, _, _ = schedule(CONFIG, wants)
    assert web.robots == {web.host(h): 1 for h in range(3)}
    refused = sorted(w[0] for _, w, f in done if f.reason == reasons.IMAGE_ROBOTS_DISALLOWED)
    assert refused == sorted(web.url(h, "/private/x.jpg") for h in range(3))


def test_retry_after_pauses_the_whole_host_and_only_that_host(web):
    """/busy answers 429 with Retry-After: 1 once: no request at all goes to that host
    for the second after it (its other URLs wait too), while another host goes on."""
    busy, other = web.host(0), web.host(1)
    wants = {
        busy: [(web.url(0, "/busy/a.jpg"), ())] + [(web.url(0, f"/img/{i}.jpg"), ()) for i in range(12)],
        other: [(web.url(1, f"/img/{i}.jpg"), ()) for i in range(24)],
    }
    config = CONFIG.model_copy(update={"deadline_seconds": 5.0, "per_host_concurrency": 1})
    done, _, _ = schedule(config, wants)
    assert all(f.ok for _, _, f in done) and len(done) == 37
    (refused_at,) = [t for t, p in web.requests(busy, "/busy/") if t == min(t for t, _ in web.requests(busy, "/busy/"))]
    after = [t - refused_at for t, p in web.requests(busy) if t > refused_at]
    assert after and min(after) >= 0.95  # the host's next request of any URL waited out the pause
    during = [t for t, _ in web.requests(other, "/img/") if refused_at < t < refused_at + 0.9]
    assert len(during) >= 1  # the other host was not paused (how many it served meanwhile depends on the machine's load)


def test_a_host_refusing_connections_is_given_up_after_three_failures():
    with socket.socket() as s:
        s.bind(("127.0.0.9", 0))
        port = s.getsockname()[1]  # nothing listens there once the block ends
    config = CONFIG.model_copy(update={"respect_robots": False, "per_host_concurrency": 1, "retries": 0})
    wants = [(f"http://127.0.0.9:{port}/{i}.jpg", ()) for i in range(10)]
    started = time.monotonic()
    done, fetcher, scheduler = schedule(config, {"127.0.0.9": wants})
    outcomes = [(f.reason, f.host_fault) for _, _, f in done]
    assert outcomes == [(reasons.IMAGE_CONNECTION_FAILED, HOST_REFUSED)] * 3 + [(reasons.IMAGE_HOST_GIVEN_UP, "")] * 7
    assert fetcher.requests == 3 and "127.0.0.9 failed 3 times in a row" in done[-1][2].detail
    assert set(scheduler.given_up) == {"127.0.0.9"}
    assert time.monotonic() - started < 2


def test_a_host_that_times_out_is_given_up_and_an_answer_resets_the_count(web):
    config = CONFIG.model_copy(update={"per_host_concurrency": 1, "deadline_seconds": 0.4, "retries": 0})
    host = web.host(0)
    paths = ["/hang/1", "/hang/2", "/missing/1", "/hang/3", "/hang/4", "/hang/5", "/img/1.jpg", "/img/2.jpg"]
    done, _, _ = schedule(config, {host: [(web.url(0, p), ()) for p in paths]})
    got = [(w[0].split(":", 2)[2].split("/", 1)[1], f.reason, f.host_fault) for _, w, f in done]
    assert got == [
        ("hang/1", reasons.IMAGE_TIMEOUT, HOST_TIMEOUT),
        ("hang/2", reasons.IMAGE_TIMEOUT, HOST_TIMEOUT),
        ("missing/1", reasons.IMAGE_HTTP_STATUS, ""),  # an answer: the count starts again
        ("hang/3", reasons.IMAGE_TIMEOUT, HOST_TIMEOUT),
        ("hang/4", reasons.IMAGE_TIMEOUT, HOST_TIMEOUT),
        ("hang/5", reasons.IMAGE_TIMEOUT, HOST_TIMEOUT),
        ("img/1.jpg", reasons.IMAGE_HOST_GIVEN_UP, ""),
        ("img/2.jpg", reasons.IMAGE_HOST_GIVEN_UP, ""),
    ]


def test_giving_up_can_be_switched_off():
    with socket.socket() as s:
        s.bind(("127.0.0.9", 0))
        port = s.getsockname()[1]
    config = CONFIG.model_copy(update={"respect_robots": False, "host_give_up_after": 0, "retries": 0})
    done, fetcher, _ = schedule(config, {"127.0.0.9": [(f"http://127.0.0.9:{port}/{i}.jpg", ()) for i in range(6)]})
    assert [f.reason for _, _, f in done] == [reasons.IMAGE_CONNECTION_FAILED] * 6 and fetcher.requests == 6


@pytest.mark.parametrize(
    "url, host",
    [
        ("http://Img.Example.org/a.jpg", "img.example.org"),
        ("https://img.example.org:8443/b.jpg", "img.example.org"),
        ("http://user@img.example.org./c.jpg", "img.example.org"),
        ("http://[::1]:8080/x.jpg", "::1"),
        ("http://[::1/x.png", ""),
    ],
)
def test_politeness_host(url, host):
    assert politeness_host(url) == host


# ---------------------------------------------------------------------------------
# DNS: a cache with negative answers and bounded lookups, over a resolver we control
# ---------------------------------------------------------------------------------


class ScriptedResolver(AbstractResolver):
    """Answers ``names`` (name -> address) after ``pause`` seconds, NXDOMAIN for any
    other name; counts lookups and the most running at once."""

    def __init__(self, names: dict[str, str], pause: float = 0.05):
        self.names = names
        self.pause = pause
        self.calls: list[str] = []
        self.running = 0
        self.peak = 0

    async def resolve(self, host, port=0, family=socket.AF_INET):
        self.calls.append(host)
        self.running += 1
        self.peak = max(self.peak, self.running)
        try:
            await asyncio.sleep(self.pause)
        finally:
            self.running -= 1
        if host not in self.names:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        address = self.names[host]
        return [{"hostname": host, "host": address, "port": port, "family": socket.AF_INET, "proto": 6, "flags": 4}]

    async def close(self):
        pass


def test_nxdomain_is_remembered():
    async def run():
        resolver = ScriptedResolver({})
        cache = DnsCache(resolver, ttl=60, negative_ttl=60)
        for _ in range(3):
            with pytest.raises(OSError, match="Name or service not known"):
                await cache.resolve("nowhere.example", 80)
        return resolver.calls, cache.lookups

    assert asyncio.run(run()) == (["nowhere.example"], 1)


def test_a_failure_is_forgotten_after_its_ttl():
    async def run():
        resolver = ScriptedResolver({}, pause=0)
        cache = DnsCache(resolver, negative_ttl=0.05)
        with pytest.raises(OSError):
            await cache.resolve("later.example", 80)
        resolver.names["later.example"] = "93.184.216.34"
        with pytest.raises(OSError):  # still remembered
            await cache.resolve("later.example", 80)
        await asyncio.sleep(0.06)
        return [a["host"] for a in await cache.resolve("later.example", 80)], resolver.calls

    hosts, calls = asyncio.run(run())
    assert hosts == ["93.184.216.34"] and calls == ["later.example", "later.example"]


def test_answers_are_cached_and_concurrent_askers_share_one_lookup():
    async def run():
        resolver = ScriptedResolver({"img.example": "93.184.216.34"})
        cache = DnsCache(resolver)
        answers = await asyncio.gather(*(cache.resolve("img.example", 443) for _ in range(10)))
        again = await cache.resolve("IMG.example", 443)
        return resolver.calls, {a[0]["host"] for a in answers}, again[0]["host"]

    calls, hosts, again = asyncio.run(run())
    assert calls == ["img.example"] and hosts == {"93.184.216.34"} and again == "93.184.216.34"


def test_lookups_run_at_most_concurrency_at_once():
    async def run():
        names = {f"h{i}.example": f"93.184.216.{i + 1}" for i in range(20)}
        resolver = ScriptedResolver(names, pause=0.02)
        cache = DnsCache(resolver, concurrency=3)
        await asyncio.gather(*(cache.resolve(name, 80) for name in names))
        return resolver.peak, cache.peak_in_flight, len(resolver.calls)

    assert asyncio.run(run()) == (3, 3, 20)


def test_a_caller_giving_up_does_not_cancel_the_shared_lookup():
    async def run():
        resolver = ScriptedResolver({"slow.example": "93.184.216.34"}, pause=0.2)
        cache = DnsCache(resolver)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(cache.resolve("slow.example", 80), 0.05)
        answer = await cache.resolve("slow.example", 80)
        return answer[0]["host"], resolver.calls

    assert asyncio.run(run()) == ("93.184.216.34", ["slow.example"])


def test_the_address_guard_checks_cached_answers_too():
    async def run():
        resolver = ScriptedResolver({"inside.example": "10.0.0.7", "outside.example": "93.184.216.34"})
        guarded = GuardedDnsResolver((), DnsCache(resolver))
        refusals = []
        for _ in range(2):
            with pytest.raises(RefusedAddress) as exc:
                await guarded.resolve("inside.example", 80)
            refusals.append(str(exc.value))
        allowed = await GuardedDnsResolver(("10.0.0.0/8",), guarded.cache).resolve("inside.example", 80)
        outside = await guarded.resolve("outside.example", 80)
        return refusals, allowed[0]["host"], outside[0]["host"], resolver.calls

    refusals, allowed, outside, calls = asyncio.run(run())
    assert refusals == ["inside.example resolves to 10.0.0.7 (private)"] * 2
    assert (allowed, outside) == ("10.0.0.7", "93.184.216.34")
    assert calls == ["inside.example", "outside.example"]


def test_the_fetcher_resolves_through_the_cache_and_remembers_a_missing_host():
    """A name that does not resolve fails each of its URLs as connection_failed, with
    one lookup for all of them."""
    config = CONFIG.model_copy(update={"respect_robots": False})

    async def run():
        fetcher = ImageFetcher(config)
        resolver = ScriptedResolver({})
        fetcher.resolver.cache = DnsCache(resolver)
        try:
            results = await fetcher.fetch_all([f"http://nowhere.invalid/{i}.jpg" for i in range(5)])
        finally:
            await fetcher.close()
        return [r.reason for r in results], resolver.calls, fetcher.requests

    got, calls, requests = asyncio.run(run())
    assert got == [reasons.IMAGE_CONNECTION_FAILED] * 5 and calls == ["nowhere.invalid"] and requests == 0


# ---------------------------------------------------------------------------------
# The order of the work: robots.txt first, the host with the most work left first
# ---------------------------------------------------------------------------------


class StubFetcher:
    """Answers every URL after ``seconds``, robots.txt too; records when each URL and
    robots.txt started and how many URLs were in progress."""

    def __init__(self, seconds: float = 0.02):
        self.seconds = seconds
        self.started: list[tuple[float, str]] = []
        self.prepared: dict[str, float] = {}
        self.running = 0

    def host_delay(self, host: str) -> float:
        return 0.0

    async def prepare_host(self, url: str) -> None:
        await asyncio.sleep(self.seconds)
        self.prepared[politeness_host(url)] = asyncio.get_running_loop().time()

    async def fetch_first(self, url, candidates=()):
        from mmcurate.stages.engines.image_fetch import Fetched

        self.started.append((asyncio.get_running_loop().time(), url))
        await asyncio.sleep(self.seconds)
        return Fetched(url, True, b"x", attempts=1)


def scheduled(fetcher: StubFetcher, concurrency: int, per_host: int, wants_by_host: dict[str, list]) -> list[str]:
    async def run():
        total = sum(len(w) for w in wants_by_host.values())
        done: list[str] = []
        finished = asyncio.Event()

        def on_done(tag, want, fetched):
            done.append(want[0])
            if len(done) == total:
                finished.set()

        scheduler = HostScheduler(fetcher, concurrency, per_host, 3, on_done)
        for host, wants in wants_by_host.items():
            scheduler.submit(host, wants)
        await asyncio.wait_for(finished.wait(), 10)
        return done

    return asyncio.run(run())


def test_no_url_of_a_host_starts_before_its_robots_txt_is_read():
    fetcher = StubFetcher(0.03)
    wants = {f"h{h}.example": [(f"http://h{h}.example/{i}.jpg", ()) for i in range(3)] for h in range(4)}
    scheduled(fetcher, 8, 4, wants)
    assert set(fetcher.prepared) == set(wants)
    for when, url in fetcher.started:
        assert when >= fetcher.prepared[politeness_host(url)]


def test_the_host_with_the_most_work_left_gets_the_slots_first():
    """Two slots; one host with 8 URLs, four with one each, all as fast: the big host
    sets the run's length, so it is kept at its limit until it has as little left as
    the others; taking turns would start the small ones first and end later. (Answers
    of 0.2 s: the rule weighs measured times, which a loaded machine's jitter of tens
    of milliseconds must not reorder.)"""
    fetcher = StubFetcher(0.2)
    wants = {"big.example": [(f"http://big.example/{i}.jpg", ()) for i in range(8)]}
    wants |= {f"small{h}.example": [(f"http://small{h}.example/1.jpg", ())] for h in range(4)}
    scheduled(fetcher, 2, 2, wants)
    first = [politeness_host(url) for _, url in sorted(fetcher.started)[:6]]
    assert first == ["big.example"] * 6


def test_no_url_starts_while_max_unclaimed_results_wait_for_their_receiver():
    """A receiver that takes nothing: with max_unclaimed=3 (and one slot, so that none
    is in progress when the third is reported), three URLs are fetched and no more
    start until it claims one; then exactly one more starts."""

    async def run():
        fetcher = StubFetcher(0.01)
        reported: list[str] = []
        scheduler = HostScheduler(fetcher, 1, 1, 3, lambda tag, want, f: reported.append(want[0]), max_unclaimed=3)
        scheduler.submit("h.example", [(f"http://h.example/{i}.jpg", ()) for i in range(10)])
        await asyncio.sleep(0.2)
        before = (len(fetcher.started), len(reported))
        scheduler.claim(1)
        await asyncio.sleep(0.2)
        after = (len(fetcher.started), len(reported))
        await scheduler.close()
        return before, after

    before, after = asyncio.run(run())
    assert before == (3, 3) and after == (4, 4)
