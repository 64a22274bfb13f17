"""URL rules: the URL in its rules' view (``url_forms.rule_url``) checked against
domain and substring blocklists.

The blocklists are plain text files, one entry a line, ``#`` starting a comment:
the format of the UT1 blacklists of Université Toulouse 1 Capitole
(https://dsi.ut-capitole.fr/blacklists/, one directory per category with a
``domains`` and a ``urls`` file), which is what C4, RefinedWeb and FineWeb used for
their URL filtering. ``filters/data/`` ships small example files only.

Reading the files is the stage's job (``read_entries``); the filters here receive
the parsed sets and do no I/O.
"""

from __future__ import annotations

import re
from typing import Iterable, Pattern

from mmcurate.filters import reasons
from mmcurate.filters.url_forms import rule_url, url_host
from mmcurate.filters.verdict import Verdict, keep, reject
from mmcurate.schemas import Document


def read_entries(lines: Iterable[str]) -> list[str]:
    """Entries of a blocklist file: stripped, lowercased, comments and blanks skipped."""
    out = []
    for line in lines:
        entry = line.split("#", 1)[0].strip().lower()
        if entry:
            out.append(entry)
    return out


def parse_domains(entries: Iterable[str]) -> frozenset[str]:
    """Domain entries as hosts: a URL-shaped entry keeps only its host; ``www.`` dropped."""
    domains = set()
    for entry in entries:
        host = url_host(entry if "://" in entry else f"http://{entry}")
        if host:
            domains.add(host)
    return frozenset(domains)


def compile_substrings(entries: Iterable[str]) -> Pattern[str] | None:
    """One case-insensitive pattern matching any entry (longest entries first)."""
    unique = sorted({e for e in entries if e}, key=lambda e: (-len(e), e))
    if not unique:
        return None
    return re.compile("|".join(re.escape(e) for e in unique), re.IGNORECASE)


def blocklisted_domain(doc: Document, *, domains: frozenset[str]) -> Verdict:
    """Reject a document whose host, or any parent domain of it, is listed."""
    host = url_host(doc.url)
    labels = host.split(".")
    for i in range(len(labels)):
        candidate = ".".join(labels[i:])
        if candidate in domains:
            return reject(reasons.URL_BLOCKLISTED_DOMAIN, None, None, detail=candidate)
    return keep()


def blocklisted_substring(doc: Document, *, pattern: Pattern[str] | None) -> Verdict:
    """Reject a document whose normalised URL contains a listed substring."""
    if pattern is None:
        return keep()
    match = pattern.search(rule_url(doc.url))
    if match:
        return reject(reasons.URL_BLOCKLISTED_SUBSTRING, None, None, detail=match.group(0).lower())
    return keep()
