"""The SSRF guard of image retrieval: which addresses may be fetched, and a resolver
that refuses the others.

``GuardedResolver`` resolves with the system resolver, caches answers and refuses
loopback, private, link-local, multicast, reserved and unspecified addresses unless
``allowed_networks`` lists them. An IPv6 address that embeds an IPv4 address
(IPv4-mapped and -compatible, 6to4 2002::/16, Teredo 2001::/32, NAT64 64:ff9b::/96,
ISATAP) is refused when the embedded address is. aiohttp connects only to addresses
this resolver returned, so a DNS answer cannot change between the check and the
connection.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import time
from typing import Iterable, Optional, Sequence

from aiohttp.abc import AbstractResolver


class RefusedAddress(OSError):
    """A host that resolves to an address the guard refuses."""


def ip_or_none(text: str) -> Optional[ipaddress.IPv4Address | ipaddress.IPv6Address]:
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
        if ip_or_none(host.strip("[]")) is None:
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
