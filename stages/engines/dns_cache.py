"""Host name resolution for image retrieval: a cache that remembers answers and
failures, with a bounded number of lookups at once, and the SSRF guard over it.

``DnsCache`` is an aiohttp ``AbstractResolver`` over another one (aiohttp's
``ThreadedResolver``, the system resolver in a thread, unless given):

- an answer is reused for ``ttl`` seconds, a failure (NXDOMAIN, no address, a
  resolver error: any ``OSError``) for ``negative_ttl`` seconds, so a page with
  200 images on a host that does not exist costs one lookup, not 200;
- at most ``concurrency`` lookups run at once (each holds a thread of the
  system resolver); the others wait their turn;
- callers asking for the same name while its lookup runs wait for that lookup
  instead of starting another;
- at most ``max_entries`` names are remembered, the oldest forgotten first.

``GuardedDnsResolver`` is what the fetcher's connector uses: every answer, cached
or fresh, goes through ``address_guard.refused_reason`` (loopback, private,
link-local, ... refused unless ``allowed_networks`` lists them). aiohttp connects
only to addresses this resolver returned, so an answer cannot change between the
check and the connection.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import time
from typing import Iterable, Optional

from aiohttp import ThreadedResolver
from aiohttp.abc import AbstractResolver, ResolveResult

from mmcurate.stages.engines.address_guard import RefusedAddress, ip_or_none, refused_reason


class DnsCache(AbstractResolver):
    """Answers and failures of ``resolver`` cached per (host, port); use it on one
    event loop. ``lookups`` counts the lookups sent to ``resolver``."""

    def __init__(
        self,
        resolver: Optional[AbstractResolver] = None,
        ttl: float = 300.0,
        negative_ttl: float = 60.0,
        concurrency: int = 32,
        max_entries: int = 100_000,
    ):
        self._resolver = resolver
        self._ttl = ttl
        self._negative_ttl = negative_ttl
        self._concurrency = concurrency
        self._max_entries = max_entries
        self._slots: Optional[asyncio.Semaphore] = None
        # (host, port) -> (expires at, answer or the failure's exception)
        self._entries: dict[tuple[str, int], tuple[float, list[ResolveResult] | OSError]] = {}
        self._running: dict[tuple[str, int], asyncio.Future] = {}
        self.lookups = 0
        self.in_flight = 0  # lookups running now
        self.peak_in_flight = 0

    async def resolve(self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_UNSPEC) -> list[ResolveResult]:
        key = (host.lower(), port)
        entry = self._entries.get(key)
        if entry is not None and entry[0] > time.monotonic():
            return _answer(entry[1])
        running = self._running.get(key)
        if running is None:
            running = self._running[key] = asyncio.ensure_future(self._lookup(key, host, port))
        # A caller that gives up (its deadline) must not cancel the others' lookup.
        return _answer(await asyncio.shield(running))

    async def _lookup(self, key: tuple[str, int], host: str, port: int) -> list[ResolveResult] | OSError:
        if self._slots is None:
            self._slots = asyncio.Semaphore(self._concurrency)
        try:
            async with self._slots:
                if self._resolver is None:
                    self._resolver = ThreadedResolver()
                self.lookups += 1
                self.in_flight += 1
                self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
                try:
                    outcome: list[ResolveResult] | OSError = await self._resolver.resolve(host, port, socket.AF_UNSPEC)
                    ttl = self._ttl
                except OSError as exc:  # socket.gaierror: NXDOMAIN, no address, the resolver failing
                    outcome, ttl = exc, self._negative_ttl
                finally:
                    self.in_flight -= 1
            self._remember(key, outcome, ttl)
            return outcome
        finally:
            self._running.pop(key, None)

    def _remember(self, key: tuple[str, int], outcome, ttl: float) -> None:
        if ttl <= 0:
            return
        self._entries.pop(key, None)
        while len(self._entries) >= self._max_entries:
            del self._entries[next(iter(self._entries))]  # the oldest
        self._entries[key] = (time.monotonic() + ttl, outcome)

    async def close(self) -> None:
        self._entries.clear()
        if self._resolver is not None:
            await self._resolver.close()


def _answer(outcome: list[ResolveResult] | OSError) -> list[ResolveResult]:
    """The cached answer, or a fresh copy of the cached failure raised."""
    if isinstance(outcome, OSError):
        raise type(outcome)(*outcome.args)
    return list(outcome)


class GuardedDnsResolver(AbstractResolver):
    """Resolves through a ``DnsCache`` and refuses a host any of whose addresses the
    SSRF guard refuses (``RefusedAddress``, an ``OSError``)."""

    def __init__(self, allowed_networks: Iterable[str] = (), cache: Optional[DnsCache] = None):
        self._allowed = [ipaddress.ip_network(n, strict=False) for n in allowed_networks]
        self.cache = cache if cache is not None else DnsCache()

    @property
    def lookups(self) -> int:
        return self.cache.lookups

    def check_literal(self, host: str) -> None:
        """Raise RefusedAddress for a refused IP literal (aiohttp does not resolve those)."""
        literal = host.strip("[]")
        if ip_or_none(literal) is None:
            return
        why = refused_reason(literal, self._allowed)
        if why:
            raise RefusedAddress(f"{host} is {why}")

    async def resolve(self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_UNSPEC) -> list[ResolveResult]:
        answer = await self.cache.resolve(host, port, family)
        for entry in answer:
            why = refused_reason(entry["host"], self._allowed)
            if why:
                raise RefusedAddress(f"{host} resolves to {entry['host']} ({why})")
        return answer

    async def close(self) -> None:
        await self.cache.close()
