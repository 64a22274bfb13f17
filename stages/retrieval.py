"""Polite and safe image retrieval over HTTP (aiohttp).

``ImageFetcher`` fetches many URLs concurrently on one asyncio event loop:

- bounded concurrency per fetcher (a worker) and per host; connect and read
  timeouts; a total deadline per image covering redirects, retries and the body;
- redirects followed by hand up to ``max_redirects``, every hop checked again
  (scheme, address, robots.txt); a URL seen twice is a redirect loop;
- retries with exponential backoff for 429 and 5xx only (``Retry-After`` honoured
  within the deadline);
- ``Content-Type``, ``Content-Length`` and ``X-Robots-Tag`` checked from the
  headers before the body is read; the body streamed and cut at ``max_bytes``;
- robots.txt fetched once per host (scheme, host, port) and parsed with protego,
  Scrapy's RFC 9309 parser: urllib.robotparser implements the 1996 draft only (no
  ``*``/``$`` wildcards, first match instead of longest match), which misreads many
  real files. As RFC 9309 sec. 2.3.1 says: 4xx means no rules, 5xx or no answer
  means complete disallow;
- SSRF guard: every host is resolved by ``GuardedResolver``, which caches answers
  and refuses loopback, private, link-local, multicast, reserved and unspecified
  addresses unless ``allowed_networks`` lists them. An IPv6 address that embeds an
  IPv4 address (IPv4-mapped and -compatible, 6to4 2002::/16, Teredo 2001::/32,
  NAT64 64:ff9b::/96, ISATAP) is refused when the embedded address is. aiohttp
  connects only to addresses this resolver returned, so a DNS answer cannot change
  between the check and the connection. robots.txt requests and their redirects go
  through the same check;
- a URL that cannot be fetched as written (unparseable, a port out of range, a host
  name IDNA cannot encode, in the page or in a redirect's ``Location``) fails as
  ``image.invalid_url`` before anything is sent.

Every outcome is a ``Fetched`` value; nothing raises for a bad URL or server. An
exception nobody foresaw becomes a ``Fetched`` of kind ``error`` named after it.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import re
import socket
import time
from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence
from urllib.parse import urljoin, urlsplit

import aiohttp
from aiohttp.abc import AbstractResolver
from protego import Protego

from mmcurate.filters import reasons
from mmcurate.filters.url_forms import canonical_url
from mmcurate.stages.config import ImagesConfig

log = logging.getLogger(__name__)

REDIRECTS = frozenset({301, 302, 303, 307, 308})
# Served when the declared type says nothing: the magic bytes decide later.
GENERIC_TYPES = frozenset({"", "application/octet-stream", "binary/octet-stream", "application/unknown"})
ROBOTS_MAX_BYTES = 500 * 1024  # RFC 9309 sec. 2.5: parse at least 500 KiB
_DISALLOW_ALL = "User-agent: *\nDisallow: /\n"
_CHUNK = 64 * 1024

# ---------------------------------------------------------------------------------
# Hosts (canonical_url: filters/url_forms.py)
# ---------------------------------------------------------------------------------

_DEFAULT_PORTS = {"http": 80, "https": 443}


def host_key(url: str) -> str:
    """scheme://host[:port] of a canonical URL: the unit of robots.txt and politeness."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"


# ---------------------------------------------------------------------------------
# Addresses: the SSRF guard and the DNS cache
# ---------------------------------------------------------------------------------


class RefusedAddress(OSError):
    """A host that resolves to an address the guard refuses."""


def _ip_or_none(text: str) -> Optional[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    try:
        return ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None


_NAT64 = ipaddress.ip_network("64:ff9b::/96")  # RFC 6052 well-known prefix
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")  # RFC 4291 2.5.5.1 (deprecated)
_LOW32 = 0xFFFFFFFF


def embedded_ipv4(ip: ipaddress.IPv6Address) -> list[tuple[str, ipaddress.IPv4Address]]:
    """The IPv4 addresses an IPv6 address carries, with the form that carries each:
    6to4 (RFC 3056), Teredo server and client (RFC 4380), NAT64 (RFC 6052),
    IPv4-compatible (RFC 4291) and ISATAP (RFC 5214) interface ids. A packet to such
    an address ends up at (or is relayed through) the embedded IPv4 host."""
    found: list[tuple[str, ipaddress.IPv4Address]] = []
    if ip.sixtofour is not None:
        found.append(("6to4", ip.sixtofour))
    if ip.teredo is not None:
        server, client = ip.teredo
        found += [("Teredo server", server), ("Teredo client", client)]
    if ip in _NAT64:
        found.append(("NAT64", ipaddress.IPv4Address(int(ip) & _LOW32)))
    if ip in _IPV4_COMPATIBLE and int(ip) > 1:  # not :: or ::1
        found.append(("IPv4-compatible", ipaddress.IPv4Address(int(ip) & _LOW32)))
    if (int(ip) >> 32) & 0xFDFFFFFF == 0x00005EFE:  # ISATAP interface id ...:[02]00:5efe:a.b.c.d
        found.append(("ISATAP", ipaddress.IPv4Address(int(ip) & _LOW32)))
    return found


def _refused_one(ip: ipaddress.IPv4Address | ipaddress.IPv6Address, allowed: Sequence[ipaddress._BaseNetwork]) -> str:
    if any(ip in net for net in allowed):
        return ""
    for attr in ("is_loopback", "is_private", "is_link_local", "is_multicast", "is_reserved", "is_unspecified"):
        if getattr(ip, attr):
            return attr.removeprefix("is_")
    if not ip.is_global:  # shared address space, documentation ranges, ...
        return "not_global"
    return ""


def refused_reason(address: str, allowed: Sequence[ipaddress._BaseNetwork]) -> str:
    """Why ``address`` may not be fetched ("" when it may). An IPv6 address that
    embeds an IPv4 address is refused when either one is, e.g.
    ``"private: 6to4 embeds 169.254.169.254"``."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    why = _refused_one(ip, allowed)
    if why or not isinstance(ip, ipaddress.IPv6Address):
        return why
    for form, inner in embedded_ipv4(ip):
        why = _refused_one(inner, allowed)
        if why:
            return f"{why}: {form} embeds {inner}"
    return ""


class GuardedResolver(AbstractResolver):
    """Resolves with the system resolver (in a thread), caches answers for
    ``ttl`` seconds and refuses hosts with any address the guard refuses."""

    def __init__(self, allowed_networks: Iterable[str] = (), ttl: float = 300.0):
        self._allowed = [ipaddress.ip_network(n, strict=False) for n in allowed_networks]
        self._ttl = ttl
        self._cache: dict[tuple[str, int], tuple[float, list[dict]]] = {}
        self.lookups = 0  # answers not served from the cache

    def check_literal(self, host: str) -> None:
        """Raise RefusedAddress for a refused IP literal (aiohttp does not resolve those)."""
        if _ip_or_none(host.strip("[]")) is None:
            return
        why = refused_reason(host.strip("[]"), self._allowed)
        if why:
            raise RefusedAddress(f"{host} is {why}")

    async def resolve(self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET) -> list[dict]:
        key = (host, port)
        now = time.monotonic()
        cached = self._cache.get(key)
        if cached is not None and cached[0] > now:
            answer = cached[1]
        else:
            self.lookups += 1
            loop = asyncio.get_running_loop()
            infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM, family=socket.AF_UNSPEC)
            answer = [
                {
                    "hostname": host,
                    "host": info[4][0],
                    "port": info[4][1],
                    "family": info[0],
                    "proto": info[2],
                    "flags": socket.AI_NUMERICHOST,
                }
                for info in infos
            ]
            self._cache[key] = (now + self._ttl, answer)
        for entry in answer:
            why = refused_reason(entry["host"], self._allowed)
            if why:
                raise RefusedAddress(f"{host} resolves to {entry['host']} ({why})")
        return answer

    async def close(self) -> None:
        self._cache.clear()


# ---------------------------------------------------------------------------------
# Opt-out headers
# ---------------------------------------------------------------------------------


def opted_out(header_values: Iterable[str], token: str, directives: Iterable[str]) -> str:
    """The first disallowed directive that ``X-Robots-Tag`` values apply to us ("" if none).

    A value is a comma-separated list of directives, optionally led by ``name:``
    (then it applies only to that user agent); e.g. ``noai, noimageai`` or
    ``otherbot: noindex``."""
    wanted = {d.lower() for d in directives}
    token = token.lower()
    for value in header_values:
        agent = ""
        for part in value.split(","):
            part = part.strip().lower()
            if ":" in part:
                name, _, rest = part.partition(":")
                if name.strip() not in ("unavailable_after",):
                    agent, part = name.strip(), rest.strip()
            if agent and agent != token:
                continue
            if part in wanted:
                return part
    return ""


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
    # "rejected" for the reason codes above; "error" for an exception nobody foresaw
    # (then ``reason`` is its type name).
    kind: str = "rejected"


class _Failure(Exception):
    def __init__(self, reason: str, detail: str = "", value: Optional[float] = None, threshold: Optional[float] = None):
        super().__init__(detail)
        self.reason = reason
        self.detail = detail
        self.value = value
        self.threshold = threshold


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
    if scheme not in _DEFAULT_PORTS:
        raise _Failure(reasons.IMAGE_UNSUPPORTED_SCHEME, f"scheme {scheme!r}")
    if not host:
        raise _Failure(reasons.IMAGE_INVALID_URL, f"{url[:200]}: no host")
    if _ip_or_none(host) is None:
        try:
            ascii_host = host.rstrip(".").encode("idna").decode("ascii")
        except UnicodeError as exc:
            raise _Failure(reasons.IMAGE_INVALID_URL, f"{url[:200]}: host {host[:100]!r}: {exc}") from None
        labels = ascii_host.split(".")
        if len(ascii_host) > 253 or not all(_HOST_LABEL.fullmatch(label) for label in labels):
            raise _Failure(reasons.IMAGE_INVALID_URL, f"{url[:200]}: host {host[:100]!r} is not a DNS name")
    return scheme, host, port if port is not None else _DEFAULT_PORTS[scheme]


def _join(base: str, location: str) -> str:
    """The canonical URL a redirect's ``Location`` names; ``_Failure`` if unparseable."""
    try:
        return canonical_url(urljoin(base, location))
    except ValueError as exc:
        raise _Failure(reasons.IMAGE_INVALID_URL, f"redirect to {location[:200]!r}: {exc}") from None


def _retry_after(value: Optional[str]) -> float:
    try:
        return max(0.0, float(value)) if value else 0.0
    except ValueError:
        return 0.0


class ImageFetcher:
    """Fetches image URLs with one aiohttp session; create and use it on one event loop.

    ``requests`` counts HTTP requests sent (robots.txt included)."""

    def __init__(self, config: ImagesConfig):
        self._config = config
        self._session: Optional[aiohttp.ClientSession] = None
        self._resolver = GuardedResolver(config.allowed_networks, config.dns_cache_seconds)
        self._slots: Optional[asyncio.Semaphore] = None
        self._host_slots: dict[str, asyncio.Semaphore] = {}
        self._robots: dict[str, asyncio.Future] = {}
        self._robots_faults: dict[str, str] = {}  # host key -> why its robots.txt counts as disallow-all
        self.requests = 0

    @property
    def resolver(self) -> GuardedResolver:
        return self._resolver

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

    async def fetch(self, url: str) -> Fetched:
        """Fetch one image URL within the deadline; never raises for a bad URL or server."""
        self._ensure_session()
        state = {"attempts": 0, "redirects": 0, "url": url}
        try:
            payload, content_type = await asyncio.wait_for(self._follow(url, state), self._config.deadline_seconds)
        except _Failure as failure:
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
            )
        except asyncio.TimeoutError:
            return Fetched(
                url=url,
                ok=False,
                final_url=state["url"],
                reason=reasons.IMAGE_TIMEOUT,
                threshold=self._config.deadline_seconds,
                detail=f"no complete answer within {self._config.deadline_seconds}s",
                attempts=state["attempts"],
                redirects=state["redirects"],
            )
        except Exception as exc:  # never raise: one hostile URL must not end the run
            log.warning("fetching %s failed unexpectedly: %s: %s", url[:200], type(exc).__name__, exc)
            return Fetched(
                url=url,
                ok=False,
                final_url=state["url"],
                reason=type(exc).__name__,
                kind="error",
                detail=f"{type(exc).__name__}: {exc}"[:300],
                attempts=state["attempts"],
                redirects=state["redirects"],
            )
        return Fetched(
            url=url,
            ok=True,
            payload=payload,
            content_type=content_type,
            final_url=state["url"],
            attempts=state["attempts"],
            redirects=state["redirects"],
        )

    # -- one URL, hop by hop ------------------------------------------------------------

    async def _follow(self, url: str, state: dict) -> tuple[bytes, str]:
        config = self._config
        seen = {url}
        current = url
        while True:
            state["url"] = current
            await self._check_hop(current)
            status, location, payload, content_type = await self._with_retries(current, state)
            if status not in REDIRECTS:
                return payload, content_type
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
        if self._config.respect_robots and not await self._robots_allow(url):
            key = host_key(url)
            fault = self._robots_faults.get(key)
            detail = f"robots.txt of {key} disallows {url}"
            if fault:
                detail = f"robots.txt of {key} unreachable ({fault}): complete disallow, RFC 9309 2.3.1.4"
            raise _Failure(reasons.IMAGE_ROBOTS_DISALLOWED, detail)

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
        key = host_key(url)
        slot = self._host_slots.get(key)
        if slot is None:
            slot = self._host_slots[key] = asyncio.Semaphore(self._config.per_host_concurrency)
        return slot

    async def _with_retries(self, url: str, state: dict) -> tuple[int, str, bytes, str]:
        config = self._config
        for attempt in range(config.retries + 1):
            state["attempts"] += 1
            status, location, payload, content_type, retry_after = await self._request(url)
            retryable = status == 429 or 500 <= status < 600
            if not retryable:
                return status, location, payload, content_type
            if attempt == config.retries:
                raise _Failure(reasons.IMAGE_HTTP_STATUS, f"HTTP {status} after {attempt + 1} attempts", value=status)
            await asyncio.sleep(max(config.backoff_seconds * (2**attempt), retry_after))
        raise AssertionError("unreachable")

    async def _request(self, url: str) -> tuple[int, str, bytes, str, float]:
        """One GET: (status, Location, body, content type, Retry-After seconds).

        The body is read only for a 200 that passes the header checks."""
        config = self._config
        session = self._ensure_session()
        async with self._slots, self._host_slot(url):
            self.requests += 1
            try:
                async with session.get(url, allow_redirects=False) as response:
                    status = response.status
                    if status in REDIRECTS:
                        return status, response.headers.get("Location", ""), b"", "", 0.0
                    if status == 429 or 500 <= status < 600:
                        return status, "", b"", "", _retry_after(response.headers.get("Retry-After"))
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
                    return status, "", payload, content_type, 0.0
            except (aiohttp.ClientError, OSError) as exc:
                raise _Failure(reasons.IMAGE_CONNECTION_FAILED, f"{type(exc).__name__}: {exc}") from None
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

    async def _robots_allow(self, url: str) -> bool:
        key = host_key(url)
        future = self._robots.get(key)
        if future is None:
            future = self._robots[key] = asyncio.ensure_future(self._load_robots(key))
        rules = await asyncio.shield(future)
        return True if rules is None else rules.can_fetch(url, self._config.robots_token)

    async def _load_robots(self, key: str) -> Optional[Protego]:
        """Parsed robots.txt of a host; None when there are no rules (4xx)."""
        try:
            return await asyncio.wait_for(self._fetch_robots(key), self._config.deadline_seconds)
        except asyncio.TimeoutError:
            self._robots_faults[key] = f"no answer within {self._config.deadline_seconds}s"
        except Exception as exc:  # a robots.txt must not end the run either
            log.warning("robots.txt of %s failed unexpectedly: %s: %s", key, type(exc).__name__, exc)
            self._robots_faults[key] = f"{type(exc).__name__}: {exc}"[:200]
        return Protego.parse(_DISALLOW_ALL)  # unreachable: complete disallow

    async def _fetch_robots(self, key: str) -> Optional[Protego]:
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
                            self._robots_faults[key] = f"HTTP {status}"
                            return Protego.parse(_DISALLOW_ALL)  # 2.3.1.4: unreachable
                        body = await response.content.read(ROBOTS_MAX_BYTES)
                        return Protego.parse(body.decode("utf-8", errors="replace"))
            except _Failure as exc:
                self._robots_faults[key] = f"{exc.reason}: {exc.detail}"[:200]
            except (aiohttp.ClientError, OSError, ValueError) as exc:
                self._robots_faults[key] = f"{type(exc).__name__}: {exc}"[:200]
            log.debug("robots.txt of %s unreachable: %s", key, self._robots_faults[key])
            return Protego.parse(_DISALLOW_ALL)
        return None  # RFC 9309 2.3.1.2: past the redirect limit, treat as unavailable
