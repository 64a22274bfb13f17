"""A small generated WARC of five pages: two illustrated articles (their images
captured), a copy of one under another URL, a page too short to keep, and a 404.

Used by tests/pipeline/conftest.py (the report's run) and tests/conftest.py
(``small_warc``, the input of the quick runner checks)."""

from __future__ import annotations

from pathlib import Path

from imagegen import jpeg
from warcbuild import WarcBuilder

PARAGRAPHS = {
    "harbour": (
        "The harbour at the end of the valley was built in the eighteenth century, when the town still traded salt "
        "and timber with the cities along the coast, and its stone quays have outlived every ship that used them.",
        "Fishing boats leave before dawn and return in the early afternoon, and the market on the quay sells what "
        "they bring back until the last crates are empty. Visitors who walk up the old road to the lighthouse can "
        "see the whole bay and the islands to the north on a clear day.",
    ),
    "orchard": (
        "Every autumn the orchard on the south slope gives more apples than the family can sell at the weekly "
        "market, so the rest is pressed into juice and cider in the old barn behind the house.",
        "The oldest trees were planted by a great-grandfather who brought the grafts from a monastery garden "
        "across the border. Some varieties exist nowhere else now, and a seed bank in the capital keeps cuttings "
        "of them in case the trees are lost to frost or disease.",
    ),
}


def article(name: str) -> str:
    first, second = PARAGRAPHS[name]
    return f"""<!doctype html><html><head><title>The {name}</title></head><body><article><h1>The {name}</h1>
<p>{first}</p><figure><img src="/img/{name}.jpg" alt="The {name} in spring" width="320" height="240">
<figcaption>The {name}, photographed in spring.</figcaption></figure><p>{second}</p>
<figure><img src="/img/{name}-missing.jpg" alt="The {name} at night" width="320" height="240"></figure>
</article></body></html>"""


def write_small_warc(path: Path) -> dict[str, str]:
    """Writes the WARC; returns name -> WARC-Record-ID of each page."""
    ids = {}
    with WarcBuilder.open(path) as warc:
        ids["harbour"] = warc.html("https://news.example.org/harbour", article("harbour"))
        ids["orchard"] = warc.html("https://blog.example.com/orchard", article("orchard"))
        ids["copy"] = warc.html("https://mirror.example.net/harbour", article("harbour"))
        ids["short"] = warc.html("https://news.example.org/short", '<html><body><p>Back soon.</p><img src="/a.jpg"></body></html>')
        ids["gone"] = warc.html("https://news.example.org/gone", "<html><body>Not found</body></html>", status=404)
        warc.image("https://news.example.org/img/harbour.jpg", jpeg(1))
        warc.image("https://blog.example.com/img/orchard.jpg", jpeg(2))
        warc.image("https://mirror.example.net/img/harbour.jpg", jpeg(1))
    return ids
