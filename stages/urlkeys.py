"""The key that matches an image URL written on a page to a capture of it in the
input WARCs.

Pages and crawlers spell one URL in many ways: ``Mona_Lisa%2C_by...`` on the page,
``Mona_Lisa,_by...`` in the archive; ``http`` and ``https``; ``www.`` or not; query
parameters in another order. Web archives look captures up by a SURT (Sort-friendly
URI Reordering Transform) key: Common Crawl's CDX index and pywb both build it with
the ``surt`` package, whose default canonicaliser (IA's "Google" canonicalisation:
percent-escapes decoded repeatedly and re-escaped minimally, host and path
lower-cased, ``www.`` and session ids dropped, query arguments sorted, scheme and
fragment dropped) is what ``capture_key`` applies. RFC 3986 normalisation
(``retrieval.canonical_url``) stays the URL that is fetched and reported; the
capture key only decides which capture belongs to which URL.
"""

from __future__ import annotations

import surt as _surt


def capture_key(url: str) -> str:
    """The SURT of ``url`` (``org,wikimedia,upload)/wikipedia/...``), or the URL
    stripped when ``surt`` cannot parse it."""
    url = url.strip()
    try:
        return _surt.surt(url)
    except Exception:  # surt raises a variety of errors on malformed URLs
        return url
