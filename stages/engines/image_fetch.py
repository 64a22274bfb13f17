"""Polite and safe image retrieval over HTTP (aiohttp).

``ImageFetcher`` fetches many URLs concurrently on one asyncio event loop:

- bounded concurrency per fetcher (a worker) and per host (``politeness_host``: the
  host name, whatever the scheme or port); connect and read timeouts; a total
  deadline per image covering redirects, retries and the body;
- redirects followed by hand up to ``max_redirects``, every hop checked again
  (scheme, address, robots.txt); a URL seen twice is a redirect loop;
- retries with exponential backoff for 429 and 5xx only (``Retry-After`` in seconds or as an HTTP date honoured
  within the deadline), by tenacity's ``AsyncRetrying``; a 429, or any answer with a
  ``Retry-After``, slows the whole host: no request goes to it until the wait is
  over (``host_delay`` tells the scheduler of ``host_fetch`` as well);
- ``Content-Type``, ``Content-Length`` and ``X-Robots-Tag`` checked from the
  headers before the body is read; the body streamed and cut at ``max_bytes``;
- robots.txt fetched once per host (scheme, host, port) and obeyed as RFC 9309
  says (``publisher_policy.RobotsCache``: protego's parser; 4xx means no rules,
  5xx or no answer means complete disallow);
- SSRF guard: every host is resolved by ``dns_cache.GuardedDnsResolver``, which
  refuses non-global addresses (``address_guard``: IPv6 forms embedding them too)
  unless ``allowed_networks`` lists them; robots.txt requests and their redirects go
  through the same check. Its ``DnsCache`` remembers answers and failures
  (NXDOMAIN) and runs at most ``dns_concurrency`` lookups at once;
- a URL that cannot be fetched as written (unparseable, a port out of range, a host
  name IDNA cannot encode, in the page or in a redirect's ``Location``) fails as
  ``image.invalid_url`` before anything is sent.

Every outcome is a ``Fetched`` value; nothing raises for a bad URL or server. An
exception nobody foresaw becomes a ``Fetched`` whose reason is its type name. A
failure that says the host itself is failing (connection refused, a timeout while a
request was out, a TLS error) names that in ``host_fault``: ``host_fetch`` gives a
host up after a run of them.
"""

from __future__ import annotations

import asyncio
import logging
import re
import ssl
from dataclasses import dataclass, field
from typing import NamedTuple, Optional, Sequence
from urllib.parse import urljoin, urlsplit

import aiohttp
from protego import Protego
from tenacity import AsyncRetrying, retry_if_result, stop_after_attempt

from mmcurate.filters import reasons
from mmcurate.stages.config import ImagesConfig
from mmcurate.stages.engines.address_guard import RefusedAddress, ip_or_none
from mmcurate.stages.engines.dns_cache import DnsCache, GuardedDnsResolver
from mmcurate.stages.engines.image_result import reason_kind
from mmcurate.stages.engines.publisher_policy import ROBOTS_MAX_BYTES, RobotsCache, opted_out
from mmcurate.stages.engines.retry_after import retry_after_seconds
from mmcurate.filters.url_forms import canonical_url

log = logging.getLogger(__name__)

REDIRECTS = frozenset({301, 302, 303, 307, 308})
# Refusals that another candidate URL of the same image would meet as well.
FINAL_REFUSALS = frozenset({reasons.IMAGE_ROBOTS_DISALLOWED, reasons.IMAGE_OPTED_OUT, reasons.IMAGE_REFUSED_ADDRESS})
# Served when the declared type says nothing: the magic bytes decide later.
GENERIC_TYPES = frozenset({"", "application/octet-stream", "binary/octet-stream", "application/unknown"})
_CHUNK = 64 * 1024
DEFAULT_PORTS = {"http": 80, "https": 443}


# ---------------------------------------------------------------------------------
# Fetching
# ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fetched:
    """One URL's fetch: the payload, or the reason code and detail of a failure."""

    url: str
    ok: bool
    payload: bytes = field(default=b"", repr=False)
    content_type: str = ""
    final_url: str = ""
    reason: str = ""
    value: Optional[float] = None
    threshold: Optional[float] = None
    detail: str = ""
    attempts: int = 0
    redirects: int = 0
    # HOST_REFUSED, HOST_TIMEOUT or HOST_TLS when the failure says the host itself is
    # failing; "" otherwise (an answer, however bad, says it is up).
    host_fault: str = ""

    @property
    def kind(self) -> str:
        """The kind of the decision row a failed fetch becomes (``reason_kind``)."""
        return reason_kind(self.reason) if not self.ok else ""


HOST_REFUSED = "refused"
HOST_TIMEOUT = "timeout"
HOST_TLS = "tls"


class _Failure(Exception):
    def __init__(
        self,
        reason: str,
        detail: str = "",
        value: Optional[float] = None,
        threshold: Optional[float] = None,
        host_fault: str = "",
    ):
        super().__init__(detail)
        self.reason = reason
        self.detail = detail
        self.value = value
        self.threshold = threshold
        self.host_fault = host_fault


def host_fault_of(exc: BaseException) -> str:
    """HOST_TLS, HOST_TIMEOUT or HOST_REFUSED for an exception of a request that says
    the host is failing; "" for any other (a reset, a broken answer, DNS)."""
    if isinstance(exc, (aiohttp.ClientSSLError, ssl.SSLError)):
        return HOST_TLS
    if isinstance(exc, asyncio.TimeoutError):  # aiohttp's ServerTimeoutError and connect timeouts too
        return HOST_TIMEOUT
    cause = exc.os_error if isinstance(exc, aiohttp.ClientConnectorError) else exc
    if isinstance(cause, ssl.SSLError):
        return HOST_TLS
    if isinstance(cause, ConnectionRefusedError):
        return HOST_REFUSED
    return ""


def politeness_host(url: str) -> str:
    """The host name of a URL, lower case, without scheme, port or user: the unit of
    the per-host limit, of the pause a 429 asks for and of the stage's grouping by
    host ("" when the URL has none or cannot be parsed)."""
    try:
        return (urlsplit(url).hostname or "").rstrip(".")
    except ValueError:
        return ""


def _mime(content_type: Optional[str]) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


_HOST_LABEL = re.compile(r"(?!-)[A-Za-z0-9_-]{1,63}(?<!-)")


def fetch_target(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of a URL about to be fetched; ``_Failure`` with
    ``image.unsupported_scheme`` or ``image.invalid_url`` when it cannot be fetched as
    written: unparseable (``http://[::1/x``), a port out of range, no host, or a host
    that is neither an IP literal nor a DNS name (IDNA-encoded, RFC 1035 lengths)."""
    try:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        host = parts.hostname or ""
        port = parts.port
    except ValueError as exc:
        raise _Failure(reasons.IMAGE_INVALID_URL, f"{url[:200]}: {exc}") from None
    if scheme not in DEFAULT_PORTS:
        raise _Failure(reasons.IMAGE_UNSUPPORTED_SCHEME, f"scheme {scheme!r}")
    if not host:
        raise _Failure(reasons.IMAGE_INVALID_URL, f"{url[:200]}: no host")
    if ip_or_none(host) is None:
        try:
            ascii_host = host.rstrip(".").encode("idna").decode("ascii")
        except UnicodeError as exc:
            raise _Failure(reasons.IMAGE_INVALID_URL, f"{url[:200]}: host {host[:100]!r}: {exc}") from None
        labels = ascii_host.split(".")
        if len(ascii_host) > 253 or not all(_HOST_LABEL.fullmatch(label) for label in labels):
            raise _Failure(reasons.IMAGE_INVALID_URL, f"{url[:200]}: host {host[:100]!r} is not a DNS name")
    return scheme, host, port if port is not None else DEFAULT_PORTS[scheme]


def _join(base: str, location: str) -> str:
    """The canonical URL a redirect's ``Location`` names; ``_Failure`` if unparseable."""
    try:
        return canonical_url(urljoin(base, location))
    except ValueError as exc:
        raise _Failure(reasons.IMAGE_INVALID_URL, f"redirect to {location[:200]!r}: {exc}") from None


class _Answer(NamedTuple):
    """One HTTP answer as far as the fetch reads it."""

    status: int
    location: str = ""
    payload: bytes = b""
    content_type: str = ""
    retry_after: float = 0.0  # seconds, from Retry-After

    @property
    def retryable(self) -> bool:
        return self.status == 429 or 500 <= self.status < 600


class ImageFetcher:
    """Fetches image URLs with one aiohttp session; create and use it on one event loop.

    ``requests`` counts HTTP requests sent (robots.txt included)."""

    def __init__(self, config: ImagesConfig):
        self._config = config
        self._session: Optional[aiohttp.ClientSession] = None
        cache = DnsCache(
            ttl=config.dns_cache_seconds, negative_ttl=config.dns_negative_cache_seconds, concurrency=config.dns_concurrency
        )
        self._resolver = GuardedDnsResolver(config.allowed_networks, cache)
        self._slots: Optional[asyncio.Semaphore] = None
        self._host_slots: dict[str, asyncio.Semaphore] = {}
        self._resume_at: dict[str, float] = {}  # politeness host -> loop time it may be asked again
        self._robots = RobotsCache(self._fetch_robots, config.robots_token, config.deadline_seconds)
        self.requests = 0

    @property
    def resolver(self) -> GuardedDnsResolver:
        return self._resolver

    def host_delay(self, host: str) -> float:
        """Seconds until ``host`` (``politeness_host``) may be asked again: > 0 while a
        429 or a ``Retry-After`` it sent is in force."""
        resume = self._resume_at.get(host)
        if resume is None:
            return 0.0
        delay = resume - asyncio.get_running_loop().time()
        if delay <= 0:
            del self._resume_at[host]
            return 0.0
        return delay

    def _slow_host(self, url: str, seconds: float) -> None:
        host = politeness_host(url)
        resume = asyncio.get_running_loop().time() + seconds
        if resume > self._resume_at.get(host, 0.0):
            self._resume_at[host] = resume
            log.debug("%s asked for a pause: none of its URLs is requested for %.1f s", host, seconds)

    async def _host_ready(self, url: str) -> None:
        """Waits while the URL's host has asked for a pause."""
        host = politeness_host(url)
        while (delay := self.host_delay(host)) > 0:
            await asyncio.sleep(delay)

    def _ensure_session(self) -> aiohttp.ClientSession:
        if self._session is None:
            config = self._config
            connector = aiohttp.TCPConnector(
                resolver=self._resolver,
                use_dns_cache=False,  # the resolver caches, after its check
                limit=config.concurrency,
                limit_per_host=config.per_host_concurrency,
            )
            timeout = aiohttp.ClientTimeout(
                total=None, sock_connect=config.connect_timeout, sock_read=config.read_timeout
            )
            self._session = aiohttp.ClientSession(
                connector=connector,
                timeout=timeout,
                headers={"User-Agent": config.user_agent, "Accept": "image/*"},
                auto_decompress=True,
                cookie_jar=aiohttp.DummyCookieJar(),
            )
            self._slots = asyncio.Semaphore(config.concurrency)
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def fetch_all(self, urls: Sequence[str]) -> list[Fetched]:
        return list(await asyncio.gather(*(self.fetch(u) for u in urls)))

    async def prepare_host(self, url: str) -> None:
        """Reads the robots.txt of the URL's origin ahead of its URLs, when robots.txt
        is honoured (the same cache the fetches ask); never raises."""
        if not self._config.respect_robots:
            return
        try:
            fetch_target(url)
        except _Failure:
            return  # the URL fails on its own, with its reason
        self._ensure_session()
        await self._robots.allowed(url)

    async def fetch_first(self, url: str, candidates: Sequence[str] = ()) -> Fetched:
        """The URL, then its other candidates (srcset, ``<picture>``) in order of
        preference, until one is retrieved; a refusal that would hold for every
        candidate (robots.txt, opt-out, a refused address) ends the search. When none
        is retrieved, the outcome of the URL's own fetch."""
        first: Optional[Fetched] = None
        for candidate in (url, *candidates):
            item = await self.fetch(candidate)
            if item.ok:
                return item
            first = first or item
            if item.reason in FINAL_REFUSALS:
                break
        assert first is not None
        return first

    async def fetch(self, url: str) -> Fetched:
        """Fetch one image URL within the deadline; never raises for a bad URL or server."""
        self._ensure_session()
        state = {"attempts": 0, "redirects": 0, "url": url, "asking": False}
        try:
            payload, content_type = await asyncio.wait_for(self._follow(url, state), self._config.deadline_seconds)
        except _Failure as exc:
            failure = exc
        except asyncio.TimeoutError:
            deadline = self._config.deadline_seconds
            # Only a request that was out when time ran out blames the host (not a wait
            # for a slot, for a pause the host asked for, or for its robots.txt).
            failure = _Failure(
                reasons.IMAGE_TIMEOUT,
                f"no complete answer within {deadline}s",
                threshold=deadline,
                host_fault=HOST_TIMEOUT if state["asking"] else "",
            )
        except Exception as exc:  # never raise: one hostile URL must not end the run
            log.warning("fetching %s failed unexpectedly: %s: %s", url[:200], type(exc).__name__, exc)
            failure = _Failure(type(exc).__name__, f"{type(exc).__name__}: {exc}")
        else:
            return Fetched(url, True, payload, content_type, state["url"], attempts=state["attempts"], redirects=state["redirects"])
        return Fetched(
            url=url,
            ok=False,
            final_url=state["url"],
            reason=failure.reason,
            value=failure.value,
            threshold=failure.threshold,
            detail=failure.detail[:300],
            attempts=state["attempts"],
            redirects=state["redirects"],
            host_fault=failure.host_fault,
        )

    # -- one URL, hop by hop ------------------------------------------------------------

    async def _follow(self, url: str, state: dict) -> tuple[bytes, str]:
        config = self._config
        seen = {url}
        current = url
        while True:
            state["url"] = current
            await self._check_hop(current)
            answer = await self._with_retries(current, state)
            status, location = answer.status, answer.location
            if status not in REDIRECTS:
                return answer.payload, answer.content_type
            if not location:
                raise _Failure(reasons.IMAGE_HTTP_STATUS, f"{status} without Location", value=status)
            target = _join(current, location)
            if target in seen:
                raise _Failure(reasons.IMAGE_REDIRECT_LOOP, f"{current} -> {target} was already visited")
            state["redirects"] += 1
            if state["redirects"] > config.max_redirects:
                raise _Failure(
                    reasons.IMAGE_TOO_MANY_REDIRECTS,
                    f"more than {config.max_redirects} redirects",
                    value=state["redirects"],
                    threshold=config.max_redirects,
                )
            seen.add(target)
            current = target

    async def _check_hop(self, url: str) -> None:
        """Scheme, address (SSRF) and robots.txt of one hop, before any request to it."""
        _, host, port = fetch_target(url)
        await self._check_address(host, port)
        if self._config.respect_robots and not await self._robots.allowed(url):
            raise _Failure(reasons.IMAGE_ROBOTS_DISALLOWED, self._robots.refusal(url))

    async def _check_address(self, host: str, port: int) -> None:
        try:
            self._resolver.check_literal(host)
            await self._resolver.resolve(host, port)
        except RefusedAddress as exc:
            raise _Failure(reasons.IMAGE_REFUSED_ADDRESS, str(exc)) from None
        except OSError as exc:  # no such host
            raise _Failure(reasons.IMAGE_CONNECTION_FAILED, f"DNS: {exc}") from None
        except ValueError as exc:  # the resolver's own IDNA encoding, a NUL in the name
            raise _Failure(reasons.IMAGE_INVALID_URL, f"host {host[:100]!r}: {exc}") from None

    def _host_slot(self, url: str) -> asyncio.Semaphore:
        key = politeness_host(url)
        slot = self._host_slots.get(key)
        if slot is None:
            slot = self._host_slots[key] = asyncio.Semaphore(self._config.per_host_concurrency)
        return slot

    async def _with_retries(self, url: str, state: dict) -> _Answer:
        """GET ``url`` until its answer is neither 429 nor 5xx, at most
        ``retries + 1`` times, waiting ``backoff_seconds * 2**n`` or the server's
        ``Retry-After`` (whichever is longer) in between; the deadline around the
        whole fetch bounds the waiting as well. The first request is sent directly
        (most answers need no other); tenacity's ``AsyncRetrying`` runs the rest."""
        config = self._config

        def backoff() -> float:  # after the latest attempt: backoff_seconds * 2**(attempts - 1)
            return config.backoff_seconds * 2 ** (state["attempts"] - 1)

        def given_up(answer: _Answer) -> _Failure:
            return _Failure(reasons.IMAGE_HTTP_STATUS, f"HTTP {answer.status} after {state['attempts']} attempts", value=answer.status)

        async def attempt() -> _Answer:
            state["attempts"] += 1
            try:
                answer = await self._request(url, state)
            except _Failure:
                state["asking"] = False
                raise
            # Cancelled (the deadline) while asking: "asking" stays set, for fetch().
            state["asking"] = False
            if answer.status == 429 or answer.retry_after > 0:
                # The whole host waits, not only this URL (the retry waits here as long).
                self._slow_host(url, max(answer.retry_after, backoff()))
            return answer

        answer = await attempt()
        if not answer.retryable:
            return answer
        if config.retries == 0:
            raise given_up(answer)
        await asyncio.sleep(max(backoff(), answer.retry_after))

        def give_up(retry_state) -> _Answer:
            raise given_up(retry_state.outcome.result())

        retrying = AsyncRetrying(
            retry=retry_if_result(lambda answer: answer.retryable),
            stop=stop_after_attempt(config.retries),
            wait=lambda retry_state: max(backoff(), retry_state.outcome.result().retry_after),
            retry_error_callback=give_up,
        )
        return await retrying(attempt)

    async def _request(self, url: str, state: Optional[dict] = None) -> _Answer:
        """One GET: status, Location, body, content type, Retry-After seconds.

        The body is read only for a 200 that passes the header checks."""
        config = self._config
        session = self._ensure_session()
        await self._host_ready(url)
        async with self._slots, self._host_slot(url):
            self.requests += 1
            if state is not None:
                state["asking"] = True  # a request is out: a timeout now is the host's
            try:
                async with session.get(url, allow_redirects=False) as response:
                    status = response.status
                    if status in REDIRECTS:
                        return _Answer(status, location=response.headers.get("Location", ""))
                    if status == 429 or 500 <= status < 600:
                        return _Answer(status, retry_after=retry_after_seconds(response.headers.get("Retry-After")))
                    if status != 200:
                        raise _Failure(reasons.IMAGE_HTTP_STATUS, f"HTTP {status}", value=status)
                    directive = opted_out(
                        response.headers.getall("X-Robots-Tag", []), config.robots_token, config.opt_out_directives
                    )
                    if directive:
                        raise _Failure(reasons.IMAGE_OPTED_OUT, f"X-Robots-Tag: {directive}")
                    content_type = _mime(response.headers.get("Content-Type"))
                    if not content_type.startswith("image/") and content_type not in GENERIC_TYPES:
                        raise _Failure(reasons.IMAGE_WRONG_CONTENT_TYPE, f"Content-Type {content_type}")
                    payload = await self._read_body(response, config.max_bytes)
                    return _Answer(status, payload=payload, content_type=content_type)
            except asyncio.TimeoutError as exc:  # aiohttp's connect and read timeouts
                raise _Failure(
                    reasons.IMAGE_TIMEOUT, f"{type(exc).__name__}: {exc}", host_fault=HOST_TIMEOUT
                ) from None
            except (aiohttp.ClientError, OSError) as exc:
                raise _Failure(
                    reasons.IMAGE_CONNECTION_FAILED, f"{type(exc).__name__}: {exc}", host_fault=host_fault_of(exc)
                ) from None
            except ValueError as exc:  # yarl refusing the URL: it was checked, but belt and braces
                raise _Failure(reasons.IMAGE_INVALID_URL, f"{type(exc).__name__}: {exc}") from None

    @staticmethod
    async def _read_body(response: aiohttp.ClientResponse, max_bytes: int) -> bytes:
        declared = response.content_length
        if declared is not None and declared > max_bytes:
            raise _Failure(reasons.IMAGE_TOO_MANY_BYTES, f"Content-Length {declared}", value=declared, threshold=max_bytes)
        chunks, total = [], 0
        async for chunk in response.content.iter_chunked(_CHUNK):
            total += len(chunk)
            if total > max_bytes:
                raise _Failure(reasons.IMAGE_TOO_MANY_BYTES, f"over {max_bytes} bytes while streaming", value=total, threshold=max_bytes)
            chunks.append(chunk)
        return b"".join(chunks)

    # -- robots.txt -------------------------------------------------------------------

    async def _fetch_robots(self, key: str) -> Optional[Protego]:
        """robots.txt of a host, every hop checked as an image URL is; None: no rules."""
        config = self._config
        session = self._ensure_session()
        url = f"{key}/robots.txt"
        for _ in range(config.max_redirects + 1):
            try:
                # Every hop through the same checks as an image URL: a robots.txt
                # that redirects to a metadata address is refused before connecting.
                _, host, port = fetch_target(url)
                await self._check_address(host, port)
                async with self._slots, self._host_slot(url):
                    self.requests += 1
                    async with session.get(url, allow_redirects=False) as response:
                        status = response.status
                        if status in REDIRECTS and response.headers.get("Location"):
                            url = _join(url, response.headers["Location"])
                            continue
                        if 400 <= status < 500:
                            return None  # RFC 9309 2.3.1.3: unavailable, no rules
                        if status != 200:
                            return self._robots.unreachable(key, f"HTTP {status}")  # 2.3.1.4
                        body = await response.content.read(ROBOTS_MAX_BYTES)
                        return Protego.parse(body.decode("utf-8", errors="replace"))
            except _Failure as exc:
                return self._robots.unreachable(key, f"{exc.reason}: {exc.detail}")
            except (aiohttp.ClientError, OSError, ValueError) as exc:
                return self._robots.unreachable(key, f"{type(exc).__name__}: {exc}")
        return None  # RFC 9309 2.3.1.2: past the redirect limit, treat as unavailable
