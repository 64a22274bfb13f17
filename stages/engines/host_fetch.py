"""Image URLs fetched host by host on one long-lived event loop: ``HostScheduler``.

The images stage groups the URLs to fetch by host (``image_fetch.politeness_host``)
and hands each host's URLs here; the scheduler keeps ``concurrency`` URLs in
progress at all times over every host it holds, at most ``per_host`` of them on
one host, and reports each URL's ``Fetched`` the moment it is done, so no URL
waits for another (a batch waits for its slowest; this never does).

- robots.txt first: reading a new host's robots.txt (``ImageFetcher.prepare_host``)
  takes a slot before any URL does (the hosts with the most URLs first), and none of
  the host's URLs takes one before it is read, so no slot waits on a robots.txt and
  no request waits for a slot; how long it took is the host's first measure of its
  speed.
- Order: a free slot goes to the host with the most work left (its URLs queued and
  in progress times the seconds each takes there: its URLs' so far, else its
  robots.txt's), so the hosts that set the run's length (many URLs, or slow ones,
  held to ``per_host`` at once) are kept busy from the start and the small ones
  fill the slots left: the longest-first rule of scheduling, which keeps the wall
  time near the larger of the per-host floor and the time of all URLs over
  ``concurrency``.
- Pauses: a host that answered 429 or sent ``Retry-After`` is not given another
  URL until its pause is over (``ImageFetcher.host_delay``); its queued URLs wait,
  and their deadlines do not run while they wait.
- Giving up: ``give_up_after`` failures in a row on one host that say the host is
  failing (``Fetched.host_fault``: connection refused, a timeout while a request
  was out, a TLS error) give the host up: each URL still queued for it is reported
  at once as ``image.host_given_up``, and so is any URL submitted for it later.
  An answer from the host (any status) resets the count.

Use it on one event loop (``submit`` from that loop: a caller in another thread
uses ``loop.call_soon_threadsafe``). Results are reported through ``on_done(tag,
want, fetched)``, called on the loop; ``tag`` is what the submitter passed. With
``max_unclaimed``, no URL starts while that many results are reported and not yet
taken by their receiver (``claim``), so a receiver slower than the network (decoding)
holds at most that many bodies waiting, not a growing queue.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from mmcurate.filters import reasons
from mmcurate.stages.engines.image_fetch import Fetched, ImageFetcher

log = logging.getLogger(__name__)

# An image URL and its other candidates (srcset, <picture>), most preferred first.
Want = tuple[str, tuple[str, ...]]
Done = Callable[[Any, Want, Fetched], None]


@dataclass
class _Host:
    name: str
    queue: deque = field(default_factory=deque)  # (tag, want) not started yet
    running: int = 0
    done: int = 0  # URLs finished
    seconds: float = 0.0  # their time in progress, all together
    preparing: bool = False  # its robots.txt is being read
    first_seconds: float = 0.0  # how long that took
    listed: bool = False  # in the scheduler's ready heap, or waiting for its pause
    failures: int = 0  # host faults in a row
    given_up: str = ""  # why, once given up


class HostScheduler:
    """Fetches submitted URLs with ``fetcher``: ``concurrency`` in progress at most
    (each URL's candidates one after another), ``per_host`` per host."""

    def __init__(
        self,
        fetcher: ImageFetcher,
        concurrency: int,
        per_host: int,
        give_up_after: int,
        on_done: Done,
        max_unclaimed: Optional[int] = None,
    ):
        self._fetcher = fetcher
        self._max_unclaimed = max_unclaimed
        self._unclaimed = 0
        self._concurrency = concurrency
        self._per_host = per_host
        self._give_up_after = give_up_after
        self._on_done = on_done
        self._hosts: dict[str, _Host] = {}
        self._ready: list[tuple[float, int, _Host]] = []  # a heap: (-work left, order, host)
        self._order = itertools.count()
        self._to_prepare: list[tuple[int, int, _Host, str]] = []  # a heap: (-URLs, order, host, a URL of it)
        self._done = 0
        self._seconds = 0.0
        self._running = 0
        self._tasks: set[asyncio.Task] = set()
        self._wake: Optional[asyncio.Event] = None
        self._dispatcher: Optional[asyncio.Task] = None
        self.peak_running = 0
        self.given_up: dict[str, str] = {}  # host -> why

    # -- what callers use ----------------------------------------------------------

    def submit(self, host: str, wants: Sequence[Want], tag: Any = None) -> None:
        """Queues ``wants`` (URLs of ``host``) for fetching; call on the loop."""
        entry = self._hosts.get(host)
        if entry is None:
            entry = self._hosts[host] = _Host(host)
            if wants:
                entry.preparing = True
                heapq.heappush(self._to_prepare, (-len(wants), next(self._order), entry, wants[0][0]))
        if entry.given_up:
            for want in wants:
                self._report(tag, want, self._given_up(entry, want))
            return
        entry.queue.extend((tag, want) for want in wants)
        self._list(entry)
        if self._dispatcher is None or self._dispatcher.done():
            self._wake = asyncio.Event()
            self._dispatcher = asyncio.ensure_future(self._dispatch())
        self._wake.set()

    def claim(self, count: int = 1) -> None:
        """The receiver took ``count`` reported results; call on the loop."""
        self._unclaimed -= count
        if self._wake is not None:
            self._wake.set()

    def _room(self) -> bool:
        return self._running < self._concurrency and (
            self._max_unclaimed is None or self._unclaimed < self._max_unclaimed
        )

    def cancel(self) -> None:
        """Drops every queued URL and cancels those in progress, reporting none of
        them (what a bundle that failed had submitted); call on the loop."""
        for entry in self._hosts.values():
            entry.queue.clear()
            entry.listed = False
        self._ready.clear()
        for _, _, entry, _ in self._to_prepare:
            entry.preparing = False  # its URLs will read its robots.txt themselves
        self._to_prepare.clear()
        for task in list(self._tasks):
            task.cancel()
        self._unclaimed = 0  # what was reported goes unclaimed with its bundle

    async def close(self) -> None:
        self.cancel()
        if self._dispatcher is not None:
            self._dispatcher.cancel()
        await asyncio.gather(*self._tasks, *([self._dispatcher] if self._dispatcher else []), return_exceptions=True)

    # -- scheduling --------------------------------------------------------------------

    def _work_left(self, entry: _Host) -> float:
        """Seconds of requests the host still needs: its URLs left times the time its
        URLs took, else its robots.txt (else the mean over hosts, else 1 s)."""
        if entry.done:
            per_url = entry.seconds / entry.done
        elif entry.first_seconds:
            per_url = entry.first_seconds
        else:
            per_url = self._seconds / self._done if self._done else 1.0
        return (len(entry.queue) + entry.running) * per_url

    def _list(self, entry: _Host) -> None:
        """Puts a host with queued work and a free slot in the ready heap."""
        if entry.queue and entry.running < self._per_host and not entry.listed and not entry.preparing:
            entry.listed = True
            heapq.heappush(self._ready, (-self._work_left(entry), next(self._order), entry))
            if self._wake is not None:
                self._wake.set()

    def _resume(self, entry: _Host) -> None:
        entry.listed = False
        self._list(entry)

    async def _dispatch(self) -> None:
        assert self._wake is not None
        while True:
            while self._room() and self._to_prepare:
                _, _, entry, url = heapq.heappop(self._to_prepare)
                self._running += 1
                self._spawn(self._prepare(entry, url))
            while self._room() and self._ready:
                _, _, entry = heapq.heappop(self._ready)
                delay = self._fetcher.host_delay(entry.name)
                if delay > 0:  # it asked for a pause: it stays listed, and comes back then
                    asyncio.get_running_loop().call_later(delay, self._resume, entry)
                    continue
                entry.listed = False
                if not entry.queue or entry.running >= self._per_host:
                    continue
                tag, want = entry.queue.popleft()
                entry.running += 1
                self._running += 1
                self.peak_running = max(self.peak_running, self._running)
                self._spawn(self._run(entry, tag, want))
                self._list(entry)  # back in the heap, by the work it has left
            self._wake.clear()
            await self._wake.wait()

    def _spawn(self, coroutine) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _prepare(self, entry: _Host, url: str) -> None:
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            await self._fetcher.prepare_host(url)
        finally:
            entry.first_seconds = max(loop.time() - started, 1e-3)
            entry.preparing = False
            self._running -= 1
            self._list(entry)
            if self._wake is not None:
                self._wake.set()

    async def _run(self, entry: _Host, tag: Any, want: Want) -> None:
        started = asyncio.get_running_loop().time()
        try:
            fetched = await self._fetcher.fetch_first(*want)
        except Exception as exc:  # fetch never raises for a URL; this is a fault of ours
            log.warning("fetching %s failed unexpectedly: %s: %s", want[0][:200], type(exc).__name__, exc)
            fetched = Fetched(url=want[0], ok=False, reason=type(exc).__name__, detail=f"{type(exc).__name__}: {exc}"[:300])
        finally:
            seconds = asyncio.get_running_loop().time() - started
            entry.running -= 1
            entry.done += 1
            entry.seconds += seconds
            self._running -= 1
            self._done += 1
            self._seconds += seconds
            self._list(entry)
            if self._wake is not None:
                self._wake.set()
        self._report(tag, want, fetched)
        self._account(entry, fetched)

    def _account(self, entry: _Host, fetched: Fetched) -> None:
        if fetched.host_fault:
            entry.failures += 1
        elif fetched.attempts:  # the host answered
            entry.failures = 0
        if self._give_up_after and entry.failures >= self._give_up_after and not entry.given_up:
            entry.given_up = (
                f"{entry.name} failed {entry.failures} times in a row "
                f"(the last: {fetched.host_fault}, {fetched.reason}: {fetched.detail[:120]})"
            )
            self.given_up[entry.name] = entry.given_up
            log.debug("giving up %s: %s", entry.name, entry.given_up)
            queued, entry.queue = entry.queue, deque()
            for tag, want in queued:
                self._report(tag, want, self._given_up(entry, want))

    @staticmethod
    def _given_up(entry: _Host, want: Want) -> Fetched:
        return Fetched(url=want[0], ok=False, reason=reasons.IMAGE_HOST_GIVEN_UP, detail=entry.given_up[:300])

    def _report(self, tag: Any, want: Want, fetched: Fetched) -> None:
        self._unclaimed += 1
        try:
            self._on_done(tag, want, fetched)
        except Exception:  # the receiver's fault must not stop the loop's other work
            log.exception("reporting the fetch of %s failed", want[0][:200])
