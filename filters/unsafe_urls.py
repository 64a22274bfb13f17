"""Adult (or otherwise unsafe) URL lists, for page URLs and image URLs.

The lists are UT1-style files (https://dsi.ut-capitole.fr/blacklists/, category
``adult``: a ``domains`` file and a ``urls`` file), parsed as ``filters/urls.py``
parses the heuristics stage's blocklists: a listed domain also blocks its
subdomains, a substring matches the normalised URL. The stage reads the files
(``safety.urls``); the functions here receive the parsed lists and do no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional, Pattern

from mmcurate.filters import reasons, urls
from mmcurate.filters.url_forms import rule_url, url_host
from mmcurate.filters.verdict import Verdict, keep, reject

DOMAIN = "domain"
SUBSTRING = "substring"


@dataclass(frozen=True)
class UrlBlocklist:
    domains: frozenset[str]
    pattern: Optional[Pattern[str]]

    @classmethod
    def parse(cls, domain_entries: Iterable[str], substring_entries: Iterable[str]) -> "UrlBlocklist":
        return cls(urls.parse_domains(domain_entries), urls.compile_substrings(substring_entries))

    def __bool__(self) -> bool:
        return bool(self.domains) or self.pattern is not None

    def match(self, url: str) -> Optional[tuple[str, str]]:
        """``(DOMAIN, listed domain)`` or ``(SUBSTRING, matched entry)``, or None.
        Only http(s) URLs are looked up (an inline ``data:`` image has no host)."""
        if not url[:6].lower().startswith(("http:", "https:")):
            return None
        if self.domains:
            labels = url_host(url).split(".")
            for i in range(len(labels)):
                candidate = ".".join(labels[i:])
                if candidate in self.domains:
                    return DOMAIN, candidate
        if self.pattern is not None:
            found = self.pattern.search(rule_url(url))
            if found:
                return SUBSTRING, found.group(0).lower()
        return None


_PAGE_REASONS = {DOMAIN: reasons.URL_BLOCKLISTED_DOMAIN, SUBSTRING: reasons.URL_BLOCKLISTED_SUBSTRING}
_IMAGE_REASONS = {DOMAIN: reasons.IMAGE_BLOCKLISTED_DOMAIN, SUBSTRING: reasons.IMAGE_BLOCKLISTED_SUBSTRING}


def page_url(url: str, *, blocklist: UrlBlocklist) -> Verdict:
    """Reject a page whose URL is listed (``url.blocklisted_domain`` or
    ``url.blocklisted_substring``; the detail names the entry)."""
    found = blocklist.match(url)
    if found is None:
        return keep()
    return reject(_PAGE_REASONS[found[0]], None, None, detail=found[1])


def image_url(url: str, *, blocklist: UrlBlocklist) -> Verdict:
    """Reject an image whose URL is listed (``image.blocklisted_domain`` or
    ``image.blocklisted_substring``)."""
    found = blocklist.match(url)
    if found is None:
        return keep()
    return reject(_IMAGE_REASONS[found[0]], None, None, detail=found[1])
