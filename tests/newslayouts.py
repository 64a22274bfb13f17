"""News and blog article pages in the layouts of 16 kinds of real sites, each showing one lead
image, for the lead-image checks (tests/stages/test_extract_lead_images.py) and
``benchmarks/bench_lead_images.py``.

Each layout is the structure one kind of site writes around its article and its lead
picture (class names, wrappers, ``srcset``/``<picture>`` and lazy-loading attributes
as those sites publish them), with a site header and logo, a menu, a "most read"
sidebar of teaser thumbnails and a footer around it:

- ``article_header``: the picture in the ``<article>``'s own ``<header>`` under the
  headline (a WordPress or Drupal news theme);
- ``hero_above_h1``: a full-width hero ``<div>`` with the picture above the headline,
  no declared size and no figure (half the seeds name it in ``og:image``);
- ``picture_above_headline``: a ``<picture>`` with WebP and JPEG sources and width
  descriptors above the ``<h1>``;
- ``aside_beside_body``: the picture in an ``<aside>`` media rail after the body text,
  named in ``og:image``;
- ``og_image_match``: a plain ``<img>`` before the headline, no size, which
  ``og:image`` names in another rendition (another query string);
- ``lazy_data_src``: a lazy-loaded lead picture (a GIF placeholder in ``src``, the
  real URL in ``data-src`` and ``data-srcset``, a ``<noscript>`` copy);
- ``wordpress_featured``: WordPress's featured image (``div.post-thumbnail >
  img.wp-post-image`` with ``srcset`` and ``sizes``) above the entry header;
- ``medium``: Medium's ``figure.paragraph-image`` after the title and byline, a
  ``<picture>`` whose ``<img>`` has no ``src`` at all, only its sources' ``srcset``;
- ``bbc``: BBC News's ``div[data-component=image-block]`` after the header, the
  credit in a ``span[role=text]``, the caption after a screen-reader label;
- ``guardian``: the Guardian's ``div[data-gu-name=media]`` before the headline, a
  ``<picture>`` with density sources, a fractional declared height;
- ``nyt``: the New York Times's header ``figure[role=group]`` with an ``srcset`` of
  named renditions (articleLarge, jumbo, superJumbo);
- ``ghost``: Ghost's ``figure.article-image`` in ``header.article-header``;
- ``substack``: Substack's ``div.captioned-image-container`` at the top of the body,
  the picture inside a link to the full-size image;
- ``cnn``: CNN's ``div.image__lede`` before the article content, ``<source>``
  elements with ``media`` queries and declared sizes;
- ``noscript_only``: a script-loaded picture (an empty ``div.progressive-image``
  with ``data-src``) whose only ``<img>`` is the ``<noscript>`` copy, in the
  article's figure under the headline;
- ``amp``: an AMP article (``<html amp>``): the picture is an ``<amp-img>`` with
  ``layout="responsive"`` and an ``<img>`` fallback in ``<noscript>``.
"""

from __future__ import annotations

import html as html_lib
import json
import random
from dataclasses import dataclass, field
from typing import Callable

from pagebuild import SUBJECTS

# Words of the generated news prose: sentences drawn word by word in many shapes,
# so that no long phrase repeats across a page (Gopher's duplicate n-gram rules and
# OBELICS's character repetition judge repeats).
_NAMES = (
    "Mayor Ellis", "Councillor Price", "Dr Okafor", "Professor Lindqvist", "Mrs Abernethy", "the archivist", "Captain Moreau",
    "the curator", "a spokeswoman", "the engineer", "Father Doyle", "the treasurer", "Ms Kowalski", "the ferryman",
    "a retired pilot", "the headteacher", "Inspector Nwosu", "the chairwoman", "a fisherman", "the harbourmaster",
    "Judge Castellano", "the sculptor", "a shopkeeper", "the vicar", "Sergeant Baptiste",
)
_VERBS = (
    "unveiled", "restored", "catalogued", "described", "photographed", "repaired", "measured", "defended", "financed",
    "reopened", "documented", "inspected", "rebuilt", "celebrated", "mapped", "questioned", "painted", "sold", "bought",
    "dismantled", "insured", "visited", "praised", "criticised", "surveyed", "moved", "lit", "guarded", "sketched", "studied",
)
_ADJECTIVES = (
    "old", "timber", "granite", "forgotten", "narrow", "flooded", "northern", "medieval", "crumbling", "painted",
    "abandoned", "coastal", "wooden", "eastern", "iron", "Victorian", "tiny", "vast", "whitewashed", "ruined", "famous",
    "second", "southern", "brick", "slate-roofed", "derelict", "elegant", "humble", "tarred", "windswept",
)
_NOUNS = (
    "boathouse", "quay", "warehouse", "chapel", "breakwater", "rope walk", "slipway", "net loft", "tide mill",
    "lighthouse", "market hall", "footbridge", "lime kiln", "pier", "granary", "bell tower", "dry dock", "fish cellar",
    "smokehouse", "toll house", "sail loft", "coal staithe", "pilot station", "bandstand", "lifeboat shed", "ice house",
    "cooperage", "sea wall", "chandlery", "weighbridge",
)
_PLACES = (
    "the estuary", "Brimhaven", "the west cliff", "Saltmarsh Lane", "the old town", "the river mouth", "Gull Point",
    "the northern basin", "Kelp Street", "the station", "Anchor Row", "the dunes", "Fairlight", "the shingle bank",
    "Cobble Hill", "Mill Creek", "the ferry steps", "Heron Island", "Tanners Yard", "the south beach", "Lowmoor",
    "the causeway", "Pennick", "the sluice gates", "Rook Bay",
)
_TIMES = (
    "spring", "summer", "autumn", "winter", "March", "June", "September", "December", "Easter", "January", "August",
    "October", "Whitsun", "November", "April",
)
_THINGS = (
    "photographs", "letters", "drawings", "ledgers", "maps", "models", "logbooks", "paintings", "tools", "charts",
    "diaries", "postcards", "invoices", "sketches", "tickets", "receipts", "timetables", "telegrams",
)
_EVENTS = (
    "flood", "fire", "strike", "storm", "auction", "regatta", "wedding", "survey", "election", "shipwreck", "drought",
    "festival", "blockade", "epidemic", "census", "gale",
)


_VISITORS = ("visitors", "walkers", "pupils", "tourists", "families", "sailors", "pilgrims", "cyclists")
_MONEY = ("thousand pounds", "guineas", "hundred crowns", "thousand dollars", "shillings", "thousand euros")
_SAID = ("said", "recalled", "wrote", "admitted", "claimed", "noted", "told reporters", "estimated")
_PERIODS = ("years", "winters", "decades", "seasons", "months", "generations")


def prose(rng: random.Random, sentences: int) -> str:
    """News prose of ``sentences`` sentences, made word by word in several shapes."""
    c = rng.choice

    def year() -> int:
        return rng.randrange(1820, 2024)

    shapes = (
        lambda: f"In {year()} {c(_NAMES)} {c(_VERBS)} the {c(_ADJECTIVES)} {c(_NOUNS)} near {c(_PLACES)}.",
        lambda: f"The {c(_ADJECTIVES)} {c(_NOUNS)} was {c(_VERBS)} in {c(_TIMES)} {year()}.",
        lambda: f"{c(_THINGS).capitalize()} from {c(_PLACES)} show the {c(_NOUNS)} before the {c(_EVENTS)}.",
        lambda: f"{c(_NAMES).capitalize()} counted {rng.randrange(2, 900)} {c(_VISITORS)} in {c(_TIMES)}.",
        lambda: f"Its {c(_NOUNS)} cost {rng.randrange(3, 95)} {c(_MONEY)}, {c(_NAMES)} {c(_SAID)}.",
        lambda: f"Few at {c(_PLACES)} recall the {c(_EVENTS)} of {year()} like {c(_NAMES)}.",
        lambda: f"{c(_NAMES).capitalize()} {c(_VERBS)} {rng.randrange(2, 40)} {c(_THINGS)} from a {c(_ADJECTIVES)} {c(_NOUNS)}.",
        lambda: f"By {c(_TIMES)} {c(_PLACES)} had {c(_VERBS)} its {c(_NOUNS)}.",
        lambda: f"{c(_EVENTS).capitalize()} and {c(_EVENTS)} left the {c(_NOUNS)} {c(_ADJECTIVES)}.",
        lambda: f"After the {c(_EVENTS)}, {c(_PLACES)} kept its {c(_NOUNS)} {rng.randrange(2, 60)} {c(_PERIODS)}.",
    )
    text = " ".join(c(shapes)() for _ in range(sentences))
    return text[0].upper() + text[1:]


@dataclass
class NewsPage:
    layout: str
    url: str
    html: str
    text: list[str]  # headline, standfirst and paragraphs, in order
    lead_urls: set[str] = field(default_factory=set)  # every URL of the lead picture


def _e(text: str) -> str:
    return html_lib.escape(text, quote=True)


@dataclass
class _Article:
    seed: int
    site: str
    host: str
    slug: str
    headline: str
    standfirst: str
    paragraphs: list[str]
    caption: str

    @property
    def url(self) -> str:
        return f"https://{self.host}/news/2024/05/{self.slug}"

    def body(self) -> str:
        return "".join(f"<p>{_e(p)}</p>" for p in self.paragraphs)


def _article(layout: str, seed: int, site: str, host: str) -> _Article:
    rng = random.Random(f"{layout}-{seed}")
    subject = rng.choice(SUBJECTS)
    return _Article(
        seed=seed,
        site=site,
        host=host,
        slug=f"harbour-exhibition-{rng.randrange(10_000, 99_999)}",
        headline=f"{subject} marks {rng.randrange(20, 200)} years with a new exhibition",
        standfirst=prose(rng, 1),
        paragraphs=[prose(rng, 3) for _ in range(7)],
        caption=f"{subject} seen from the harbour wall in {rng.randrange(1900, 2020)}.",
    )


def _page(a: _Article, content: str, og_image: str = "", json_ld_image: str = "", lang: str = "en") -> str:
    """The article's ``content`` inside a site's page: header with a logo linked home,
    a menu, a "most read" sidebar of teaser thumbnails and a footer."""
    meta = f'<meta property="og:image" content="{_e(og_image)}">' if og_image else ""
    if json_ld_image:
        ld = {"@context": "https://schema.org", "@type": "NewsArticle", "headline": a.headline, "image": [json_ld_image]}
        meta += f'<script type="application/ld+json">{json.dumps(ld)}</script>'
    most_read = "".join(
        f'<li><a href="/news/2024/04/most-read-{k}"><img src="https://{a.host}/media/thumbs/most-read-{k}.jpg" width="160" height="90" alt="">'
        f"<span>Most read story {k} of the week</span></a></li>"
        for k in range(4)
    )
    return f"""<!DOCTYPE html>
<html lang="{lang}"><head><meta charset="utf-8"><title>{_e(a.headline)} | {_e(a.site)}</title>
<meta property="og:site_name" content="{_e(a.site)}"><meta property="og:title" content="{_e(a.headline)}">{meta}</head>
<body><header class="site-header"><a href="/" class="site-logo"><img src="https://{a.host}/static/site-logo.png" alt="{_e(a.site)}" width="220" height="50"></a>
<nav class="primary-nav"><ul><li><a href="/news">News</a></li><li><a href="/sport">Sport</a></li><li><a href="/culture">Culture</a></li></ul></nav></header>
{content}
<aside class="sidebar most-read"><h2>Most read</h2><ol>{most_read}</ol></aside>
<footer class="site-footer"><p>{_e(a.site)}, 1 Harbour Street.</p></footer>
</body></html>"""


def article_header(seed: int) -> NewsPage:
    a = _article("article_header", seed, "The Harbour Gazette", "www.harbour-gazette.example.com")
    src = f"https://{a.host}/sites/default/files/styles/lead/public/2024-05/{a.slug}.jpg"
    content = f"""<main id="main"><article class="node node--type-article">
<header class="article-header"><h1 class="article-title">{_e(a.headline)}</h1>
<p class="article-summary">{_e(a.standfirst)}</p><div class="byline">By Staff Reporter | 2 May 2024</div>
<figure class="article-lead"><img src="{src}" width="1200" height="675" alt="{_e(a.headline)}"><figcaption>{_e(a.caption)}</figcaption></figure>
</header><div class="article-body">{a.body()}</div></article></main>"""
    return NewsPage("article_header", a.url, _page(a, content), [a.headline, a.standfirst, *a.paragraphs], {src})


def hero_above_h1(seed: int) -> NewsPage:
    a = _article("hero_above_h1", seed, "Coastline Weekly", "coastline-weekly.example.net")
    src = f"https://cdn.coastline-weekly.example.net/hero/{a.slug}.jpg"
    content = f"""<div class="hero"><div class="hero__media"><img class="hero__image" src="{src}" alt=""></div>
<div class="hero__overlay"><span class="kicker">Culture</span></div></div>
<div class="container"><h1 class="story-headline">{_e(a.headline)}</h1><p class="dek">{_e(a.standfirst)}</p>
<div class="story-body">{a.body()}</div></div>"""
    og = src if seed % 2 == 0 else ""
    return NewsPage("hero_above_h1", a.url, _page(a, content, og_image=og), [a.headline, a.standfirst, *a.paragraphs], {src})


def picture_above_headline(seed: int) -> NewsPage:
    a = _article("picture_above_headline", seed, "Valley Times", "www.valleytimes.example.org")
    base = f"https://images.valleytimes.example.org/{a.slug}"
    urls = {f"{base}-{w}.{ext}" for w in (800, 1600, 2400) for ext in ("webp", "jpg")}
    content = f"""<main><div class="article-top"><picture class="lead-picture">
<source type="image/webp" srcset="{base}-800.webp 800w, {base}-1600.webp 1600w, {base}-2400.webp 2400w" sizes="(min-width: 1024px) 960px, 100vw">
<source srcset="{base}-800.jpg 800w, {base}-1600.jpg 1600w, {base}-2400.jpg 2400w" sizes="(min-width: 1024px) 960px, 100vw">
<img src="{base}-800.jpg" alt="{_e(a.caption)}"></picture>
<h1>{_e(a.headline)}</h1><p class="lede">{_e(a.standfirst)}</p></div>
<div class="article-text">{a.body()}</div></main>"""
    return NewsPage("picture_above_headline", a.url, _page(a, content), [a.headline, a.standfirst, *a.paragraphs], urls)


def aside_beside_body(seed: int) -> NewsPage:
    a = _article("aside_beside_body", seed, "Northern Post", "northernpost.example.co.uk")
    src = f"https://static.northernpost.example.co.uk/photos/2024/{a.slug}-main.jpg"
    content = f"""<main><div class="story-grid"><div class="story-main"><h1>{_e(a.headline)}</h1>
<p class="standfirst">{_e(a.standfirst)}</p><div class="story-text">{a.body()}</div></div>
<aside class="story-media"><figure><img src="{src}" width="640" height="427" alt="">
<figcaption>{_e(a.caption)}</figcaption></figure></aside></div></main>"""
    og = src.replace("-main.jpg", "-main.jpg?w=1200&h=630&crop=1")
    return NewsPage("aside_beside_body", a.url, _page(a, content, og_image=og), [a.headline, a.standfirst, *a.paragraphs], {src})


def og_image_match(seed: int) -> NewsPage:
    a = _article("og_image_match", seed, "The Lantern", "thelantern.example.com")
    src = f"https://thelantern.example.com/uploads/{a.slug}.jpg?w=900"
    content = f"""<div class="story"><div class="story-photo"><img src="{src}" alt="{_e(a.caption)}"></div>
<div class="story-head"><h1>{_e(a.headline)}</h1><p class="intro">{_e(a.standfirst)}</p></div>
<div class="story-copy">{a.body()}</div></div>"""
    og = f"https://thelantern.example.com/uploads/{a.slug}.jpg?w=1200&fit=crop"
    return NewsPage("og_image_match", a.url, _page(a, content, og_image=og), [a.headline, a.standfirst, *a.paragraphs], {src})


def lazy_data_src(seed: int) -> NewsPage:
    a = _article("lazy_data_src", seed, "Riverside Chronicle", "www.riverside-chronicle.example.com")
    base = f"https://media.riverside-chronicle.example.com/2024/05/{a.slug}"
    urls = {f"{base}-{w}.jpg" for w in (640, 1280, 1920)}
    content = f"""<main><article><div class="featured-media">
<img class="lazyload" src="data:image/gif;base64,R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7" data-src="{base}-1280.jpg"
 data-srcset="{base}-640.jpg 640w, {base}-1280.jpg 1280w, {base}-1920.jpg 1920w" data-sizes="auto" alt="{_e(a.caption)}">
<noscript><img src="{base}-1280.jpg" alt="{_e(a.caption)}"></noscript></div>
<h1 class="entry-title">{_e(a.headline)}</h1><p class="excerpt">{_e(a.standfirst)}</p>
<div class="entry-content">{a.body()}</div></article></main>"""
    return NewsPage("lazy_data_src", a.url, _page(a, content), [a.headline, a.standfirst, *a.paragraphs], urls)


def wordpress_featured(seed: int) -> NewsPage:
    a = _article("wordpress_featured", seed, "Tidewater Notes", "tidewaternotes.example.org")
    base = f"https://tidewaternotes.example.org/wp-content/uploads/2024/05/{a.slug}"
    urls = {f"{base}-{s}.jpg" for s in ("300x200", "768x512", "1200x800")}
    content = f"""<div id="content" class="site-content"><div id="primary" class="content-area"><main id="main" class="site-main">
<article id="post-{seed}" class="post-{seed} post type-post status-publish format-standard has-post-thumbnail hentry">
<div class="post-thumbnail"><img width="1200" height="800" src="{base}-1200x800.jpg" class="attachment-post-thumbnail size-post-thumbnail wp-post-image" alt="" decoding="async"
 srcset="{base}-1200x800.jpg 1200w, {base}-300x200.jpg 300w, {base}-768x512.jpg 768w" sizes="(max-width: 1200px) 100vw, 1200px"></div>
<header class="entry-header"><h1 class="entry-title">{_e(a.headline)}</h1>
<div class="entry-meta"><span class="posted-on">Posted on <time>May 2, 2024</time></span></div></header>
<div class="entry-content"><p>{_e(a.standfirst)}</p>{a.body()}</div></article></main></div></div>"""
    return NewsPage("wordpress_featured", a.url, _page(a, content), [a.headline, a.standfirst, *a.paragraphs], urls)


def medium(seed: int) -> NewsPage:
    a = _article("medium", seed, "Medium", "medium.example.com")
    key = f"1*{a.slug.replace('-', '')[:22]}.jpeg"
    urls = {f"https://miro.medium.example.com/v2/resize:fit:{w}/format:webp/{key}" for w in (640, 720, 1100, 1400)}
    urls |= {f"https://miro.medium.example.com/v2/resize:fit:{w}/{key}" for w in (640, 720, 1100, 1400)}
    webp = ", ".join(f"https://miro.medium.example.com/v2/resize:fit:{w}/format:webp/{key} {w}w" for w in (640, 720, 1100, 1400))
    jpeg = ", ".join(f"https://miro.medium.example.com/v2/resize:fit:{w}/{key} {w}w" for w in (640, 720, 1100, 1400))
    sizes = "(min-resolution: 4dppx) and (max-width: 700px) 50vw, (-webkit-min-device-pixel-ratio: 4) and (max-width: 700px) 50vw, 700px"
    content = f"""<div class="l"><article><div class="l"><section><div class="pw-post-body-paragraph">
<h1 id="h1-{seed}" class="pw-post-title">{_e(a.headline)}</h1>
<div class="speechify-ignore"><div class="pw-author"><a href="/@writer">A. Writer</a></div><span>7 min read</span></div>
<figure class="paragraph-image"><div role="button" tabindex="0" class="ag ah ai"><span><picture>
<source srcset="{webp}" sizes="{sizes}" type="image/webp"><source data-testid="og" srcset="{jpeg}" sizes="{sizes}">
<img alt="" class="bh mn mo c" width="700" height="467" loading="eager" role="presentation"></picture></span></div>
<figcaption class="mu fg mv mg mh mw mx be b bf z dt">{_e(a.caption)}</figcaption></figure>
<p class="pw-post-body-paragraph">{_e(a.standfirst)}</p>{"".join(f'<p class="pw-post-body-paragraph">{_e(p)}</p>' for p in a.paragraphs)}
</div></section></div></article></div>"""
    return NewsPage("medium", a.url, _page(a, content), [a.headline, a.standfirst, *a.paragraphs], urls)


def bbc(seed: int) -> NewsPage:
    a = _article("bbc", seed, "BBC News", "www.bbc.example.co.uk")
    key = f"cpsprodpb/{seed:04d}/live/{a.slug}.jpg.webp"
    urls = {f"https://ichef.bbci.example.co.uk/news/{w}/{key}" for w in (240, 320, 480, 624, 800, 976, 1536)}
    srcset = ", ".join(f"https://ichef.bbci.example.co.uk/news/{w}/{key} {w}w" for w in (240, 320, 480, 624, 800, 976))
    content = f"""<main id="main-content" role="main"><article>
<header data-component="headline-block"><h1 id="main-heading" type="headline" tabindex="-1" class="sc-518485e5-0">{_e(a.headline)}</h1></header>
<div data-component="byline-block"><span>By A. Correspondent</span></div>
<div data-component="image-block"><figure><div class="sc-a34861b-1"><span class="sc-a34861b-2">
<img sizes="(min-width: 1280px) 50vw, (min-width: 1008px) 66vw, 96vw" srcset="{srcset}" src="https://ichef.bbci.example.co.uk/news/480/{key}"
 alt="{_e(a.caption)}" width="976" height="549" class="sc-a34861b-0"></span>
<span role="text" class="sc-a34861b-3"><span class="visually-hidden">Image source, </span>Harbour Agency</span></div>
<figcaption class="sc-8a068d35-3"><span class="visually-hidden">Image caption, </span>{_e(a.caption)}</figcaption></figure></div>
<div data-component="text-block"><p><b>{_e(a.standfirst)}</b></p></div>
{"".join(f'<div data-component="text-block"><p>{_e(p)}</p></div>' for p in a.paragraphs)}
</article></main>"""
    return NewsPage("bbc", a.url, _page(a, content), [a.headline, a.standfirst, *a.paragraphs], urls)


def guardian(seed: int) -> NewsPage:
    a = _article("guardian", seed, "The Guardian", "www.theguardian.example.com")
    master = f"https://i.guim.example.co.uk/img/media/{seed:08x}{a.slug[:6]}/0_0_5000_3000/master/5000.jpg"
    urls = {f"{master}?width={w}&dpr={d}&s=none" for w in (460, 465, 620, 700) for d in (1, 2)}
    content = f"""<main data-layout="StandardLayout"><article class="dcr-1">
<div data-gu-name="media"><div id="img-1" class="dcr-2"><figure id="{seed:08x}" data-spacefinder-role="immersive" class="dcr-3">
<div class="dcr-4"><picture class="dcr-5">
<source srcset="{master}?width=700&dpr=2&s=none 1400w" media="(min-width: 1300px) and (-webkit-min-device-pixel-ratio: 1.25), (min-width: 1300px) and (min-resolution: 120dpi)">
<source srcset="{master}?width=700&dpr=1&s=none 700w" media="(min-width: 1300px)">
<source srcset="{master}?width=620&dpr=2&s=none 1240w" media="(min-width: 660px) and (-webkit-min-device-pixel-ratio: 1.25), (min-width: 660px) and (min-resolution: 120dpi)">
<source srcset="{master}?width=620&dpr=1&s=none 620w" media="(min-width: 660px)">
<source srcset="{master}?width=465&dpr=2&s=none 930w" media="(min-width: 480px) and (-webkit-min-device-pixel-ratio: 1.25), (min-width: 480px) and (min-resolution: 120dpi)">
<img alt="{_e(a.caption)}" src="{master}?width=465&dpr=1&s=none" width="465" height="279.0000000000001" loading="eager" class="dcr-6"></picture></div>
<figcaption data-spacefinder-type="model.dotcomrendering.pageElements.ImageBlockElement" class="dcr-7"><span class="dcr-8">{_e(a.caption)}</span> Photograph: Harbour Agency</figcaption></figure></div></div>
<div data-gu-name="headline"><div class="dcr-9"><h1 class="dcr-10">{_e(a.headline)}</h1></div></div>
<div data-gu-name="standfirst"><div class="dcr-11"><p>{_e(a.standfirst)}</p></div></div>
<div data-gu-name="body" class="dcr-12"><div id="maincontent" class="article-body-commercial-selector article-body-viewer-selector dcr-13">{a.body()}</div></div>
</article></main>"""
    return NewsPage("guardian", a.url, _page(a, content), [a.headline, a.standfirst, *a.paragraphs], urls)


def nyt(seed: int) -> NewsPage:
    a = _article("nyt", seed, "The New York Times", "www.nytimes.example.com")
    base = f"https://static01.nyt.example.com/images/2024/05/02/multimedia/02{a.slug[:12]}-{seed}"
    renditions = {"articleLarge": 600, "jumbo": 1024, "superJumbo": 2048}
    urls = {f"{base}-{name}.jpg?quality=75&auto=webp" for name in renditions} | {f"{base}-mobileMasterAt3x.jpg?quality=75&auto=webp"}
    srcset = ",".join(f"{base}-{name}.jpg?quality=75&auto=webp {w}w" for name, w in renditions.items())
    content = f"""<main id="site-content"><div><article id="story" class="css-1vxca1d e1lmdhsb0">
<header class="css-1uadkq1 e1h9rw200"><div class="css-1vkm6nb ehdk2mb0"><h1 data-testid="headline" class="css-88wicj e1h9rw200">{_e(a.headline)}</h1></div>
<p id="article-summary" class="css-79rysd e1wiw3jv0">{_e(a.standfirst)}</p>
<div data-testid="photoviewer-wrapper" class="css-hvqzw6"><figure class="sizeLarge" aria-label="media" role="group">
<div data-testid="photoviewer-children" class="css-1a48zt4 ehw59r15"><div data-testid="imageblock-wrapper" class="css-1xdhyk6 erfvjey0"><picture>
<source media="(max-width: 599px) and (min-device-pixel-ratio: 3),(max-width: 599px) and (-webkit-min-device-pixel-ratio: 3),(max-width: 599px) and (min-resolution: 3dppx),(max-width: 599px) and (min-resolution: 288dpi)" srcset="{base}-mobileMasterAt3x.jpg?quality=75&auto=webp">
<img alt="{_e(a.caption)}" class="css-rq4mmj" src="{base}-articleLarge.jpg?quality=75&auto=webp" srcset="{srcset}"
 sizes="((min-width: 600px) and (max-width: 1004px)) 84vw, (min-width: 1005px) 80vw, 100vw" decoding="async" width="600" height="400"></picture></div></div>
<figcaption class="css-1ho5u4o e13ogyst0"><span class="css-cnj6d5 e1z0qqy90">{_e(a.caption)}</span><span class="css-1ly73wi e1tej78p0"><span class="css-1ly73wi e1tej78p0">Credit...</span><span>Harbour Agency for The New York Times</span></span></figcaption></figure></div>
<div class="css-1vyk9xo"><div class="css-1cd2gr3"><p class="css-aknsld e1jsehar1">By A. Correspondent</p></div></div></header>
<section name="articleBody" class="meteredContent css-1r7ky0e">{"".join(f'<div class="css-53u6y8"><div class="css-at9mc1 StoryBodyCompanionColumn"><div class="css-53u6y8"><p class="css-at9mc1 evys1bk0">{_e(p)}</p></div></div></div>' for p in a.paragraphs)}</section>
</article></div></main>"""
    return NewsPage("nyt", a.url, _page(a, content), [a.headline, a.standfirst, *a.paragraphs], urls)


def ghost(seed: int) -> NewsPage:
    a = _article("ghost", seed, "Harbour Letters", "harbourletters.example.io")
    base = f"https://harbourletters.example.io/content/images/size/w{{w}}/2024/05/{a.slug}.jpg"
    urls = {base.format(w=w) for w in (300, 600, 1000, 2000)}
    srcset = ", ".join(f"{base.format(w=w)} {w}w" for w in (300, 600, 1000, 2000))
    content = f"""<main id="site-main" class="site-main"><article class="article post tag-news featured">
<header class="article-header gh-canvas"><div class="article-tag post-card-tags"><span class="post-card-primary-tag"><a href="/tag/news/">News</a></span></div>
<h1 class="article-title">{_e(a.headline)}</h1><p class="article-excerpt">{_e(a.standfirst)}</p>
<div class="article-byline"><div class="article-byline-content"><div class="author-name"><a href="/author/editor/">Editor</a></div></div></div>
<figure class="article-image"><img srcset="{srcset}" sizes="(min-width: 1400px) 1400px, 92vw" src="{base.format(w=2000)}" alt="{_e(a.caption)}">
<figcaption>{_e(a.caption)}</figcaption></figure></header>
<section class="gh-content gh-canvas">{a.body()}</section></article></main>"""
    return NewsPage("ghost", a.url, _page(a, content), [a.headline, a.standfirst, *a.paragraphs], urls)


def substack(seed: int) -> NewsPage:
    a = _article("substack", seed, "Harbour Dispatch", "harbourdispatch.substack.example.com")
    original = f"https%3A%2F%2Fsubstack-post-media.s3.amazonaws.example.com%2Fpublic%2Fimages%2F{seed:04d}{a.slug[:8]}_4000x2667.jpeg"
    fetch = "https://substackcdn.example.com/image/fetch/{opts}/" + original
    sizes = (424, 848, 1272, 1456)
    urls = {fetch.format(opts=f"w_{w},c_limit,f_webp,q_auto:good,fl_progressive:steep") for w in sizes}
    urls |= {fetch.format(opts=f"w_{w},c_limit,f_auto,q_auto:good,fl_progressive:steep") for w in sizes}
    webp = ", ".join(f"{fetch.format(opts=f'w_{w},c_limit,f_webp,q_auto:good,fl_progressive:steep')} {w}w" for w in sizes)
    auto = ", ".join(f"{fetch.format(opts=f'w_{w},c_limit,f_auto,q_auto:good,fl_progressive:steep')} {w}w" for w in sizes)
    full = fetch.format(opts="f_auto,q_auto:good,fl_progressive:steep")
    content = f"""<div class="single-post-container"><div class="container"><div class="single-post"><article class="typography newsletter-post post">
<div class="post-header"><h1 class="post-title published">{_e(a.headline)}</h1><h3 class="subtitle">{_e(a.standfirst)}</h3>
<div class="post-meta"><a href="/profile/1-editor">Editor</a> <span>May 02, 2024</span></div></div>
<div class="available-content"><div dir="auto" class="body markup">
<div class="captioned-image-container"><figure><a class="image-link image2 is-viewable-img" target="_blank" href="{full}">
<div class="image2-inset"><picture><source type="image/webp" srcset="{webp}" sizes="100vw">
<img src="{fetch.format(opts='w_1456,c_limit,f_auto,q_auto:good,fl_progressive:steep')}" width="1456" height="971" class="sizing-normal" alt="" srcset="{auto}" sizes="100vw" fetchpriority="high"></picture>
<div class="image-link-expand"><div class="pencraft"><button tabindex="0" type="button" class="pencraft icon-container restack-image"></button></div></div></div></a>
<figcaption class="image-caption">{_e(a.caption)}</figcaption></figure></div>
{a.body()}</div></div></article></div></div></div>"""
    return NewsPage("substack", a.url, _page(a, content), [a.headline, a.standfirst, *a.paragraphs], urls)


def cnn(seed: int) -> NewsPage:
    a = _article("cnn", seed, "CNN", "edition.cnn.example.com")
    base = f"https://media.cnn.example.com/api/v1/images/stellar/prod/{seed:04d}-{a.slug[:10]}.jpg?c=16x9&q="
    variants = ("h_438,w_780,c_fill", "h_540,w_960,c_fill", "h_270,w_480,c_fill", "w_800,c_fill")
    urls = {base + v for v in variants}
    content = f"""<div class="headline headline--has-lowertext"><div class="headline__wrapper"><h1 data-editable="headlineText" class="headline__text">{_e(a.headline)}</h1></div>
<div class="headline__footer"><div class="byline">By A. Correspondent, CNN</div><div class="timestamp">Updated 2 May 2024</div></div></div>
<section class="layout__wrapper"><div class="article__lede-wrapper"><div class="image__lede article__lede-wrapper" data-editable="lede">
<div data-component-name="image" class="image image__hide-placeholder"><div class="image__container">
<picture class="image__picture"><source height="438" width="780" media="(min-width: 1280px)" srcset="{base}h_438,w_780,c_fill">
<source height="540" width="960" media="(min-width: 960px)" srcset="{base}h_540,w_960,c_fill">
<source height="270" width="480" media="(-webkit-min-device-pixel-ratio: 2)" srcset="{base}h_270,w_480,c_fill">
<img src="{base}w_800,c_fill" alt="{_e(a.caption)}" class="image__dam-img image__dam-img--loading" height="438" width="780" loading="eager"></picture></div>
<div class="image__metadata"><div itemprop="caption" class="image__caption attribution"><span data-editable="metaCaption" class="inline-placeholder">{_e(a.caption)}</span></div></div></div></div></div>
<div class="article__content-container"><div class="article__content" data-editable="content" itemprop="articleBody">
<p class="paragraph inline-placeholder">{_e(a.standfirst)}</p>{"".join(f'<p class="paragraph inline-placeholder">{_e(p)}</p>' for p in a.paragraphs)}</div></div></section>"""
    return NewsPage("cnn", a.url, _page(a, content), [a.headline, a.standfirst, *a.paragraphs], urls)


def noscript_only(seed: int) -> NewsPage:
    a = _article("noscript_only", seed, "Estuary Review", "www.estuary-review.example.com")
    src = f"https://img.estuary-review.example.com/{a.slug}/1600.jpg"
    content = f"""<main><article class="article"><header class="article__header"><h1 class="article__title">{_e(a.headline)}</h1>
<p class="article__dek">{_e(a.standfirst)}</p></header>
<figure class="article__lead"><div class="progressive-image" data-src="{src}" data-width="1600" style="padding-bottom: 56.25%"></div>
<noscript><img src="{src}" alt="{_e(a.caption)}"></noscript><figcaption>{_e(a.caption)}</figcaption></figure>
<div class="article__body">{a.body()}</div></article></main>"""
    return NewsPage("noscript_only", a.url, _page(a, content), [a.headline, a.standfirst, *a.paragraphs], {src})


def amp(seed: int) -> NewsPage:
    a = _article("amp", seed, "Harbour News AMP", "amp.harbournews.example.com")
    src = f"https://amp.harbournews.example.com/media/{a.slug}-1200x675.jpg"
    content = f"""<main id="content" role="main"><article class="amp-wp-article">
<header class="amp-wp-article-header"><h1 class="amp-wp-title">{_e(a.headline)}</h1>
<div class="amp-wp-meta amp-wp-byline"><span class="amp-wp-author author vcard">Staff</span></div></header>
<figure class="amp-wp-article-featured-image wp-caption"><amp-img width="1200" height="675" src="{src}" class="attachment-large size-large wp-post-image amp-wp-enforced-sizes" alt="{_e(a.caption)}" layout="responsive">
<noscript><img width="1200" height="675" src="{src}" alt="{_e(a.caption)}"></noscript></amp-img></figure>
<div class="amp-wp-article-content"><p>{_e(a.standfirst)}</p>{a.body()}</div></article></main>"""
    return NewsPage("amp", a.url, _page(a, content).replace('<html lang="en">', '<html amp lang="en">'), [a.headline, a.standfirst, *a.paragraphs], {src})


LAYOUTS: dict[str, Callable[[int], NewsPage]] = {
    build.__name__: build
    for build in (
        article_header, hero_above_h1, picture_above_headline, aside_beside_body, og_image_match, lazy_data_src,
        wordpress_featured, medium, bbc, guardian, nyt, ghost, substack, cnn, noscript_only, amp,
    )
}  # fmt: skip


def news_pages(per_layout: int = 3) -> list[NewsPage]:
    """``per_layout`` pages of every layout (seeds 0..per_layout-1)."""
    return [build(seed) for build in LAYOUTS.values() for seed in range(per_layout)]
