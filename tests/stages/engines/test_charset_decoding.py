"""Charset decoding of HTML payloads: BOM, HTTP charset, <meta>, detection; labels
resolved as browsers resolve them (the WHATWG table, webencodings), never through
Python's codec aliases, which w3lib.encoding uses and which take ``undefined`` or
``punycode`` for codecs."""

from __future__ import annotations

import codecs

import pytest

from mmcurate.stages.engines.charset_decoding import codec_for_label, decode_html


@pytest.mark.parametrize(
    "payload, content_type, text, charset, source",
    [
        ("<p>café</p>".encode("utf-8"), "text/html; charset=UTF-8", "<p>café</p>", "utf-8", "http"),
        (b"\xef\xbb\xbf<p>caf\xc3\xa9</p>", "text/html; charset=windows-1252", "<p>café</p>", "utf-8", "bom"),
        ("<p>café</p>".encode("cp1252"), "text/html; charset=iso-8859-1", "<p>café</p>", "cp1252", "http"),
        # Labelled Latin-1 but really UTF-8: the most common mislabel on the web.
        ("<p>café</p>".encode("utf-8"), "text/html; charset=iso-8859-1", "<p>café</p>", "utf-8", "detected"),
        ('<meta charset="latin1"><p>café</p>'.encode("cp1252"), "text/html", '<meta charset="latin1"><p>café</p>', "cp1252", "meta"),
        # A <meta> that claims UTF-16 in an ASCII-compatible document means UTF-8.
        ('<meta charset="utf-16"><p>café</p>'.encode("utf-8"), "", '<meta charset="utf-16"><p>café</p>', "utf-8", "meta"),
        (b"<p>plain</p>", "", "<p>plain</p>", "utf-8", "detected"),
        (b"<p>x</p>", "text/html; charset=base64", "<p>x</p>", "utf-8", "detected"),
    ],
)
def test_decode_html(payload, content_type, text, charset, source):
    decoded = decode_html(payload, content_type)
    assert (decoded.text, decoded.charset, decoded.source) == (text, charset, source)


def test_decode_html_falls_back_to_utf8_with_replacement():
    decoded = decode_html(bytes(range(256)) * 4)
    assert decoded.source in ("detected", "fallback")
    assert isinstance(decoded.text, str) and decoded.text


@pytest.mark.parametrize(
    "label, codec",
    [
        ("Shift_JIS", "cp932"), ("sjis", "cp932"), ("x-sjis", "cp932"), ("windows-31j", "cp932"),
        ("gb2312", "gb18030"), ("GBK", "gb18030"), ("iso-8859-1", "cp1252"), ("latin1", "cp1252"),
        ("us-ascii", "cp1252"), ("euc-kr", "cp949"), ("EUC-JP", "euc_jp"), ("big5", "big5hkscs"),
        ("utf8", "utf-8"), ("rot13", None), ("no-such-charset", None),
    ],
)
def test_legacy_labels_map_to_web_supersets(label, codec):
    assert codec_for_label(label) == codec


@pytest.mark.parametrize(
    "label",
    ["undefined", "punycode", "idna", "ut\x00f-8", "utf-7", "unicode_escape", "raw_unicode_escape", "hz-gb-2312",
     "x-user-defined", "rot13", "latin-1\x00"],
)
def test_exotic_charset_labels_fall_back_like_unknown_labels(label):
    payload = "<p>Grüße aus Köln</p>".encode("utf-8")
    assert codec_for_label(label) is None
    decoded = decode_html(payload, f"text/html; charset={label}")
    assert (decoded.text, decoded.charset, decoded.source) == ("<p>Grüße aus Köln</p>", "utf-8", "detected")
    # In a <meta> too.
    meta = f'<meta charset="{label}"><p>Grüße</p>'.encode("utf-8")
    assert decode_html(meta).source == "detected"


@pytest.mark.parametrize("label", ["undefined", "punycode", "idna", "unicode_escape"])
def test_python_codec_aliases_are_not_the_label_table(label):
    """Why labels do not go through Python's codec registry (as ``w3lib.encoding``
    resolves them): it knows these names, and decoding a page with them fails or
    garbles it, where a browser ignores the label."""
    codecs.lookup(label)  # a resolver built on Python's aliases takes the label
    payload = "<p>Grüße aus Köln</p>".encode("utf-8")
    try:
        text = payload.decode(label)
    except UnicodeError:
        text = None
    assert text != "<p>Grüße aus Köln</p>"
    assert codec_for_label(label) is None
    assert decode_html(payload, f"text/html; charset={label}").text == "<p>Grüße aus Köln</p>"
