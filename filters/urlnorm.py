"""URL normalisation for URL dedup, without Beam.

Two captures of one page rarely carry byte-identical URLs. ``normalize_url`` maps
the variants to one key:

- scheme and host case, percent-encoding, IDNA hosts, default ports (``:80``,
  ``:443``), dot segments in the path: by the maintained ``url-normalize`` package
  (RFC 3986 normalisation);
- ``http`` and ``https`` fold to ``https`` when ``fold_scheme`` (the same page served
  both ways);
- the fragment is dropped (it never reaches the server);
- tracking parameters are dropped: names in ``strip_params``, where a trailing
  ``*`` matches a prefix (``utm_*``);
- the remaining query parameters are sorted (stable, so repeated names keep their
  order).
"""

from __future__ import annotations

from typing import Sequence
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from url_normalize import url_normalize

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


def normalize_url(url: str, strip_params: Sequence[str] = DEFAULT_STRIP_PARAMS, fold_scheme: bool = True) -> str:
    """The dedup key of ``url``; "" for an empty URL; an unparseable one is returned stripped."""
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
