"""Adult (or otherwise unsafe) URL lists, for page URLs and image URLs.

The lists are UT1-style files (https://dsi.ut-capitole.fr/blacklists/, category
``adult``: a ``domains`` file and a ``urls`` file). mmcurate ships UT1's adult
list itself (``filters/data/adult_urls_ut1/``, CC BY-SA 4.0, provenance in the
README there), on by default (``safety.urls.shipped_list``); config can add lists
of its own and an allow-list. A URL is looked up, from the raw URL string:

1. **Domains**: the URL's host (lower-cased, ``www.`` and a trailing dot dropped,
   an internationalised name in its ``xn--`` form, without user and port) is
   refused when it, or a domain it is a subdomain of, is listed: ``a.b.example.com``
   is refused by ``example.com``, never by ``ample.com``. Each list is a DAWG
   (``dawg2``: a minimal automaton, 25 MB for UT1's 4.6 million domains) of the
   names written backwards with a closing dot (``moc.elpmaxe.``), so one call,
   ``prefixes`` of the host written the same way, finds every listed suffix that
   ends at a label boundary. The shipped DAWG leaves out UT1's entries that are
   hosting platforms' suffixes (the Public Suffix List's private section:
   ``dynu.net`` would refuse every customer's site), so a match is always the
   registered domain or one of its subdomains; the suffixes ICANN created for
   adult sites (``xxx``, ``porn``, ``sex``, ``adult``, ``sex.pl``, ``sex.hu``),
   which UT1 lists, stay.
2. **URL prefixes** (UT1's ``urls`` file: host and path, no scheme): the host
   (normalised as above) is looked up in a dict, and only a listed host's path
   and query (lower-cased) are compared with its prefixes.
3. **Substrings** (lists of config's own, ``safety.urls.substring_blocklists``):
   one pattern over the URL in the rules' view (``url_forms.rule_url``).

A URL whose host is an allowed domain, or a subdomain of one
(``safety.urls.allowed_domains``, for the lists' false positives), is never
refused. The stage reads the files (``stages/safety.py``); the functions here
receive the parsed lists and do no I/O.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Pattern

from mmcurate.filters import reasons, urls
from mmcurate.filters.url_forms import rule_url
from mmcurate.filters.verdict import Verdict

# The shipped UT1 adult list (package data): its domains as a DAWG of reversed names
# (``pipeline/build_adult_list.py`` builds it from UT1's ``domains`` file) and its
# ``urls`` file as UT1 publishes it.
SHIPPED_DOMAINS = "domains.dawg"
SHIPPED_URLS = "urls.gz"

DOMAIN = "domain"
PREFIX = "prefix"
SUBSTRING = "substring"

# Scheme and authority of an http(s) URL (a backslash ends it, as browsers read it).
# (Cases spelled out: re.IGNORECASE makes the character classes slower to match.)
_AUTHORITY = re.compile(r"[hH][tT][tT][pP][sS]?://([^/?#\\]*)")
# The common case in one match: an ASCII host without user, port or trailing dot,
# its ``www.`` outside the group.
_PLAIN_HOST = re.compile(r"[hH][tT][tT][pP][sS]?://(?:[wW][wW][wW]\.)?([a-zA-Z0-9.-]*[a-zA-Z0-9-])(?=[/?#\\]|$)")
_match_plain_host = _PLAIN_HOST.match


def shipped_list_dir() -> Path:
    """Where the installed package keeps the UT1 adult list (``mmcurate/filters/data/adult_urls_ut1/``)."""
    return Path(str(resources.files("mmcurate.filters") / "data" / "adult_urls_ut1"))


def normalize_host(host: str) -> str:
    """A host as the lists hold it: lower-cased, without a trailing dot or a leading
    ``www.``, an internationalised name in its ASCII (``xn--``) form."""
    host = host.strip().lower().rstrip(".")
    if host.startswith("www."):
        host = host[4:]
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            pass
    return host


def split_url(url: str) -> Optional[tuple[str, str]]:
    """``(host, rest)`` of an http(s) URL: the host as ``normalize_host`` writes it
    (without user and port) and what follows the authority (path, query,
    fragment); None for any other URL (an inline ``data:`` image has no host)."""
    found = _AUTHORITY.match(url)
    if found is None:
        url = url.strip()
        found = _AUTHORITY.match(url)
        if found is None:
            return None
    return _host(found[1]), url[found.end():]


def _host(authority: str) -> str:
    """``normalize_host`` of an authority's host, written for speed: most hosts need
    only lower-casing and ``www.`` dropped."""
    host = authority.lower()
    if "@" in host or ":" in host:
        host = host.rpartition("@")[2]
        host = host[1:].partition("]")[0] if host[:1] == "[" else host.partition(":")[0]
    if host[:4] == "www.":
        host = host[4:]
    if host[-1:] == "." or not host.isascii():
        host = normalize_host(host)
    return host


def domain_key(domain: str) -> str:
    """A listed domain as its DAWG key: normalised, written backwards, closed by a
    dot (``example.com`` -> ``moc.elpmaxe.``); empty for an empty entry. A URL-shaped
    entry keeps its host."""
    domain = domain.strip()
    if "/" in domain:
        parts = split_url(domain if "://" in domain else f"http://{domain}")
        domain = parts[0] if parts else ""
    host = normalize_host(domain)
    return f"{host[::-1]}." if host else ""


class DomainIndex:
    """A set of domains that answers "is this host, or a domain above it, listed?"
    with one call into a DAWG (module docstring, 1)."""

    __slots__ = ("_dawg", "__weakref__")

    def __init__(self, automaton: Any):
        self._dawg = automaton

    @classmethod
    def build(cls, domains: Iterable[str]) -> "DomainIndex":
        """An index of ``domains`` (entries as UT1 writes them)."""
        import dawg

        keys = sorted({key for key in map(domain_key, domains) if key})
        return cls(dawg.CompletionDAWG(keys, input_is_sorted=True))

    def find(self, host: str) -> Optional[str]:
        """The shortest listed domain that is ``host`` (as ``split_url`` writes it) or
        a domain above it, else None."""
        found = self._dawg.prefixes(host[::-1] + ".")
        return found[0][-2::-1] if found else None

    def __contains__(self, domain: str) -> bool:
        key = domain_key(domain)
        return bool(key) and key in self._dawg

    def domains(self) -> Iterable[str]:
        """Every listed domain (the list as it was built, normalised)."""
        return (key[-2::-1] for key in self._dawg.iterkeys())


class PrefixIndex:
    """UT1 ``urls`` entries (host and path, no scheme) by host (module docstring, 2):
    a host's paths as a tuple (``str.startswith`` tries them all in one C call), or,
    for a host with more than ``TUPLE_MAX`` (UT1 lists 5,844 under ``tumblr.com``), a
    DAWG of them whose ``prefixes`` finds every entry that begins a path in one call."""

    TUPLE_MAX = 16
    __slots__ = ("by_host", "__weakref__")

    def __init__(self, by_host: dict[str, Any]):
        self.by_host = by_host

    @classmethod
    def build(cls, entries: Iterable[str]) -> "PrefixIndex":
        import dawg

        paths_of: dict[str, set[str]] = {}
        for entry in entries:
            entry = entry.strip()
            if not entry or entry.startswith("#"):
                continue
            parts = split_url(entry if "://" in entry else f"http://{entry}")
            if parts is None or not parts[0]:
                continue
            host, rest = parts
            paths_of.setdefault(host, set()).add(rest.lower())
        by_host: dict[str, Any] = {}
        for host, paths in paths_of.items():
            if len(paths) <= cls.TUPLE_MAX:
                by_host[host] = tuple(sorted(paths, key=lambda p: (-len(p), p)))  # longest first
            else:
                by_host[host] = dawg.CompletionDAWG(sorted(paths), input_is_sorted=True)
        return cls(by_host)

    def __bool__(self) -> bool:
        return bool(self.by_host)

    def find(self, host: str, rest: str) -> Optional[str]:
        """The longest listed ``host/path`` prefix of the URL, else None."""
        paths = self.by_host.get(host)
        return None if paths is None else _listed_path(host, paths, rest.lower())


def _listed_path(host: str, paths: Any, rest: str) -> Optional[str]:
    """``host`` and the longest of ``paths`` (a tuple, longest first, or a DAWG) that
    begins ``rest`` (lower-cased), else None."""
    if type(paths) is tuple:
        if rest.startswith(paths):
            return host + next(path for path in paths if rest.startswith(path))
        return None
    found = paths.prefixes(rest)
    return host + found[-1] if found else None


class UrlBlocklist:
    """Every URL list of ``safety.urls``, parsed: domain indexes (the shipped list and
    config's own), URL prefixes, a substring pattern and the allowed domains."""

    __slots__ = ("domain_indexes", "pattern", "prefixes", "allowed", "_lookups", "_paths_of", "match", "__weakref__")

    def __init__(
        self,
        domain_indexes: Iterable[DomainIndex] = (),
        pattern: Optional[Pattern[str]] = None,
        prefixes: Optional[PrefixIndex] = None,
        allowed: Optional[DomainIndex] = None,
    ):
        self.domain_indexes = tuple(domain_indexes)
        self.pattern = pattern
        self.prefixes = prefixes
        self.allowed = allowed
        # what ``match`` calls, bound once
        self._lookups = tuple(index._dawg.prefixes for index in self.domain_indexes)
        self._paths_of = prefixes.by_host.get if prefixes is not None else {}.get
        self.match = self._matcher()

    @classmethod
    def parse(
        cls,
        domain_entries: Iterable[str],
        substring_entries: Iterable[str],
        *,
        prefix_entries: Iterable[str] = (),
        allowed_domains: Iterable[str] = (),
        indexes: Iterable[DomainIndex] = (),
    ) -> "UrlBlocklist":
        """Lists from their entries; ``indexes``: domain indexes already built (the
        shipped one), looked up first."""
        domain_entries = list(domain_entries)
        built = (DomainIndex.build(domain_entries),) if domain_entries else ()
        prefixes = PrefixIndex.build(prefix_entries)
        allowed = list(allowed_domains)
        return cls(
            domain_indexes=tuple(indexes) + built,
            pattern=urls.compile_substrings(substring_entries),
            prefixes=prefixes or None,
            allowed=DomainIndex.build(allowed) if allowed else None,
        )

    def __bool__(self) -> bool:
        return bool(self.domain_indexes) or self.prefixes is not None or self.pattern is not None

    def _matcher(self) -> Callable[[str], Optional[tuple[str, str]]]:
        """``match``, with every list bound as a local of its closure (it runs for
        every page and image URL: the common path is a regex match, a few string
        operations and one DAWG call per domain list)."""
        lookups = self._lookups
        only = lookups[0] if len(lookups) == 1 else None
        paths_of = self._paths_of
        pattern = self.pattern
        allowed = self.allowed.find if self.allowed is not None else None
        plain_host = _match_plain_host

        def match(url: str) -> Optional[tuple[str, str]]:
            """``(DOMAIN, listed domain)``, ``(PREFIX, listed host/path)`` or
            ``(SUBSTRING, matched entry)``, or None (not listed, allowed, or not http(s))."""
            parsed = plain_host(url)
            if parsed is not None:
                host = parsed[1].lower()
            else:
                parsed = _AUTHORITY.match(url)
                if parsed is None:
                    url = url.strip()
                    parsed = _AUTHORITY.match(url)
                    if parsed is None:
                        return None
                host = _host(parsed[1])
            key = host[::-1] + "."
            found = None
            if only is not None:
                listed = only(key)
                if listed:
                    found = (DOMAIN, listed[0][-2::-1])
            else:
                for prefixes in lookups:
                    listed = prefixes(key)
                    if listed:
                        found = (DOMAIN, listed[0][-2::-1])
                        break
            if found is None:
                paths = paths_of(host)
                if paths is not None:
                    entry = _listed_path(host, paths, url[parsed.end():].lower())
                    if entry is not None:
                        found = (PREFIX, entry)
                if found is None and pattern is not None:
                    hit = pattern.search(rule_url(url))
                    if hit:
                        found = (SUBSTRING, hit.group(0).lower())
            if found is not None and allowed is not None and allowed(host) is not None:
                return None
            return found

        return match


_PAGE_REASONS = {
    DOMAIN: reasons.URL_BLOCKLISTED_DOMAIN,
    PREFIX: reasons.URL_BLOCKLISTED_PREFIX,
    SUBSTRING: reasons.URL_BLOCKLISTED_SUBSTRING,
}
_IMAGE_REASONS = {
    DOMAIN: reasons.IMAGE_BLOCKLISTED_DOMAIN,
    PREFIX: reasons.IMAGE_BLOCKLISTED_PREFIX,
    SUBSTRING: reasons.IMAGE_BLOCKLISTED_SUBSTRING,
}


# The verdict of every URL that no list refuses: one object, as a verdict is made
# for every page and image URL and a fresh one costs more than the lookup.
_NOT_LISTED = Verdict(keep=True, signals=MappingProxyType({}))


@lru_cache(maxsize=1 << 14)
def _rejection(reason: str, detail: str) -> Verdict:
    """The verdict refusing a URL (one per listed entry: the pages of a listed site
    share it, as verdicts are immutable)."""
    return Verdict(keep=False, reason=reason, detail=detail, signals=MappingProxyType({}))


def page_url(url: str, *, blocklist: UrlBlocklist) -> Verdict:
    """Reject a page whose URL is listed (``url.blocklisted_domain``,
    ``url.blocklisted_prefix`` or ``url.blocklisted_substring``; the detail names
    the entry)."""
    found = blocklist.match(url)
    if found is None:
        return _NOT_LISTED
    return _rejection(_PAGE_REASONS[found[0]], found[1])


def image_url(url: str, *, blocklist: UrlBlocklist) -> Verdict:
    """Reject an image whose URL is listed (``image.blocklisted_domain``,
    ``image.blocklisted_prefix`` or ``image.blocklisted_substring``)."""
    found = blocklist.match(url)
    if found is None:
        return _NOT_LISTED
    return _rejection(_IMAGE_REASONS[found[0]], found[1])
