"""What the source planner knows of a page before reading it: pure functions, no Beam.

A Common Crawl columnar-index row names a capture by URL, host, registered domain,
TLD, path, detected MIME type and detected languages
(https://commoncrawl.org/columnar-index). The planner learns yields per registered
domain and per host, and, so that it can say something about hosts it never read,
per value of features that generalise across sites: the TLD, the first detected
language, the MIME type and words of the URL path (``/gallery/``, ``/recipe/``,
``/wiki/``).

The same functions derive these features from a URL alone, for pages of a run that
the given index does not list (a run over whole WARC files): the registered domain
through the Public Suffix List as the ``tld`` package ships it (no download), the
language codes through the Unicode CLDR's language aliases as ``babel`` ships them
(``deu`` -> ``de``; babel and tld come with trafilatura's URL library, courlan).
"""

from __future__ import annotations

import functools
import hashlib
import posixpath
import re
from typing import Iterable, Optional
from urllib.parse import urlsplit

import tld
from babel.core import get_global

# Feature families, as they are keyed in the statistics: "tld:com", "lang:de", ...
FAMILIES = ("tld", "lang", "mime", "path")

# Path words: runs of letters (any script), 3 to 24 characters; digits, ids and
# file extensions say nothing that generalises. At most this many per URL.
_WORD = re.compile(r"[^\W\d_]{3,24}", re.UNICODE)
MAX_PATH_WORDS = 8
_IGNORED_WORDS = frozenset({"www", "html", "htm", "php", "asp", "aspx", "jsp", "index", "cgi", "amp"})


def host_of(url: str) -> str:
    """The URL's host name, lower case, without port or trailing dot ('' if none)."""
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return ""
    return host.rstrip(".")


@functools.lru_cache(maxsize=1 << 16)
def registered_domain(host: str) -> str:
    """The host's registered domain by the Public Suffix List (``www.bbc.co.uk`` ->
    ``bbc.co.uk``); the host itself for IP addresses and names outside the list.
    Cached by host: a crawl's pages share hosts, and a lookup costs ~18 us."""
    if not host:
        return ""
    found = tld.get_fld(host, fix_protocol=True, fail_silently=True)
    return found or host


def tld_of(host: str) -> str:
    """The last label of the host, as the columnar index's ``url_host_tld``."""
    return host.rsplit(".", 1)[-1] if host else ""


def path_of(url: str) -> str:
    try:
        return urlsplit(url).path or "/"
    except ValueError:
        return "/"


def path_words(path: str) -> list[str]:
    """Distinct lower-case words of a URL path, in order (``/Recipes/easy-bread-2`` ->
    ``["recipes", "easy", "bread"]``)."""
    seen: list[str] = []
    for word in _WORD.findall(path.lower()):
        if word in _IGNORED_WORDS or word in seen:
            continue
        seen.append(word)
        if len(seen) == MAX_PATH_WORDS:
            break
    return seen


@functools.lru_cache(maxsize=4096)
def normalise_language(code: Optional[str]) -> str:
    """One language code for the index's ISO 639-3 (``deu``, CLD2 via Common Crawl)
    and the run's ISO 639-1 (``de``, fastText): the two-letter code where there is
    one, the three-letter code otherwise, '' when unknown."""
    if not code:
        return ""
    code = code.strip().lower().replace("_", "-").split("-", 1)[0]
    if len(code) == 3:
        alias = get_global("language_aliases").get(code)
        if alias and len(alias) == 2:
            return alias
    return code


def first_language(content_languages: Optional[str]) -> str:
    """The first (most prevalent) of the index's comma-separated ``content_languages``."""
    if not content_languages:
        return ""
    return normalise_language(content_languages.split(",", 1)[0])


def normalise_mime(mime: Optional[str]) -> str:
    return (mime or "").split(";", 1)[0].strip().lower()


def feature_keys(tld_label: str, language: str, mime: str, words: Iterable[str]) -> list[str]:
    """The feature keys of one page, as the statistics count them."""
    keys = []
    if tld_label:
        keys.append(f"tld:{tld_label}")
    if language:
        keys.append(f"lang:{language}")
    if mime:
        keys.append(f"mime:{mime}")
    keys.extend(f"path:{w}" for w in words)
    return keys


def pointer_key(warc_filename: str, offset: int) -> str:
    """A record's identity across runs and indexes: the WARC file's base name and
    the record's offset. Base names, because a run stamps the full path it read
    (``s3://commoncrawl/crawl-data/...``) while the index holds the path relative to
    the crawl's bucket; Common Crawl's WARC names are unique (crawl, segment time,
    serial number, crawler host)."""
    return f"{posixpath.basename(warc_filename or '')}:{int(offset)}"


def key_hash(text: str) -> int:
    """A signed 64-bit hash (BLAKE2b) of a pointer key or URL: the compact form
    in which the pointers and URLs already read travel to every worker."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "big", signed=True)


def url_hash(url: str) -> int:
    return key_hash("url\x00" + (url or ""))


def unit_hash(seed: int, *parts: str) -> float:
    """A number in (0, 1) fixed by the seed and ``parts``: the planner's only source of
    randomness, so a plan is the same for the same seed on any runner."""
    digest = hashlib.blake2b("\x00".join((str(seed), *parts)).encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return (int.from_bytes(digest, "big") + 0.5) / 2.0**64
