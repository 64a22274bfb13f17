"""Personal data in kept text: e-mail addresses, IP addresses (v4 and v6) and phone
numbers replaced by placeholders.

Precision comes first: a redaction that eats a version number, a date, an ISBN or
a price damages the text for nothing. So:

- **e-mail**: an RFC 5322 dot-atom local part, ``@``, a domain of labels ending in
  an alphabetic top-level domain; image file names such as ``logo@2x.png`` are not
  addresses (their "TLD" is a file extension).
- **IPv4**: four dotted decimal octets 0-255 without leading zeros, not inside a
  longer dotted or alphanumeric run, not after a word that makes it a number
  (version, release, build, firmware, section, chapter, figure, table, ...),
  and validated by ``ipaddress``; with ``public_only`` (datatrove's
  ``only_remove_public_ips``) only globally routable addresses count, so
  ``127.0.0.1`` and ``192.168.1.1`` in a tutorial stay.
- **IPv6**: colon-separated hex groups that ``ipaddress`` parses, with at least
  three groups and a ``::`` or all eight groups (clock times and MAC addresses do
  not parse), global only with ``public_only``.
- **phone numbers**: candidate digit runs (at least 7 digits, with spaces, dots,
  dashes, slashes or brackets, an optional ``+``) are handed to Google's
  libphonenumber (the ``phonenumberslite`` port, ``PhoneNumberMatcher`` with
  ``Leniency.VALID``: the number must be valid for its region's numbering plan). A
  number with a ``+`` prefix is read in its own country; one without it in the
  region given (the page's country-code TLD, else the configured default). ISBNs
  (``ISBN`` before them, or a 978/979 EAN-13 with a valid check digit), dates and
  amounts after a currency sign are never candidates, nor is a bare run of digits
  without ``+`` or separators (order, tracking and account numbers look like that).

``Redactor.redact`` is pure: text in, text and counts out.
"""

from __future__ import annotations

import dataclasses
import functools
import ipaddress
import re
from collections import Counter
from dataclasses import dataclass
from typing import Mapping, Optional

from mmcurate.schemas import Document, ImageNode, TextNode

EMAIL = "email"
IP = "ip"
PHONE = "phone"
KINDS = (EMAIL, IP, PHONE)


def signal(kind: str) -> str:
    """The document signal counting replacements of ``kind``."""
    return f"pii.{kind}"


REPLACED = "pii.replaced"  # all kinds together

_EMAIL = (
    r"(?<![\w.+%-])[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
    r"@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+(?P<tld>[A-Za-z]{2,24})(?![\w-])"
)
_FILE_EXTENSIONS = frozenset({"png", "jpg", "jpeg", "gif", "webp", "svg", "avif", "bmp", "ico", "css", "js", "pdf"})

_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_IPV4 = rf"(?<![\w.]){_OCTET}(?:\.{_OCTET}){{3}}(?![\w]|\.\w)"
_IPV6 = r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9A-Fa-f]{1,4}|:)?(?![\w:])"
# Words after which a dotted number is a number, not an address.
_NUMBER_CONTEXT = re.compile(
    r"(?:\bv|\bver\.?|\bversion|\brelease[ds]?|\bbuild|\bfirmware|\bupdate|\bpatch|\bkernel|\bsection|\bchapter"
    r"|\bfig\.?|\bfigure|\btable|\brule|\bclause|\barticle|\bart\.|\bitem|\bstep|§|\bversi[oó]n|\bfassung)"
    r"\s*[:#]?\s*$",
    re.IGNORECASE,
)

# Phone candidates: an optional + (or 00), then digits with common separators.
_PHONE_CANDIDATE = r"(?<![\w.+/-])(?:\+|00)?\(?\d[\d ().\-/\u00a0]{5,22}\d(?![\w]|[.,]\d)"
# One scan per text for candidates of every kind; each is then checked on its own.
_CANDIDATES = re.compile(
    rf"(?P<email>{_EMAIL})|(?P<ipv4>{_IPV4})|(?P<ipv6>{_IPV6})|(?P<phone>{_PHONE_CANDIDATE})"
)
_DIGITS = re.compile(r"\d")
_DATE = re.compile(r"^\s*(?:\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4})\s*$")
_ISBN_BEFORE = re.compile(r"isbn(?:-1[03])?\s*[:#]?\s*$", re.IGNORECASE)
_CURRENCY_BEFORE = re.compile(r"[$€£¥₹₽₩]\s*$|\b(?:usd|eur|gbp|chf|jpy|cny|rmb)\s*$", re.IGNORECASE)

# Country-code TLDs whose region code differs from the TLD.
_TLD_REGION = {"uk": "GB", "eu": ""}


def region_for_url(url: str, default: str) -> str:
    """The phone region of a page: its country-code TLD when it is one, else ``default``."""
    host = re.sub(r"^[a-z]+://", "", url.lower()).split("/", 1)[0].split(":", 1)[0]
    tld = host.rsplit(".", 1)[-1] if "." in host else ""
    if len(tld) == 2 and tld.isalpha():
        region = _TLD_REGION.get(tld, tld.upper())
        if region and region in _known_regions():
            return region
    return default


@functools.lru_cache(maxsize=1)
def _known_regions() -> frozenset[str]:
    from phonenumbers import COUNTRY_CODE_TO_REGION_CODE

    return frozenset(r for regions in COUNTRY_CODE_TO_REGION_CODE.values() for r in regions)


def _isbn13(digits: str) -> bool:
    if len(digits) != 13 or not digits.startswith(("978", "979")):
        return False
    total = sum(int(d) * (1 if i % 2 == 0 else 3) for i, d in enumerate(digits[:12]))
    return (10 - total % 10) % 10 == int(digits[12])


@dataclass(frozen=True)
class Redactor:
    """Replaces personal data by placeholders; a kind whose placeholder is None is kept."""

    email: Optional[str] = "<EMAIL>"
    ip: Optional[str] = "<IP_ADDRESS>"
    phone: Optional[str] = "<PHONE>"
    public_only: bool = True

    def _ip_ok(self, address: str) -> bool:
        try:
            parsed = ipaddress.ip_address(address)
        except ValueError:
            return False
        return parsed.is_global if self.public_only else True

    def _spans(self, text: str, region: str) -> list[tuple[int, int, str]]:
        """Every item to replace, from one scan of ``text`` for candidates of any kind."""
        spans: list[tuple[int, int, str]] = []
        for m in _CANDIDATES.finditer(text):
            kind = m.lastgroup
            start, end = m.span()
            if kind == "email":
                if self.email is not None and m.group("tld").lower() not in _FILE_EXTENSIONS:
                    spans.append((start, end, EMAIL))
            elif kind == "ipv4":
                if self.ip is not None and not _NUMBER_CONTEXT.search(text[max(0, start - 24) : start]) and self._ip_ok(m.group()):
                    spans.append((start, end, IP))
            elif kind == "ipv6":
                candidate = m.group()
                groups = [g for g in candidate.split(":") if g]
                if self.ip is not None and len(groups) >= 3 and ("::" in candidate or len(groups) == 8) and self._ip_ok(candidate):
                    spans.append((start, end, IP))
            elif self.phone is not None:
                spans += self._phone_spans(text, m, region)
        return spans

    def _phone_spans(self, text: str, m: "re.Match[str]", region: str) -> list[tuple[int, int, str]]:
        import phonenumbers

        candidate = m.group()
        digits = "".join(_DIGITS.findall(candidate))
        if len(digits) < 7 or len(digits) > 15:
            return []
        if not candidate.startswith(("+", "00")) and candidate.isdigit():
            return []  # a bare digit run is an order, tracking or account number more often than a phone
        before = text[max(0, m.start() - 12) : m.start()]
        if _ISBN_BEFORE.search(before) or _CURRENCY_BEFORE.search(before) or _isbn13(digits) or _DATE.match(candidate):
            return []
        return [
            (m.start() + found.start, m.start() + found.end, PHONE)
            for found in phonenumbers.PhoneNumberMatcher(candidate, region or "ZZ", leniency=phonenumbers.Leniency.VALID)
        ]

    def redact(self, text: str, region: str = "US") -> tuple[str, Mapping[str, int]]:
        """``text`` with every found item replaced, and the count of each kind."""
        spans = self._spans(text, region)
        if not spans:
            return text, {}
        spans.sort(key=lambda s: (s[0], -(s[1] - s[0])))
        placeholders = {EMAIL: self.email, IP: self.ip, PHONE: self.phone}
        parts, counts, position = [], Counter(), 0
        for start, end, kind in spans:
            if start < position:
                continue  # overlaps a match already replaced
            parts += [text[position:start], placeholders[kind]]
            counts[kind] += 1
            position = end
        parts.append(text[position:])
        return "".join(parts), dict(counts)


def redact_document(doc: Document, redactor: Redactor, *, default_region: str = "US", image_text: bool = True) -> Document:
    """A copy of ``doc`` with personal data in its text nodes (and, with ``image_text``,
    image alt text, captions and titles) replaced, and the counts as signals
    (``pii.email``, ``pii.ip``, ``pii.phone``, ``pii.replaced``; zero when none).
    A named document edit: it never decides a document's fate."""
    region = region_for_url(doc.url, default_region)
    totals: Counter[str] = Counter()
    nodes = []
    changed = False
    for node in doc.nodes:
        if isinstance(node, TextNode):
            text, counts = redactor.redact(node.text, region)
            if counts:
                node = dataclasses.replace(node, text=text)
        elif image_text and isinstance(node, ImageNode):
            fields, counts = {}, Counter()
            for name in ("alt", "caption", "title"):
                value = getattr(node, name) or ""
                if value:
                    new, found = redactor.redact(value, region)
                    if found:
                        fields[name] = new
                        counts.update(found)
            if fields:
                node = dataclasses.replace(node, **fields)
        else:
            counts = {}
        if counts:
            changed = True
            totals.update(counts)
        nodes.append(node)
    signals = {signal(kind): float(totals.get(kind, 0)) for kind in KINDS}
    signals[REPLACED] = float(sum(totals.values()))
    out = dataclasses.replace(doc, nodes=tuple(nodes)) if changed else doc
    return out.with_signals(signals)
