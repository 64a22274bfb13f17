"""Builds HTML pages with the structure of real ones, and their golden content.

Used by the extraction tests and by the extraction F1 check of the benchmarks
(benchmarks/bench_vs_datatrove.py, bench_read_extract.py). Every page is a
``LabelledPage``: the HTML, the URL it is extracted as, the golden main text (the
paragraphs, headings and list items a reader would call the article, in order) and
the golden content image URLs (as a browser at 2x density loads them).

The kinds, each built from a seed so that many distinct pages can be made:

- ``encyclopedia_page``: a long encyclopedia article (MediaWiki's markup: an
  infobox table, thumbnails ``<figure typeof="mw:File/Thumb">`` declared 100-220 px
  wide with ``srcset`` 1.5x / 2x, file names with commas written ``%2C``, a
  navigation box, references, a sidebar and footer of site links, edit-section
  links);
- ``news_page``: a news article: a site header with a logo linked home, a hero
  section *outside* ``<main>`` with the headline and the lead image (``<picture>``
  with sources, ``srcset`` with ``sizes``, a caption and a photo credit), og:image
  and JSON-LD naming that image, body figures with captions and credits, an inline
  "related stories" list of image teasers, a "most read" sidebar and a footer;
- ``react_page``: a news article rendered by React, whose text nodes are split by
  empty ``<!-- -->`` comments;
- ``blog_page``: a blog post with lazy-loaded images (``data-src`` over a
  placeholder, ``data-srcset``), comments section and share buttons.
"""

from __future__ import annotations

import html as html_lib
import json
import random
from dataclasses import dataclass, field

from mmcurate.schemas import Page, Provenance

SUBJECTS = (
    "The river", "The old mill", "The council", "The survey team", "The northern valley", "The museum",
    "The railway company", "The harbour authority", "The village school", "The cathedral chapter",
    "The observatory", "The ferry service", "The botanical garden", "The regional archive",
    "The mining cooperative", "The lighthouse keeper", "The weaving guild", "The coastal path",
)
VERBS = (
    "was rebuilt after the flood of", "recorded its highest numbers in", "changed hands twice before",
    "opened a new wing in", "lost most of its records in", "was surveyed again in", "doubled in size by",
    "was described in detail by travellers in", "reached its present form in", "was first mentioned in",
)
DETAILS = (
    "and the work was paid for by a subscription among the local families",
    "although the plans drawn up at the time were never fully carried out",
    "which brought new trade to the market towns along the estuary",
    "when the new road across the moor finally reached the coast",
    "after a long dispute between the landowners and the parish",
    "while the surrounding farms turned from sheep to dairy cattle",
    "as the population of the district grew by almost a third",
    "so that visitors could reach it from the station in under an hour",
    "though the original timber frame survives inside the later stone walls",
    "and its accounts are still kept in the county record office",
)
CLOSERS = (
    "Historians still disagree about the exact sequence of events.",
    "Several letters from the period describe the change in vivid terms.",
    "The figures were published in the annual report of the following year.",
    "Local newspapers followed every stage of the project closely.",
    "A plaque on the west wall records the names of the builders.",
    "Photographs taken at the time show the scale of the undertaking.",
    "Later surveys confirmed most of the early measurements.",
    "Its influence on the surrounding towns lasted for generations.",
)


def paragraph(rng: random.Random, sentences: int = 4) -> str:
    """Plain prose of ``sentences`` sentences, distinct from page to page."""
    out = []
    for _ in range(sentences):
        year = rng.randrange(1650, 2020)
        out.append(f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {year}, {rng.choice(DETAILS)}.")
        if rng.random() < 0.4:
            out.append(rng.choice(CLOSERS))
    return " ".join(out)


@dataclass
class LabelledPage:
    kind: str
    url: str
    html: str
    text: list[str]  # golden blocks in reading order
    images: list[str] = field(default_factory=list)  # golden content image URLs (2x choice)
    lead_image: str = ""


def _e(text: str) -> str:
    return html_lib.escape(text, quote=True)


# ---------------------------------------------------------------------------
# Encyclopedia article


def encyclopedia_page(seed: int, sections: int = 8, paragraphs_per_section: int = 4) -> LabelledPage:
    rng = random.Random(seed)
    title = f"Valley of the {rng.choice(['Seven Mills', 'Grey Heron', 'Old Ferry', 'Salt Road', 'Lost Bell'])} {seed}"
    url = f"https://en.wiki.example.org/wiki/{title.replace(' ', '_')}"
    upload = "https://upload.wiki.example.org/wikipedia/commons/thumb"
    text: list[str] = [title]
    images: list[str] = []
    body: list[str] = []

    def thumb(name: str, caption: str, width: int, height: int) -> str:
        # MediaWiki writes the file name percent-encoded (%2C for ","); its thumbnails
        # are declared at the 1x size and offer 1.5x and 2x versions.
        enc = name.replace(",", "%2C")
        one, one_half, two = (f"{upload}/a/ab/{enc}/{w}px-{enc}" for w in (width, int(width * 1.5), width * 2))
        images.append(two)  # the 2x choice, spelled as the page spells it
        return (
            f'<figure class="mw-default-size" typeof="mw:File/Thumb"><a href="/wiki/File:{enc}" class="mw-file-description">'
            f'<img alt="" src="{one}" decoding="async" width="{width}" height="{height}" class="mw-file-element" '
            f'srcset="{one_half} 1.5x, {two} 2x" data-file-width="3000" data-file-height="{int(3000 * height / width)}"></a>'
            f"<figcaption>{_e(caption)}</figcaption></figure>"
        )

    lead = paragraph(rng, 5)
    text.append(lead)
    images.append(f"{upload}/b/bc/Map_{seed}.png/440px-Map_{seed}.png")
    infobox = (
        '<table class="infobox vcard"><tbody>'
        f'<tr><th colspan="2" class="infobox-above">{_e(title)}</th></tr>'
        f'<tr><td colspan="2" class="infobox-image"><span typeof="mw:File"><a href="/wiki/File:Map.png">'
        f'<img src="{upload}/b/bc/Map_{seed}.png/220px-Map_{seed}.png" width="220" height="160" '
        f'srcset="{upload}/b/bc/Map_{seed}.png/330px-Map_{seed}.png 1.5x, {upload}/b/bc/Map_{seed}.png/440px-Map_{seed}.png 2x">'
        "</a></span></td></tr>"
        f"<tr><th>Area</th><td>{rng.randrange(10, 900)} km2</td></tr>"
        f"<tr><th>Population</th><td>{rng.randrange(1000, 90000)}</td></tr></tbody></table>"
    )
    body.append(infobox)
    body.append(f"<p><b>{_e(title)}</b> {_e(lead)}</p>")
    body.append('<div id="toc" class="toc"><div class="toctitle"><h2>Contents</h2></div><ul>')
    names = [f"{rng.choice(['History', 'Geography', 'Economy', 'Culture', 'Transport', 'Landmarks'])} {i + 1}" for i in range(sections)]
    body.extend(f'<li class="toclevel-1"><a href="#s{i}"><span class="tocnumber">{i + 1}</span> {_e(n)}</a></li>' for i, n in enumerate(names))
    body.append("</ul></div>")
    for i, name in enumerate(names):
        body.append(f'<div class="mw-heading mw-heading2"><h2 id="s{i}">{_e(name)}</h2><span class="mw-editsection">[<a href="?action=edit&amp;section={i}">edit</a>]</span></div>')
        text.append(name)
        for j in range(paragraphs_per_section):
            if j == 1 and i % 2 == 0:
                # Thumbnails declared 100-220 px wide, as MediaWiki's defaults.
                w = rng.choice([100, 120, 170, 220])
                fname = f"Portrait_of_{rng.choice(['Anna', 'Jan', 'Marta'])},_by_{rng.choice(['Vermeer', 'Hals', 'Steen'])}_{seed}_{i}.jpg"
                body.append(thumb(fname, f"Figure {i}: {rng.choice(SUBJECTS).lower()} in {rng.randrange(1800, 1950)}.", w, int(w * 1.56)))
            p = paragraph(rng, 4)
            text.append(p)
            icons = ""
            if j == 0:
                # Inline icons: a flag (MediaWiki gives it a srcset too) and a plain
                # 16 px icon; node cleanup removes both, 2x or not.
                flag = f"{upload}/f/f0/Flag_{i}.svg/23px-Flag_{i}.svg.png"
                icons = (
                    f'<span class="flagicon"><img alt="" src="{flag}" width="23" height="15" '
                    f'srcset="{flag.replace("23px", "35px")} 1.5x, {flag.replace("23px", "46px")} 2x"></span> '
                    '<img src="/static/images/icons/speaker-16.png" width="16" height="16" alt="listen"> '
                )
            body.append(f'<p>{icons}{_e(p)}<sup class="reference"><a href="#cite_note-{i}-{j}">[{i * 4 + j + 1}]</a></sup></p>')
    body.append('<div class="mw-heading mw-heading2"><h2 id="References">References</h2></div><div class="reflist"><ol class="references">')
    body.extend(f'<li id="cite_note-{k}"><span class="reference-text">Archive report {k}, p. {k * 3}.</span></li>' for k in range(sections * 2))
    body.append("</ol></div>")
    navbox = (
        '<div role="navigation" class="navbox"><table class="nowraplinks"><tr><th>Valleys of the region</th>'
        + "".join(f'<td><a href="/wiki/V{k}">Valley {k}</a></td>' for k in range(12))
        + "</tr></table></div>"
    )
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="UTF-8"><title>{_e(title)} - Wikipedia</title>
<meta property="og:image" content="{upload}/b/bc/Map_{seed}.png/1200px-Map_{seed}.png">
<link rel="icon" href="/static/favicon/wikipedia.ico"></head>
<body class="mediawiki skin-vector">
<a class="mw-jump-link" href="#bodyContent">Jump to content</a>
<header class="vector-header mw-header"><a href="/wiki/Main_Page" class="mw-logo"><img class="mw-logo-icon" src="/static/images/icons/wikipedia.png" alt="" width="50" height="50"></a>
<div class="vector-search-box"><form action="/w/index.php"><input name="search" placeholder="Search Wikipedia"></form></div></header>
<div class="mw-page-container"><nav id="mw-panel" class="vector-main-menu"><ul>
<li><a href="/wiki/Main_Page">Main page</a></li><li><a href="/wiki/Special:Random">Random article</a></li><li><a href="/wiki/Help:Contents">Help</a></li></ul></nav>
<main id="content" class="mw-body"><h1 id="firstHeading" class="firstHeading mw-first-heading"><span class="mw-page-title-main">{_e(title)}</span></h1>
<div id="bodyContent" class="vector-body"><div id="siteSub">From Wikipedia, the free encyclopedia</div>
<div id="mw-content-text" class="mw-body-content"><div class="mw-content-ltr mw-parser-output" lang="en" dir="ltr">
{"".join(body)}
{navbox}
</div></div></div></main></div>
<footer id="footer" class="mw-footer"><ul id="footer-info"><li>This page was last edited on 1 May 2024.</li>
<li>Text is available under the Creative Commons Attribution-ShareAlike License 4.0; additional terms may apply.</li></ul>
<ul id="footer-icons"><li><a href="https://wikimediafoundation.org/"><img src="/static/images/footer/wikimedia-button.png" width="88" height="31" alt="Wikimedia Foundation"></a></li></ul></footer>
</body></html>"""
    return LabelledPage("encyclopedia", url, page, text, images)


# ---------------------------------------------------------------------------
# News article


def news_page(seed: int, paragraphs: int = 14, og_image_is_logo: bool = False) -> LabelledPage:
    rng = random.Random(1000 + seed)
    site = "The Daily Courier"
    slug = f"bridge-reopens-{seed}"
    url = f"https://www.courier.example.com/news/2024/05/{slug}"
    cdn = "https://cdn.courier.example.com/images"
    headline = f"{rng.choice(SUBJECTS)} reopens the harbour bridge after {rng.randrange(2, 9)} years of work"
    standfirst = paragraph(rng, 1)
    lead_1x, lead_2x, lead_big = (f"{cdn}/{w}/{slug}-lead.jpg" for w in (800, 1600, 2400))
    lead_caption = f"Crowds on the bridge on the morning it reopened. Photo: Staff photographer {seed}"
    text = [headline, standfirst]
    images = [lead_2x]
    body: list[str] = []
    for i in range(paragraphs):
        p = paragraph(rng, 3)
        text.append(p)
        body.append(f"<p>{_e(p)}</p>")
        if i in (2, 5, 8, 11):
            fig = f"{cdn}/{{w}}/{slug}-body-{i}.jpg"
            images.append(fig.format(w=1600))
            # As BBC News marks up its pictures: a copyright line under every
            # picture (the same agency, often), then the caption, each with a
            # screen-reader label.
            body.append(
                f'<figure class="media-landscape has-caption full-width"><span class="image-and-copyright-container">'
                f'<img src="{fig.format(w=800)}" srcset="{fig.format(w=400)} 400w, {fig.format(w=800)} 800w, '
                f'{fig.format(w=1600)} 1600w" sizes="(max-width: 700px) 100vw, 760px" alt="Scene {i}" width="800" height="533">'
                f'<span class="off-screen">Image copyright</span><span class="story-image-copyright">Courier archive</span></span>'
                f'<figcaption class="media-caption"><span class="off-screen">Image caption</span>'
                f'<span class="media-caption__text">The quay in {1900 + i * 7}.</span></figcaption></figure>'
            )
        if i == 5:
            # An inline list of image teasers for other stories.
            teasers = "".join(
                f'<li class="teaser"><a href="/news/2024/05/story-{seed}-{k}"><img src="{cdn}/300/teaser-{seed}-{k}.jpg" '
                f'alt="Related story {k}" width="300" height="200"><span>Related story {k}</span></a></li>'
                for k in range(3)
            )
            body.append(f'<div class="related"><h3>Related</h3><ul>{teasers}</ul></div>')
    og_image = "https://www.courier.example.com/static/courier-logo-1200.png" if og_image_is_logo else lead_big
    json_ld = {
        "@context": "https://schema.org",
        "@type": "NewsArticle",
        "headline": headline,
        "image": [og_image] if og_image_is_logo else [lead_big, lead_2x],
        "publisher": {"@type": "Organization", "name": site, "logo": {"@type": "ImageObject", "url": "https://www.courier.example.com/static/courier-logo.png"}},
    }
    # Several photos of one event share one title, as photo desks publish them.
    photos = "".join(
        f'<li><article><a href="/photos/{seed}-{k}"><div class="txt-con"><strong class="tit">'
        f'{"Funeral of the harbour master" if k < 3 else f"Regatta day {k}"}</strong></div>'
        f'<figure class="img-cover"><img src="{cdn}/300/photo-{seed}-{k}.jpg" alt="Photo {k}"></figure></a></article></li>'
        for k in range(5)
    )
    most_read = "".join(
        f'<li><a href="/news/2024/04/top-{k}"><img src="{cdn}/150/top-{k}.jpg" width="150" height="100" alt="">Top story {k} of the week</a></li>'
        for k in range(5)
    )
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{_e(headline)} | {site}</title>
<meta property="og:site_name" content="{site}"><meta property="og:title" content="{_e(headline)}">
<meta property="og:image" content="{og_image}">
<script type="application/ld+json">{json.dumps(json_ld)}</script></head>
<body>
<header class="site-header" role="banner"><div class="masthead"><a href="/" class="site-logo"><img src="https://www.courier.example.com/static/courier-logo.png" alt="{site}" width="240" height="60"></a></div>
<nav class="main-nav"><ul><li><a href="/news">News</a></li><li><a href="/sport">Sport</a></li><li><a href="/opinion">Opinion</a></li></ul></nav></header>
<div class="article-hero">
<div class="breadcrumbs"><a href="/">Home</a> / <a href="/news">News</a></div>
<h1 class="headline">{_e(headline)}</h1>
<p class="standfirst">{_e(standfirst)}</p>
<div class="byline">By Staff Reporter {seed} | 1 May 2024</div>
<figure class="lead-figure"><picture>
<source media="(max-width: 600px)" srcset="{cdn}/600/{slug}-lead-crop.jpg 1x, {cdn}/1200/{slug}-lead-crop.jpg 2x">
<source srcset="{lead_1x} 800w, {lead_2x} 1600w, {lead_big} 2400w" sizes="(min-width: 1000px) 800px, 100vw">
<img src="{lead_1x}" alt="The harbour bridge" width="800" height="450"></picture>
<figcaption>{_e(lead_caption)}</figcaption></figure>
</div>
<main><article><div class="article-body">
{"".join(body)}
</div>
<div class="share"><a href="#">Share on Facebook</a> <a href="#">Share on Twitter</a></div>
</article>
<section class="most-photo-zone"><div class="section-tit"><span class="tit"><a href="/photos">Most viewed photos</a></span></div>
<ul class="photo-box">{photos}</ul></section></main>
<aside class="most-read"><h2>Most read</h2><ol>{most_read}</ol></aside>
<footer><p>Copyright 2024 {site}. All rights reserved.</p><a href="/"><img src="https://www.courier.example.com/static/courier-logo-small.png" alt="{site}" width="120" height="30"></a></footer>
</body></html>"""
    text = [t for t in text]
    return LabelledPage("news", url, page, text, images, lead_image=lead_2x)


# ---------------------------------------------------------------------------
# React-rendered article


def react_page(seed: int, paragraphs: int = 8) -> LabelledPage:
    rng = random.Random(2000 + seed)
    url = f"https://www.react-news.example.net/politics/story-{seed}"
    headline = f"When President {rng.choice(['Adams', 'Brook', 'Carter'])} spoke on Tuesday, {rng.randrange(2000, 9000)} people listened"
    text = [headline]
    body = []
    for i in range(paragraphs):
        words = paragraph(rng, 3).split(" ")
        text.append(" ".join(words))
        if i % 3 != 1:
            body.append(f"<p>{_e(' '.join(words))}</p>")
            continue
        # React separates adjacent text expressions with empty comments:
        # {"When "}{title}{" Biden..."} renders as "When <!-- -->President<!-- --> Biden ...".
        chunks = [words[0] + " ", words[1], " " + " ".join(words[2:])]
        body.append("<p>" + "<!-- -->".join(_e(c) for c in chunks) + "</p>")
    head_parts = headline.split(" ")
    h1 = f"{head_parts[0]} <!-- -->{' '.join(head_parts[1:3])}<!-- --> {' '.join(head_parts[3:])}"
    page = f"""<!DOCTYPE html><html lang="en"><head><title>{_e(headline)}</title></head><body>
<div id="__next"><div class="layout"><nav class="top"><a href="/">React News</a><a href="/politics">Politics</a></nav>
<main><article><h1>{h1}</h1><div class="byline">By <!-- -->A. Writer<!-- --> | <!-- -->3<!-- --> min read</div>
{"".join(body)}</article></main><footer>React News Ltd.</footer></div></div>
<script id="__NEXT_DATA__" type="application/json">{{"props":{{}}}}</script></body></html>"""
    return LabelledPage("react", url, page, text, [])


# ---------------------------------------------------------------------------
# Blog post


def blog_page(seed: int, paragraphs: int = 10) -> LabelledPage:
    rng = random.Random(3000 + seed)
    url = f"https://walking-notes.example.org/{2020 + seed % 4}/trail-{seed}/"
    title = f"A week on the {rng.choice(['coastal', 'ridge', 'forest', 'canal'])} trail, part {seed}"
    text = [title]
    images = []
    body = []
    for i in range(paragraphs):
        p = paragraph(rng, 4)
        text.append(p)
        body.append(f"<p>{_e(p)}</p>")
        if i % 3 == 1:
            base = f"https://walking-notes.example.org/wp-content/uploads/2023/06/trail-{seed}-{i}"
            images.append(f"{base}-1536x1024.jpg")
            body.append(
                f'<figure class="wp-block-image size-large"><img decoding="async" width="1024" height="683" '
                f'src="data:image/svg+xml,%3Csvg%3E%3C/svg%3E" data-src="{base}-1024x683.jpg" '
                f'data-srcset="{base}-1024x683.jpg 1024w, {base}-300x200.jpg 300w, {base}-768x512.jpg 768w, {base}-1536x1024.jpg 1536w" '
                f'sizes="(max-width: 1024px) 100vw, 1024px" alt="Trail day {i}" class="lazyload">'
                f'<noscript><img src="{base}-1024x683.jpg" alt="Trail day {i}"></noscript></figure>'
            )
    comments = "".join(
        f'<li class="comment"><div class="comment-author"><img src="https://secure.gravatar.example/avatar/{k}?s=40" width="40" height="40" class="avatar">Reader {k}</div>'
        f"<p>Lovely photos, thanks for sharing number {k}!</p></li>"
        for k in range(3)
    )
    page = f"""<!DOCTYPE html><html lang="en-GB"><head><meta charset="UTF-8"><title>{_e(title)} – Walking Notes</title></head>
<body class="post-template-default single"><div id="page" class="site">
<header id="masthead" class="site-header"><div class="site-branding"><a href="/" rel="home"><img src="/wp-content/uploads/2021/01/header-logo.png" width="300" height="80" alt="Walking Notes"></a></div>
<nav id="site-navigation"><ul><li><a href="/about/">About</a></li><li><a href="/trails/">Trails</a></li></ul></nav></header>
<div id="content" class="site-content"><main id="main" class="site-main"><article class="post type-post">
<header class="entry-header"><h1 class="entry-title">{_e(title)}</h1><div class="entry-meta">Posted on June 3, 2023</div></header>
<div class="entry-content">{"".join(body)}
<div class="sharedaddy"><h3>Share this:</h3><ul><li><a href="#">Twitter</a></li><li><a href="#">Facebook</a></li></ul></div></div>
</article>
<div id="comments" class="comments-area"><h2>3 thoughts on this post</h2><ol class="comment-list">{comments}</ol></div>
</main><aside id="secondary" class="widget-area"><section class="widget"><h2>Archives</h2><ul><li><a href="/2023/">2023</a></li></ul></section></aside></div>
<footer id="colophon"><div class="site-info">Proudly powered by WordPress</div></footer></div></body></html>"""
    return LabelledPage("blog", url, page, text, images)


# A short article: two paragraphs around ``body`` (the extraction tests' page).
ARTICLE_OPENING = (
    "The survey team walked the length of the sea wall at every spring tide for three years, "
    "recording each bird within fifty metres of the line and the state of the creeks beside it."
)
ARTICLE_CLOSING = (
    "Counts were steady from one season to the next, although the samphire spread into two new "
    "creeks on the eastern side of the marsh, where the mud is building up behind the bank."
)


def article_page(body: str, head: str = "") -> str:
    """An ``<article>`` whose two paragraphs trafilatura keeps, with ``body`` between them."""
    return (
        f"<html><head>{head}</head><body><article><p>{ARTICLE_OPENING}</p>{body}"
        f"<p>{ARTICLE_CLOSING}</p></article></body></html>"
    )


KINDS = {"encyclopedia": encyclopedia_page, "news": news_page, "react": react_page, "blog": blog_page}


def labelled_pages(n_per_kind: int = 5) -> list[LabelledPage]:
    """``n_per_kind`` pages of each kind, seeds 0..n-1."""
    return [build(seed) for build in KINDS.values() for seed in range(n_per_kind)]


def token_f1(extracted: str, golden: str) -> tuple[float, float, float]:
    """Bag-of-words precision, recall and F1 of ``extracted`` against ``golden``
    (whitespace tokens, case kept), the measure extraction benchmarks use
    (e.g. the ScrapingHub article-extraction benchmark, trafilatura's evaluation)."""
    from collections import Counter

    got, want = Counter(extracted.split()), Counter(golden.split())
    common = sum((got & want).values())
    if not got or not want:
        return (0.0, 0.0, 0.0) if (got or want) else (1.0, 1.0, 1.0)
    precision, recall = common / sum(got.values()), common / sum(want.values())
    f1 = 2 * precision * recall / (precision + recall) if common else 0.0
    return precision, recall, f1


def html_page(doc_id: str, html: str, url: str, warc_file: str = "test.warc.gz") -> Page:
    """``html`` as the read stage gives it: a 200 UTF-8 ``text/html`` response of ``url``."""
    return Page(
        doc_id=doc_id,
        url=url,
        html=html,
        provenance=Provenance(warc_file=warc_file, record_id=f"<urn:uuid:{doc_id}>", offset=0),
        http_status=200,
        content_type="text/html",
        charset="utf-8",
        charset_source="http",
        payload_bytes=len(html.encode()),
    )
