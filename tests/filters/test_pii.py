"""Personal data: what is replaced, and (precision) what is not."""

import dataclasses

import pytest

from docfactory import make_doc
from mmcurate.filters import pii
from mmcurate.filters.pii import Redactor, redact_document, region_for_url
from mmcurate.schemas import ImageNode, TextNode

R = Redactor()


@pytest.mark.parametrize(
    "text, expected, counts",
    [
        ("Write to jane.doe@example.com today.", "Write to <EMAIL> today.", {"email": 1}),
        ("Mail: A.B+news@mail.uni-hamburg.de, or info@kyoto-u.ac.jp.", "Mail: <EMAIL>, or <EMAIL>.", {"email": 2}),
        ("Our server 8.8.8.8 answered.", "Our server <IP_ADDRESS> answered.", {"ip": 1}),
        ("Resolver 2001:4860:4860::8888 and 2606:4700:4700:0:0:0:0:1111.", "Resolver <IP_ADDRESS> and <IP_ADDRESS>.", {"ip": 2}),
        ("Call (415) 555-2671 or +1 212 555 0199.", "Call <PHONE> or <PHONE>.", {"phone": 2}),
        ("London office: +44 20 7946 0958.", "London office: <PHONE>.", {"phone": 1}),
    ],
)
def test_replaced(text, expected, counts):
    assert R.redact(text, "US") == (expected, counts)


@pytest.mark.parametrize(
    "text",
    [
        # version numbers
        "Upgrade to Python 3.11.7 or Chrome 120.0.6099.109 first.",
        "This is version 1.2.3.4 of the firmware; v2.0.1.5 fixed the bug.",
        "See section 4.2.1.3 and figure 1.1.2.3.",
        # dates and times
        "Published 2024-05-01, updated 01.05.2024 and 12/31/2023 at 10:30:45.",
        "Der Termin ist am 03.11.2025 um 14.30 Uhr.",
        # ISBNs
        "ISBN 978-3-16-148410-0 and ISBN-10: 0-306-40615-2.",
        "The edition 9783161484100 is out of print.",
        # prices and amounts
        "Now $1,299.99 instead of $1 499 999; EUR 1.234.567,89.",
        "Population 8,336,817 in 2019; 1 234 567 visitors.",
        # identifiers that are bare digit runs
        "Order no. 12345678901, tracking 9400111899223344556677.",
        # private and loopback addresses in a tutorial, MAC addresses, image names
        "Open http://127.0.0.1:8080 or 192.168.1.1 on the router (MAC 00:1A:2B:3C:4D:5E).",
        "<img src=logo@2x.png> and icon@3x.webp",
        "C++ uses std::vector and a::b::c namespaces.",
    ],
)
def test_precision_not_replaced(text):
    assert R.redact(text, "US") == (text, {})


def test_region_from_the_country_code_tld():
    assert region_for_url("https://www.example.de/kontakt", "US") == "DE"
    assert region_for_url("https://shop.example.co.uk/", "US") == "GB"
    assert region_for_url("https://example.com/", "US") == "US"
    text = "Telefon: 030 12345678"
    assert R.redact(text, "DE") == ("Telefon: <PHONE>", {"phone": 1})
    assert R.redact(text, "US") == (text, {})


def test_placeholders_and_kinds_are_configurable():
    r = Redactor(email="[email]", ip=None, phone="[tel]", public_only=False)
    assert r.redact("a@b.org 10.0.0.1 (415) 555-2671", "US") == ("[email] 10.0.0.1 [tel]", {"email": 1, "phone": 1})
    assert Redactor(public_only=False).redact("at 10.0.0.1", "US") == ("at <IP_ADDRESS>", {"ip": 1})


def test_redact_document_counts_in_signals_and_covers_image_text():
    doc = make_doc("d", ["Contact jane@example.org or (415) 555-2671.", "Nothing here."], images=1)
    image = dataclasses.replace(doc.image_nodes[0], alt="photo by bob@example.net", caption="", title="")
    doc = dataclasses.replace(doc, nodes=doc.nodes[:2] + (image,))
    out = redact_document(doc, R)
    assert [n.text for n in out.text_nodes] == ["Contact <EMAIL> or <PHONE>.", "Nothing here."]
    assert out.image_nodes[0].alt == "photo by <EMAIL>"
    assert out.image_nodes[0].src == image.src
    assert {k: v for k, v in out.signals.items() if k.startswith("pii.")} == {
        "pii.email": 2.0,
        "pii.ip": 0.0,
        "pii.phone": 1.0,
        "pii.replaced": 3.0,
    }
    # The input document is not changed.
    assert doc.text_nodes[0].text.startswith("Contact jane@")
    untouched = redact_document(doc, R, image_text=False)
    assert untouched.image_nodes[0].alt == "photo by bob@example.net"


def test_clean_document_is_returned_with_zero_counts():
    doc = make_doc("clean", ["The harbour was built in 1788 and rebuilt in 1902."], images=1)
    out = redact_document(doc, R)
    assert out.nodes == doc.nodes
    assert out.signals[pii.REPLACED] == 0.0
    assert isinstance(out.nodes[0], TextNode) and isinstance(out.nodes[1], ImageNode)
