"""The forms of a URL: the dedup key, the rules' view."""

import pytest

from mmcurate.filters.url_forms import dedup_key, rule_url


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
