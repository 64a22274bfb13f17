"""The forms of a URL: the canonical (fetch) form, the dedup key, the rules' view,
the capture key; and why they are not one."""

import pytest
from url_normalize import url_normalize

from mmcurate.filters.url_forms import canonical_url, capture_key, dedup_key, rule_url


@pytest.mark.parametrize(
    "url,expected",
    [
        ("HTTP://Example.COM:80/a/../b/?utm_source=x&b=2&a=1#frag", "https://example.com/b/?a=1&b=2"),
        ("https://example.com:443", "https://example.com/"),
        ("http://ex.com/p?fbclid=1&gclid=2&id=3&UTM_Medium=y", "https://ex.com/p?id=3"),
        ("http://ex.com:8080/x?a=1&a=0", "https://ex.com:8080/x?a=1&a=0"),  # repeated names keep their order
        ("http://例え.jp/パス", "https://xn--r8jz45g.jp/%E3%83%91%E3%82%B9"),
        ("https://example.com/A%7e", "https://example.com/A~"),
        ("", ""),
    ],
)
def test_dedup_key_maps_variants_to_one_key(url, expected):
    assert dedup_key(url) == expected


def test_dedup_key_scheme_folding_and_params_are_configurable():
    assert dedup_key("http://a.org/?ref=1", strip_params=("ref",), fold_scheme=False) == "http://a.org/"
    assert dedup_key("http://a.org/?utm_x=1", strip_params=()) == "https://a.org/?utm_x=1"


@pytest.mark.parametrize(
    "url, normalised",
    [
        ("HTTPS://WWW.Example.COM:443/Path?q=1#frag", "https://example.com/Path?q=1"),
        ("http://example.com:8080", "http://example.com:8080/"),
        ("http://xn--bcher-kva.example./a", "http://bücher.example/a"),
    ],
)
def test_rule_url(url, normalised):
    assert rule_url(url) == normalised


@pytest.mark.parametrize(
    "a, b",
    [
        ("HTTP://Images.Example.ORG:80/a%7e/b c.jpg#top", "http://images.example.org/a~/b%20c.jpg"),
        ("https://example.org:443", "https://example.org/"),
        ("http://bücher.example/x.jpg", "http://xn--bcher-kva.example/x.jpg"),
    ],
)
def test_canonical_url_is_shared_by_spellings_and_stable(a, b):
    assert canonical_url(a) == canonical_url(b) == b
    assert canonical_url(canonical_url(a)) == canonical_url(a)


def test_canonical_url_keeps_the_resource():
    """What url-normalize would change: an empty path segment (another key on S3)
    and unescaped brackets."""
    s3 = "https://bucket.s3.amazonaws.com/photos//2019/a.jpg"
    assert url_normalize(s3) == "https://bucket.s3.amazonaws.com/photos/2019/a.jpg"
    assert canonical_url(s3) == s3
    assert url_normalize("http://ex.com/a[1].jpg") == "http://ex.com/a[1].jpg"
    assert canonical_url("http://ex.com/a[1].jpg") == "http://ex.com/a%5B1%5D.jpg"


def test_non_http_and_unparseable_urls_are_returned_stripped():
    for url in ("data:image/png;base64,AAAA", "/relative.jpg", "http://a.b:99999/x", "http://[%5B::1%5D]/x"):
        assert canonical_url(f" {url} ") == url


def test_dedup_key_keeps_hashbang_routes_apart():
    """Two routes of a single-page site are two pages to dedup, though a fetch of
    either asks the server for the same URL."""
    a, b = "http://spa.example/#!/a", "http://spa.example/#!/b"
    assert canonical_url(a) == canonical_url(b) == "http://spa.example/"
    assert dedup_key(a) != dedup_key(b)
    assert dedup_key(a) == "https://spa.example/?_escaped_fragment_=%2Fa"


def test_capture_key_reads_past_spellings():
    assert capture_key("https://www.Example.org/a%2Cb.jpg?y=2&x=1") == capture_key("http://example.org/a,b.jpg?x=1&y=2")
