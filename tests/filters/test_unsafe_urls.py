"""The adult URL lists (filters/unsafe_urls.py): host parsing from raw URLs, domain
and URL-prefix matching, the allow-list, and the shipped UT1 list refusing its
domains by default."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from mmcurate.filters import reasons, unsafe_urls
from mmcurate.filters.unsafe_urls import DomainIndex, PrefixIndex, UrlBlocklist, split_url
from mmcurate.stages.config import UnsafeUrlsConfig
from mmcurate.stages.safety import load_blocklist, load_shipped_domains, shared_blocklist

SHARED_UT1 = Path(__file__).resolve().parents[3] / "shared" / "data" / "adult-urls-ut1"


@pytest.mark.parametrize(
    "url, expected",
    [
        ("https://example.org/a?b#c", ("example.org", "/a?b#c")),
        ("HTTP://WWW.Example.ORG", ("example.org", "")),
        ("https://user:pw@www.example.org.:8443/x", ("example.org", "/x")),
        ("http://example.org?q=1", ("example.org", "?q=1")),
        ("http://example.org\\path", ("example.org", "\\path")),
        ("  https://example.org/ ", ("example.org", "/")),
        ("http://[2001:db8::1]:80/a", ("2001:db8::1", "/a")),
        ("https://пример.рф/путь", ("xn--e1afmkfd.xn--p1ai", "/путь")),
        ("https://www.www.example.org/", ("www.example.org", "/")),
        ("data:image/png;base64,AAAA", None),
        ("ftp://example.org/file", None),
        ("//example.org/protocol-relative", None),
        ("", None),
    ],
)
def test_split_url_reads_the_host_from_the_raw_url(url, expected):
    assert split_url(url) == expected


def test_a_listed_domain_refuses_itself_and_its_subdomains_at_label_boundaries():
    index = DomainIndex.build(["adult.example", "WWW.Shop.Test.", "cam.xn--e1afmkfd.xn--p1ai", "10.0.0.7"])
    assert index.find("adult.example") == "adult.example"
    assert index.find("a.b.adult.example") == "adult.example"
    assert index.find("shop.test") == "shop.test"  # the entry's www. is dropped as a host's is
    assert index.find("notadult.example") is None
    assert index.find("adult.example.org") is None
    assert index.find("example") is None
    assert index.find("live.cam.xn--e1afmkfd.xn--p1ai") == "cam.xn--e1afmkfd.xn--p1ai"
    assert index.find("10.0.0.7") == "10.0.0.7" and index.find("110.0.0.7") is None
    assert "adult.example" in index and "https://adult.example/x" in index and "example" not in index
    assert sorted(index.domains()) == ["10.0.0.7", "adult.example", "cam.xn--e1afmkfd.xn--p1ai", "shop.test"]


def test_url_prefixes_match_their_host_only_and_the_longest_entry_is_named():
    index = PrefixIndex.build(["gallery.example.org/nsfw/", "gallery.example.org/nsfw/deep/", "www.forum.test/adult", "# note", ""])
    assert index.find("gallery.example.org", "/NSFW/deep/1.jpg") == "gallery.example.org/nsfw/deep/"
    assert index.find("gallery.example.org", "/nsfw/2.jpg") == "gallery.example.org/nsfw/"
    assert index.find("gallery.example.org", "/landscapes/nsfw/") is None
    assert index.find("sub.gallery.example.org", "/nsfw/2.jpg") is None
    assert index.find("forum.test", "/adult-section/4") == "forum.test/adult"
    assert not PrefixIndex.build(["# only a comment"])


LISTS = UrlBlocklist.parse(
    ["adult.example", "camgirls.test"],
    ["/porn/"],
    prefix_entries=["gallery.example.org/nsfw/"],
    allowed_domains=["safe.adult.example"],
)


@pytest.mark.parametrize(
    "url, page_reason, image_reason, detail",
    [
        ("https://cdn.adult.example/x.jpg", reasons.URL_BLOCKLISTED_DOMAIN, reasons.IMAGE_BLOCKLISTED_DOMAIN, "adult.example"),
        ("http://gallery.example.org/nsfw/1.jpg", reasons.URL_BLOCKLISTED_PREFIX, reasons.IMAGE_BLOCKLISTED_PREFIX,
         "gallery.example.org/nsfw/"),
        ("https://example.org/porn/1.jpg", reasons.URL_BLOCKLISTED_SUBSTRING, reasons.IMAGE_BLOCKLISTED_SUBSTRING, "/porn/"),
        ("https://safe.adult.example/porn/1.jpg", None, None, None),  # allowed: no list refuses it
        ("https://www.safe.adult.example/", None, None, None),
        ("https://gallery.example.org/landscapes/1.jpg", None, None, None),
        ("data:image/gif;base64,R0lGOD", None, None, None),
    ],
)
def test_page_and_image_verdicts(url, page_reason, image_reason, detail):
    page = unsafe_urls.page_url(url, blocklist=LISTS)
    image = unsafe_urls.image_url(url, blocklist=LISTS)
    assert (page.keep, page.reason or None, image.reason or None) == (page_reason is None, page_reason, image_reason)
    if detail is not None:
        assert page.detail == image.detail == detail


# ---------------------------------------------------------------------------------
# The shipped UT1 list, on by default
# ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shipped():
    return load_blocklist(UnsafeUrlsConfig())


def test_the_shipped_list_is_on_by_default_and_refuses_domains_subdomains_and_prefixes(shipped):
    assert UnsafeUrlsConfig().shipped_list is True
    cases = {
        "https://www.pornhub.com/view_video.php?viewkey=1": (reasons.URL_BLOCKLISTED_DOMAIN, "pornhub.com"),
        "https://fr.cdn.xvideos.com/thumb.jpg": (reasons.URL_BLOCKLISTED_DOMAIN, "xvideos.com"),
        "http://anything.xxx/": (reasons.URL_BLOCKLISTED_DOMAIN, "xxx"),  # ICANN's adult suffix, as UT1 lists it
        "https://0b1-bofa.org/bofa/wb/index.php": (reasons.URL_BLOCKLISTED_PREFIX, "0b1-bofa.org/bofa/wb"),
        "https://en.wikipedia.org/wiki/Mona_Lisa": None,
        "https://www.bbc.co.uk/news": None,
        "https://0b1-bofa.org/other": None,  # only the listed prefixes of this host
        "https://x.dynu.net/": None,  # a hosting platform's suffix, left out of the shipped list
    }
    for url, expected in cases.items():
        verdict = unsafe_urls.page_url(url, blocklist=shipped)
        assert (None if verdict.keep else (verdict.reason, verdict.detail)) == expected, url


def test_the_allow_list_overrides_the_shipped_list_for_a_domain_and_its_subdomains():
    # cosmopolitan.com (a magazine) is on UT1's adult list: a false positive to allow.
    url = "https://www.cosmopolitan.com/style-beauty/"
    assert not unsafe_urls.page_url(url, blocklist=load_blocklist(UnsafeUrlsConfig())).keep
    allowing = load_blocklist(UnsafeUrlsConfig(allowed_domains=("cosmopolitan.com",)))
    assert unsafe_urls.page_url(url, blocklist=allowing).keep
    assert unsafe_urls.image_url("https://media.cosmopolitan.com/a.jpg", blocklist=allowing).keep
    assert not unsafe_urls.page_url("https://www.pornhub.com/", blocklist=allowing).keep


def test_the_lists_are_loaded_once_per_process_for_both_steps():
    config = UnsafeUrlsConfig(allowed_domains=("example.org",))
    first, second = shared_blocklist(config), shared_blocklist(UnsafeUrlsConfig(allowed_domains=("example.org",)))
    assert first is second
    assert shared_blocklist(UnsafeUrlsConfig(shipped_list=False, allowed_domains=("example.org",))) is not first


@pytest.mark.skipif(not SHARED_UT1.is_dir(), reason="needs ../shared/data/adult-urls-ut1")
def test_the_shipped_domains_are_the_ut1_list_less_four_platform_suffixes():
    index = load_shipped_domains()
    left_out = {"cutegirl.jp", "dynu.net", "pussycat.jp", "sa.com"}
    with gzip.open(SHARED_UT1 / "domains.gz", "rt", encoding="utf-8") as fh:
        sample = [line.strip() for i, line in enumerate(fh) if i % 4999 == 0]
    assert len(sample) > 900
    for domain in sample:
        assert (domain in index) is (domain not in left_out), domain
        assert index.find(f"www.sub.{domain}") in (domain, None if domain in left_out else domain)
    for domain in left_out:
        assert domain not in index


@pytest.mark.slow
@pytest.mark.skipif(not SHARED_UT1.is_dir(), reason="needs ../shared/data/adult-urls-ut1")
def test_a_rebuild_is_the_shipped_list_byte_for_byte(tmp_path):
    from mmcurate.pipeline.build_adult_list import build

    built = build(SHARED_UT1, tmp_path)
    assert built["left_out"] == ["cutegirl.jp", "dynu.net", "pussycat.jp", "sa.com"]
    shipped = unsafe_urls.shipped_list_dir()
    for name in (unsafe_urls.SHIPPED_DOMAINS, unsafe_urls.SHIPPED_URLS):
        assert (tmp_path / name).read_bytes() == (shipped / name).read_bytes(), name


def test_a_missing_shipped_list_fails_at_construction_naming_the_key(tmp_path, monkeypatch):
    from mmcurate.stages import safety

    copy = tmp_path / "adult_urls_ut1"
    shutil.copytree(unsafe_urls.shipped_list_dir(), copy, ignore=shutil.ignore_patterns(unsafe_urls.SHIPPED_DOMAINS))
    monkeypatch.setattr(unsafe_urls, "shipped_list_dir", lambda: copy)
    with pytest.raises(FileNotFoundError, match="safety.urls.shipped_list"):
        safety.RejectUnsafePages(UnsafeUrlsConfig())
    safety.RejectUnsafePages(UnsafeUrlsConfig(shipped_list=False, domain_blocklists=()))  # nothing to find: fine


def test_the_shipped_files_are_the_ones_their_readme_names_with_the_licence_beside_them():
    import hashlib
    import re

    folder = unsafe_urls.shipped_list_dir()
    readme = (folder / "README.md").read_text(encoding="utf-8")
    assert "CC BY-SA 4.0" in readme and "Université Toulouse 1 Capitole" in readme
    assert (folder / "LICENSE").read_text(encoding="utf-8").startswith("Attribution-ShareAlike 4.0 International")
    for name in (unsafe_urls.SHIPPED_DOMAINS, unsafe_urls.SHIPPED_URLS):
        row = next(line for line in readme.splitlines() if line.startswith(f"| `{name}`"))
        assert re.findall(r"`([0-9a-f]{64})` \|$", row) == [hashlib.sha256((folder / name).read_bytes()).hexdigest()], name
