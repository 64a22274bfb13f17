"""Sorting one WARC record: what looks like HTML when the declared type says nothing."""

from mmcurate.stages.engines.warc.records import looks_like_html


def test_sniffing():
    assert looks_like_html(b"\n  <!DOCTYPE html><html>")
    assert looks_like_html(b"\xef\xbb\xbf<HTML><body>")
    assert not looks_like_html(b"%PDF-1.7")
    assert not looks_like_html(b'{"html": true}')
