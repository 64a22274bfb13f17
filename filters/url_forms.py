"""The forms of a URL the pipeline uses, each named for what it is for.

- ``canonical_url``: the identity of an image URL, and the URL that is fetched and
  reported. Computed once, at extraction, for every image node's ``src`` and
  ``candidates``; retrieval, the images table and recycle use it as it is.
- ``dedup_key``: the key of URL dedup (stage dedup, ``dedup.same_url``): two
  captures of one page share it. Tracking parameters dropped, query sorted,
  ``http`` folded into ``https``.
- ``rule_url`` (and ``url_host``): the URL as the URL rules (blocklists) see it:
  host in Unicode, ``www.`` dropped, path and query as written.
- ``capture_key``: the SURT that matches an image URL written on a page to a
  capture of it in the input WARCs (IIPC's ``urlcanon``).

Why they are not one form (tests/filters/test_url_forms.py shows each):

- ``canonical_url`` is written here rather than taken from ``url-normalize``:
  that package merges empty path segments (``/photos//2019/a.jpg`` becomes
  ``/photos/2019/a.jpg``, another object on S3 and most object stores) and leaves
  ``[`` and ``]`` unescaped in a path, so the URL it gives is not always the one
  the page points at (``test_canonical_url_keeps_the_resource``).
- ``dedup_key`` is built from the URL as captured, by ``url-normalize``, not from
  ``canonical_url``: it keeps a ``#!`` route as ``_escaped_fragment_``, where the
  fetch form drops the fragment, so that two routes of one single-page site stay
  two pages (``test_dedup_key_keeps_hashbang_routes_apart``); and it merges more
  spellings (dot segments, empty segments) than a fetch may.
- ``rule_url`` keeps path and query as the page writes them, so that a substring
  entry of a blocklist matches what it was written against, and writes the host
  in Unicode with ``www.`` dropped, as domain lists write it (``test_rule_url``);
  ``url-normalize`` would give punycode and keep ``www.``.
"""


from __future__ import annotations

import ipaddress
import re
from typing import Sequence
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import urlcanon
from url_normalize import url_normalize

# ---------------------------------------------------------------------------------
# The canonical URL: identity and fetch form
# ---------------------------------------------------------------------------------

_DEFAULT_PORTS = {"http": 80, "https": 443}
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_PATH_SAFE = "/:@!$&'()*+,;=-._~%"
_QUERY_SAFE = _PATH_SAFE + "?"


def _normalize_escapes(text: str, safe: str) -> str:
    """Percent-escapes of unreserved characters decoded, the others upper-cased,
    and characters that must be escaped (spaces, non-ASCII as UTF-8) escaped."""

    def fix(match: re.Match) -> str:
        char = chr(int(match.group(1), 16))
        return char if char in _UNRESERVED else "%" + match.group(1).upper()

    text = _ESCAPE.sub(fix, text)
    # A lone "%" not starting an escape becomes %25.
    text = re.sub(r"%(?![0-9A-F]{2})", "%25", text)
    return quote(text, safe=safe)


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def canonical_url(url: str) -> str:
    """The form two spellings of one image URL share: scheme and host lower-cased,
    IDN hosts in punycode, default port dropped, empty path "/", percent-encoding
    normalised, fragment dropped. A URL that cannot be parsed is returned stripped."""
    url = url.strip()
    try:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        host = (parts.hostname or "").rstrip(".")
        port = parts.port
    except ValueError:
        return url
    if scheme not in _DEFAULT_PORTS or not host:
        return url
    try:
        host = host.encode("idna").decode("ascii").lower()
    except UnicodeError:
        host = host.lower()
    if ":" in host:  # IPv6 literal
        if not _is_ip(host):
            return url  # "[%5B::1%5D]" and the like: not a host, left for the fetch to refuse
        host = f"[{host}]"
    netloc = host if port in (None, _DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    if parts.username or parts.password:
        userinfo = parts.username or ""
        if parts.password:
            userinfo += f":{parts.password}"
        netloc = f"{userinfo}@{netloc}"
    path = _normalize_escapes(parts.path or "/", _PATH_SAFE)
    query = _normalize_escapes(parts.query, _QUERY_SAFE)
    return urlunsplit((scheme, netloc, path, query, ""))


# ---------------------------------------------------------------------------------
# The dedup key
# ---------------------------------------------------------------------------------

# Click and campaign identifiers that change nothing on the page. Names taken from
# the query-stripping lists of Firefox (Enhanced Tracking Protection, "strip on
# share") and the ClearURLs project's rules: Google Analytics/Ads (utm_*, gclid,
# dclid, gbraid, wbraid, _ga, _gl), Meta (fbclid), Microsoft Ads (msclkid),
# Mailchimp (mc_cid, mc_eid), Yandex (yclid), Instagram (igshid), HubSpot
# (_hsenc, _hsmi), Marketo (mkt_tok), Olytics (oly_anon_id, oly_enc_id), Vero (vero_id).
DEFAULT_STRIP_PARAMS: tuple[str, ...] = (
    "utm_*",
    "gclid",
    "dclid",
    "gbraid",
    "wbraid",
    "_ga",
    "_gl",
    "fbclid",
    "msclkid",
    "mc_cid",
    "mc_eid",
    "yclid",
    "igshid",
    "_hsenc",
    "_hsmi",
    "mkt_tok",
    "oly_anon_id",
    "oly_enc_id",
    "vero_id",
)


def _is_stripped(name: str, exact: frozenset[str], prefixes: tuple[str, ...]) -> bool:
    name = name.lower()
    return name in exact or name.startswith(prefixes)


def dedup_key(url: str, strip_params: Sequence[str] = DEFAULT_STRIP_PARAMS, fold_scheme: bool = True) -> str:
    """The URL dedup key of ``url``: RFC 3986 normalisation by the maintained
    ``url-normalize`` package (scheme and host case, percent-encoding, IDNA hosts,
    default ports, dot segments), fragment dropped, tracking parameters
    (``strip_params``; a trailing ``*`` matches a prefix) dropped, the other query
    parameters sorted by name (stable: repeated names keep their order), ``http``
    folded into ``https`` when ``fold_scheme``. "" for an empty URL; an unparseable
    one is returned stripped."""
    url = url.strip()
    if not url:
        return ""
    try:
        normalized = url_normalize(url) or url
        parts = urlsplit(normalized)
    except (ValueError, UnicodeError):
        return url
    exact = frozenset(p.lower() for p in strip_params if not p.endswith("*"))
    prefixes = tuple(p[:-1].lower() for p in strip_params if p.endswith("*"))
    query = [
        (k, v)
        for k, v in parse_qsl(parts.query, keep_blank_values=True)
        if not _is_stripped(k, exact, prefixes)
    ]
    query.sort(key=lambda kv: kv[0])
    scheme = parts.scheme
    if fold_scheme and scheme == "http":
        scheme = "https"
    return urlunsplit((scheme, parts.netloc, parts.path or "/", urlencode(query), ""))


# ---------------------------------------------------------------------------------
# The rules' view
# ---------------------------------------------------------------------------------

_RULE_DEFAULT_PORTS = {"http": "80", "https": "443"}


def rule_url(url: str) -> str:
    """The URL as the URL rules see it: scheme and host lowercased, IDNA hosts
    decoded to Unicode, default port, ``www.`` prefix, fragment and empty query
    dropped, an empty path written as ``/``. Path and query keep their case."""
    url = url.strip()
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return url.lower()
    scheme = parts.scheme.lower()
    host = host.rstrip(".")
    if "xn--" in host:
        try:
            host = host.encode("ascii").decode("idna")
        except UnicodeError:
            pass
    host = host.lower().removeprefix("www.")
    netloc = host
    if port is not None and str(port) != _RULE_DEFAULT_PORTS.get(scheme):
        netloc = f"{host}:{port}"
    return urlunsplit((scheme, netloc, parts.path or "/", parts.query, ""))


def url_host(url: str) -> str:
    """The host of ``rule_url(url)``, without port."""
    return urlsplit(rule_url(url)).hostname or ""


# ---------------------------------------------------------------------------------
# The capture key
# ---------------------------------------------------------------------------------


def capture_key(url: str) -> str:
    """The SURT of ``url`` (``org,wikimedia,upload)/wikipedia/...``), or the URL
    stripped when it cannot be parsed.

    Pages and crawlers spell one URL in many ways: ``Mona_Lisa%2C_by...`` on the
    page, ``Mona_Lisa,_by...`` in the archive; ``http`` and ``https``; ``www.`` or
    not; query parameters in another order. Web archives look captures up by SURT
    (Sort-friendly URI Reordering Transform), the key Common Crawl's CDX index and
    pywb sort by. This is IIPC's ``urlcanon`` (Apache-2.0) ``aggressive``
    canonicaliser, its counterpart of the IA canonicalisation the AGPL ``surt``
    package applies (percent-escapes decoded and re-escaped minimally, host and path
    lower-cased, ``www.`` dropped, query arguments sorted, scheme and fragment
    dropped), written in SURT form without scheme or trailing comma: the same keys
    as ``surt.surt`` on the fixture WARCs' URLs but where an escaped ``%3F`` or
    ``%3D`` stays escaped (``surt`` turns an escaped ``?`` in a path into a query).
    The canonical URL stays the URL that is fetched and reported; the capture key
    only decides which capture belongs to which URL."""
    url = url.strip()
    try:
        return urlcanon.aggressive(url).surt(with_scheme=False, trailing_comma=False).decode("utf-8", "replace")
    except Exception:  # malformed URLs: a parser may raise more than ValueError
        return url
