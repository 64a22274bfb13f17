"""Charset decoding of HTML payloads, after the WHATWG encoding sniffing algorithm:
BOM, then the HTTP charset, then a ``<meta>`` prescan, then statistical detection
(charset_normalizer), then UTF-8.

Labels are resolved with the WHATWG Encoding Standard's label table
(``webencodings``), as browsers do, not with Python's codec aliases:
``w3lib.encoding`` resolves through those, and they accept ``undefined``,
``punycode``, ``idna``, ``unicode_escape``, which no page means
(tests/stages/engines/test_charset_decoding.py,
``test_exotic_charset_labels_fall_back_like_unknown_labels``).
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from typing import Optional

import charset_normalizer
import webencodings

_META_SCAN_BYTES = 4096  # where a <meta charset> must appear to count
_DETECT_BYTES = 64 * 1024  # payload bytes handed to charset detection

# Legacy labels decode with the web superset browsers use for them.
_SUPERSETS = {
    "shift_jis": "cp932",
    "x-sjis": "cp932",
    "windows-31j": "cp932",
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "x-gbk": "gb18030",
    "iso8859-1": "cp1252",
    "ascii": "cp1252",
    "euc_kr": "cp949",
    "cseuckr": "cp949",
    "big5": "big5hkscs",
    "iso8859-9": "cp1254",
    "tis-620": "cp874",
    "iso8859-11": "cp874",
    "windows-874": "cp874",
    "x-euc-jp": "euc_jp",
    "unicode-1-1-utf-8": "utf-8",
    "x-mac-roman": "mac-roman",
}
# Single-byte codecs decode almost any bytes: a page labelled with one that is valid
# UTF-8 with non-ASCII text is UTF-8 mislabelled (the most common lie on the web).
_SINGLE_BYTE = frozenset({"cp1252", "cp1250", "cp1251", "cp1254", "cp874", "mac-roman", "iso8859-15", "iso8859-2"})
_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))
_CHARSET_PARAM = re.compile(r"""charset\s*=\s*["']?\s*([^"'\s;,]+)""", re.IGNORECASE)
_META_CHARSET = re.compile(rb"""<meta\b[^>]*?charset\s*=\s*["']?\s*([A-Za-z0-9_.:\-]+)""", re.IGNORECASE)


@dataclass(frozen=True)
class DecodedHtml:
    text: str
    charset: str  # the Python codec used
    source: str  # "bom", "http", "meta", "detected" or "fallback"


# WHATWG Encoding Standard: these labels name the "replacement" encoding (a decoder
# that yields one U+FFFD), kept out of the web because they hide markup; treated
# like an unknown label. webencodings 0.5.1 predates that part of the standard.
_REPLACEMENT = frozenset({"hz-gb-2312", "iso-2022-kr", "iso-2022-cn", "iso-2022-cn-ext"})


def codec_for_label(label: str) -> Optional[str]:
    """The Python text codec for a charset label, or None for a label the web does
    not know. Labels are resolved with the WHATWG Encoding Standard's table
    (``webencodings``), as browsers do, so Python-only codecs (``undefined``,
    ``punycode``, ``idna``, ``unicode_escape``, ``utf-7``, ``rot13``...), labels with
    a NUL and unknown labels all fall back alike; legacy encodings are then mapped
    to the web superset browsers decode them with (shift_jis -> cp932, gbk ->
    gb18030, windows-1252 for iso-8859-1 and us-ascii, ...)."""
    key = label.strip().strip("\"'")
    try:
        encoding = webencodings.lookup(key)
    except Exception:  # a label no table could hold
        return None
    if encoding is None or encoding.name in _REPLACEMENT or encoding.name == "x-user-defined":
        return None
    name = encoding.codec_info.name
    return _SUPERSETS.get(name, name)


def _detected_codec(name: str) -> Optional[str]:
    """The Python codec for a name charset_normalizer reports (a Python codec name,
    e.g. ``cp932``, ``shift_jis_2004``), legacy encodings mapped to web supersets."""
    try:
        info = codecs.lookup(name)
    except (LookupError, ValueError):
        return None
    if not getattr(info, "_is_text_encoding", True):
        return None
    return _SUPERSETS.get(info.name, info.name)


def charset_from_content_type(content_type: str) -> str:
    match = _CHARSET_PARAM.search(content_type or "")
    return match.group(1) if match else ""


def meta_charset(head: bytes) -> str:
    """The charset a ``<meta charset>`` or http-equiv Content-Type declares in ``head``."""
    match = _META_CHARSET.search(head)
    return match.group(1).decode("ascii") if match else ""


def _strict(payload: bytes, codec: str) -> Optional[str]:
    try:
        return payload.decode(codec)
    except (UnicodeError, LookupError, ValueError):
        return None


def _plausible(payload: bytes, codec: str) -> bool:
    """False for a single-byte label on a payload that is really UTF-8."""
    if codec not in _SINGLE_BYTE or payload.isascii():
        return True
    return _strict(payload, "utf-8") is None


def _declared(payload: bytes, label: str) -> Optional[tuple[str, str]]:
    codec = codec_for_label(label) if label else None
    if codec is None or not _plausible(payload, codec):
        return None
    text = _strict(payload, codec)
    return None if text is None else (text, codec)


def detect_charset(payload: bytes) -> DecodedHtml:
    """Decode without a usable declaration: UTF-8 if valid, else charset_normalizer,
    else UTF-8 with replacement characters."""
    text = _strict(payload, "utf-8")
    if text is not None:
        return DecodedHtml(text, "utf-8", "detected")
    sample = payload[:_DETECT_BYTES]
    if len(payload) > _DETECT_BYTES:
        # Cut at a line end so that no multi-byte character is split.
        cut = sample.rfind(b"\n")
        sample = sample[: cut + 1] if cut > 0 else sample
    best = charset_normalizer.from_bytes(sample).best()
    codec = _detected_codec(best.encoding) if best is not None else None
    if codec is not None:
        return DecodedHtml(payload.decode(codec, errors="replace"), codec, "detected")
    return DecodedHtml(payload.decode("utf-8", errors="replace"), "utf-8", "fallback")


def decode_html(payload: bytes, content_type: str = "") -> DecodedHtml:
    """Decode an HTML payload: BOM, then the charset of the HTTP ``content_type``,
    then ``<meta charset>`` in the first 4 KB, then detection. A declared charset
    that does not decode strictly is passed over."""
    for bom, codec in _BOMS:
        if payload.startswith(bom):
            return DecodedHtml(payload[len(bom) :].decode(codec, errors="replace"), codec, "bom")
    found = _declared(payload, charset_from_content_type(content_type))
    if found is not None:
        return DecodedHtml(found[0], found[1], "http")
    label = meta_charset(payload[:_META_SCAN_BYTES])
    if label and (codec_for_label(label) or "").startswith("utf-16"):
        label = "utf-8"  # a <meta> in an ASCII-compatible prefix cannot mean UTF-16
    found = _declared(payload, label)
    if found is not None:
        return DecodedHtml(found[0], found[1], "meta")
    return detect_charset(payload)
