"""The SSRF guard of image retrieval: which addresses may be fetched.

``refused_reason`` refuses loopback, private, link-local, multicast, reserved and
unspecified addresses unless ``allowed_networks`` lists them. An IPv6 address that
embeds an IPv4 address (IPv4-mapped and -compatible, 6to4 2002::/16, Teredo
2001::/32, NAT64 64:ff9b::/96, ISATAP) is refused when the embedded address is. The
resolver the fetcher uses (``dns_cache.GuardedDnsResolver``) applies it to every
answer, and aiohttp connects only to addresses that resolver returned, so a DNS
answer cannot change between the check and the connection.
"""

from __future__ import annotations

import ipaddress
from typing import Optional, Sequence



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
