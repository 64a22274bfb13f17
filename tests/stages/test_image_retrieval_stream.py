"""``RetrieveImages`` over HTTP as the stage runs it: URLs grouped by host, fetched
on ``FetchImagesFn``'s long-lived event loop, each result emitted when it is done,
bodies staged in ``fetched_dir`` and not fetched again; against servers of our own
on 127/8 (``webhosts``)."""

from __future__ import annotations

import hashlib
import time

import apache_beam as beam
import pytest
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from localnet import local_images_config
from mmcurate.filters import reasons
from mmcurate.stages.image_retrieval import FetchImagesFn, RetrieveImages
from webhosts import GOOD, Web

CONFIG = local_images_config(allowed_networks=("127.0.0.0/8",), min_side=100, deadline_seconds=2.0, read_timeout=5.0)


@pytest.fixture
def web():
    web = Web(hosts=3, delay=0.05)
    yield web
    web.stop()


def run_fn(fn: FetchImagesFn, elements) -> list[tuple[float, str, object]]:
    """One bundle through the DoFn: (seconds since start, "process" or "finish",
    result) in the order they were emitted."""
    out = []
    started = time.monotonic()
    fn.setup()
    try:
        fn.start_bundle()
        for element in elements:
            for result in fn.process(element):
                out.append((time.monotonic() - started, "process", result))
        for windowed in fn.finish_bundle():
            out.append((time.monotonic() - started, "finish", windowed.value))
    finally:
        fn.teardown()
    return out


def test_results_are_emitted_as_they_finish_not_after_the_slowest(web):
    """A URL that hangs until the deadline and 20 that do not, on one host and on
    another: the 20 are emitted long before the hanging one ends."""
    wants = [(web.url(0, "/hang/1.jpg"), ())] + [(web.url(0, f"/img/{i}.jpg"), ()) for i in range(10)]
    others = [(web.url(1, f"/img/{i}.jpg"), ()) for i in range(10)]
    out = run_fn(FetchImagesFn(CONFIG), [(web.host(0), wants), (web.host(1), others)])
    assert len(out) == 21
    hung = [t for t, _, r in out if "/hang/" in r.url]
    fast = [t for t, _, r in out if "/img/" in r.url and r.ok]
    assert len(fast) == 20 and max(fast) < 1.5 < CONFIG.deadline_seconds <= hung[0]
    assert out[-1][2].reason == reasons.IMAGE_TIMEOUT


def test_back_pressure_bounds_the_urls_outstanding(web):
    """With max_pending_urls=4, process() takes no fifth URL before a result is back:
    it emits results itself while it waits, and finish_bundle is left fewer than 4."""
    config = CONFIG.model_copy(update={"max_pending_urls": 4, "batch_size": 2})
    wants = [(web.url(0, f"/img/{i}.jpg"), ()) for i in range(30)]
    out = run_fn(FetchImagesFn(config), [(web.host(0), wants)])
    assert sorted(r.url for _, _, r in out) == sorted(u for u, _ in wants) and all(r.ok for _, _, r in out)
    assert sum(1 for _, where, _ in out if where == "process") >= 26
    assert sum(1 for _, where, _ in out if where == "finish") <= 4


def _retrieve(config, wants, expected, fetched_dir=None) -> dict[str, int]:
    """Runs the wants through ``RetrieveImages``, asserts its (url, status, reason,
    image_id) rows equal ``expected``; the pipeline's counters."""
    p = TestPipeline()
    results = (p | "Wants" >> beam.Create(wants), p | "Captured" >> beam.Create([])) | RetrieveImages(
        config, fetched_dir=fetched_dir
    )
    assert_that(results | beam.Map(lambda r: (r.url, r.status, r.reason, r.image_id)), equal_to(expected))
    outcome = p.run()
    outcome.wait_until_finish()
    return {
        c.key.metric.name: c.committed
        for c in outcome.metrics().query(MetricsFilter().with_namespace("images"))["counters"]
    }


GOOD_ID = hashlib.sha256(GOOD).hexdigest()


def test_robots_txt_once_per_host_and_the_per_host_limit_through_the_stage(web):
    wants = [(web.url(h, f"/img/{i}.jpg"), ()) for h in range(3) for i in range(12)]
    private = web.url(1, "/private/a.jpg")
    expected = [(u, "ok", "", GOOD_ID) for u, _ in wants] + [(private, "failed", reasons.IMAGE_ROBOTS_DISALLOWED, None)]
    counters = _retrieve(CONFIG, wants + [(private, ())], expected)
    assert web.robots == {web.host(h): 1 for h in range(3)}
    assert max(web.in_flight.peak.values()) <= CONFIG.per_host_concurrency
    assert counters["http.requests"] == 36 + 3


def test_staged_bodies_are_not_fetched_again(web, tmp_path):
    fetched = tmp_path / "fetched"
    images = [web.url(h, f"/img/{i}.jpg") for h in range(2) for i in range(5)]
    missing = web.url(0, "/missing/x.jpg")
    wants = [(u, ()) for u in images + [missing]]
    expected = [(u, "ok", "", GOOD_ID) for u in images] + [(missing, "failed", reasons.IMAGE_HTTP_STATUS, None)]
    counters = _retrieve(CONFIG, wants, expected, fetched_dir=str(fetched))
    assert counters["http.requests"] == 11 + 2 and "http.from_staging" not in counters
    # One file per fetched body: <dir>/<host>/<sha256 of the URL>, written whole.
    staged = {hashlib.sha256(u.encode()).hexdigest(): u for u in images}
    files = sorted(p for p in fetched.rglob("*") if p.is_file())
    assert files == sorted(fetched / politeness(u) / digest for digest, u in staged.items())
    assert all(f.read_bytes().endswith(GOOD) for f in files)
    # The rerun (a resumed run) asks the servers for nothing it has; a file lost is
    # fetched again, and so is the URL that failed.
    web.log.clear()
    files[0].unlink()
    counters = _retrieve(CONFIG, wants, expected, fetched_dir=str(fetched))
    asked = sorted(f"http://{h}:{_port(web, h)}{p}" for _, h, p in web.log if p != "/robots.txt")
    assert asked == sorted([missing, staged[files[0].name]])
    assert counters["http.from_staging"] == 9


def politeness(url: str) -> str:
    return url.split("//", 1)[1].split(":", 1)[0]


def _port(web, host: str) -> int:
    return next(s.server_address[1] for s in web.servers if s.server_address[0] == host)


def test_a_staged_file_that_is_not_ours_is_fetched_again(web, tmp_path):
    url = web.url(0, "/img/1.jpg")
    stray = tmp_path / web.host(0) / hashlib.sha256(url.encode()).hexdigest()
    stray.parent.mkdir(parents=True)
    stray.write_bytes(b"not a staged fetch")
    counters = _retrieve(CONFIG, [(url, ())], [(url, "ok", "", GOOD_ID)], fetched_dir=str(tmp_path))
    assert counters["http.requests"] == 2 and "http.from_staging" not in counters
    assert stray.read_bytes().endswith(GOOD)


@pytest.mark.slow
def test_two_worker_processes_still_fetch_robots_txt_once_per_host():
    """Keyed by host, each host's URLs meet in one worker process: two workers do not
    each fetch its robots.txt, and neither sends a host more than its limit."""
    from apache_beam.options.pipeline_options import PipelineOptions

    web = Web(hosts=6, delay=0.05)
    try:
        wants = [(web.url(h, f"/img/{i}.jpg"), ()) for h in range(6) for i in range(8)]
        options = PipelineOptions(["--direct_num_workers=2", "--direct_running_mode=multi_processing"])
        p = TestPipeline(options=options)
        results = (p | "Wants" >> beam.Create(wants), p | "Captured" >> beam.Create([])) | RetrieveImages(CONFIG)
        assert_that(results | beam.Map(lambda r: (r.url, r.status)), equal_to([(u, "ok") for u, _ in wants]))
        p.run().wait_until_finish()
        assert web.robots == {web.host(h): 1 for h in range(6)}
        assert max(web.in_flight.peak.values()) <= CONFIG.per_host_concurrency
    finally:
        web.stop()


def test_staging_on_an_object_store_reads_its_files_several_at_once(web, tmp_path, monkeypatch):
    """fetched_dir on an object store (``mmfake://``, as gs:// behaves: no directories,
    a rename is a copy): the rerun fetches nothing and reads the staged files on
    several threads at once, not one after another in the Beam thread."""
    import threading

    import fakefs

    fakefs.FakeObjectStore.root = tmp_path
    images = [web.url(h, f"/img/{i}.jpg") for h in range(2) for i in range(8)]
    wants = [(u, ()) for u in images]
    expected = [(u, "ok", "", GOOD_ID) for u in images]
    root = fakefs.PREFIX + "bucket/fetched"
    _retrieve(CONFIG, wants, expected, fetched_dir=root)
    assert len([p for p in (tmp_path / "bucket" / "fetched").rglob("*") if p.is_file()]) == 16

    lock, now, peak = threading.Lock(), [0], [0]
    real_open = fakefs.FakeObjectStore.open

    def slow_open(self, path, *args, **kwargs):
        with lock:
            now[0] += 1
            peak[0] = max(peak[0], now[0])
        time.sleep(0.1)
        with lock:
            now[0] -= 1
        return real_open(self, path, *args, **kwargs)

    monkeypatch.setattr(fakefs.FakeObjectStore, "open", slow_open)
    web.log.clear()
    counters = _retrieve(CONFIG, wants, expected, fetched_dir=root)
    assert [p for _, _, p in web.log if p != "/robots.txt"] == []
    assert counters["http.from_staging"] == 16 and peak[0] >= 4
