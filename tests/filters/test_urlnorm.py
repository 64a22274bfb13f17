"""URL normalisation for URL dedup."""

import pytest

from mmcurate.filters.urlnorm import normalize_url


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
def test_variants_map_to_one_key(url, expected):
    assert normalize_url(url) == expected


def test_scheme_folding_and_params_are_configurable():
    assert normalize_url("http://a.org/?ref=1", strip_params=("ref",), fold_scheme=False) == "http://a.org/"
    assert normalize_url("http://a.org/?utm_x=1", strip_params=()) == "https://a.org/?utm_x=1"
