"""Boilerplate rules on structure (stages/engines/extraction/boilerplate.py): each rule
on the markup of the sites that write it, the exact count it reports, and the
near misses it must leave alone."""

import pytest

from mmcurate.pipeline.config import ExtractConfig
from mmcurate.schemas import TextNode
from mmcurate.stages.engines.extraction import boilerplate
from mmcurate.stages.engines.extraction.html_tree import parse_html
from mmcurate.stages.engines.extraction.trafilatura_adapter import extract_trafilatura
from pagebuild import ARTICLE_CLOSING, ARTICLE_OPENING, article_page

PAGE = "https://www.example.org/2024/05/harbour/"


def _texts(html: str) -> list[str]:
    return [n.text for n in extract_trafilatura(html, PAGE, ExtractConfig()).nodes if isinstance(n, TextNode)]


def _counts(html: str) -> dict[str, int]:
    return {rule: n for rule, n in boilerplate.strip_boilerplate(parse_html(html)).items() if n}


# (rule, markup between the article's two paragraphs, elements removed)
REMOVED = [
    (
        boilerplate.TOC,
        # MediaWiki (Vector 2010): div#toc with its "Contents" title.
        '<div id="toc" class="toc" role="navigation" aria-labelledby="mw-toc-heading"><input type="checkbox" role="button" id="toctogglecheckbox">'
        '<div class="toctitle" lang="en" dir="ltr"><h2 id="mw-toc-heading">Contents</h2></div><ul>'
        '<li class="toclevel-1 tocsection-1"><a href="#History"><span class="tocnumber">1</span> <span class="toctext">History</span></a></li>'
        '<li class="toclevel-1 tocsection-2"><a href="#Trade"><span class="tocnumber">2</span> <span class="toctext">Trade</span></a></li>'
        "</ul></div>",
        1,
    ),
    (
        boilerplate.TOC,
        # Easy Table of Contents (WordPress plugin).
        '<div id="ez-toc-container" class="ez-toc-v2_0_61 counter-hierarchy ez-toc-counter ez-toc-grey">'
        '<div class="ez-toc-title-container"><p class="ez-toc-title">Table of Contents</p></div>'
        '<nav><ul class="ez-toc-list ez-toc-list-level-1"><li class="ez-toc-page-1"><a class="ez-toc-link" href="#Why">Why the quay matters</a></li>'
        '<li class="ez-toc-page-1"><a class="ez-toc-link" href="#How">How it was built</a></li></ul></nav></div>',
        1,
    ),
    (boilerplate.TOC, '<nav role="doc-toc"><h2>Contents</h2><ol><li><a href="#a">Start</a></li><li><a href="#b">End</a></li></ol></nav>', 1),
    (
        boilerplate.REFERENCES,
        # Markdown footnotes (Pandoc, kramdown): a section of notes at the end.
        '<section id="footnotes" class="footnotes footnotes-end-of-document" role="doc-endnotes"><hr><ol>'
        '<li id="fn1"><p>Harbour board minutes, 1905.<a href="#fnref1" class="footnote-back" role="doc-backlink">↩︎</a></p></li></ol></section>',
        1,
    ),
    (
        boilerplate.FOOTNOTE_MARKS,
        '<p>The quay was finished in 1905.<sup id="cite_ref-1" class="reference"><a href="#cite_note-1">[1]</a></sup> '
        'Trade doubled<a href="#fn1" class="footnote-ref" id="fnref1" role="doc-noteref"><sup>2</sup></a> within a decade.</p>',
        2,
    ),
    (
        boilerplate.NAVBOX,
        '<div role="navigation" class="navbox" aria-labelledby="Harbours"><table class="nowraplinks navbox-inner"><tbody><tr>'
        '<th class="navbox-title">Harbours of the coast</th><td class="navbox-list"><a href="/wiki/A">Aberport</a> · <a href="/wiki/B">Brimhaven</a></td>'
        "</tr></tbody></table></div>"
        '<div id="catlinks" class="catlinks" data-mw="interface"><div id="mw-normal-catlinks" class="mw-normal-catlinks">'
        '<a href="/wiki/Help:Category">Categories</a>: <ul><li><a href="/wiki/Category:Ports">Ports</a></li></ul></div></div>',
        2,
    ),
    (
        boilerplate.EDIT_LINKS,
        '<div class="mw-heading mw-heading2"><h2 id="Trade">Trade</h2><span class="mw-editsection"><span class="mw-editsection-bracket">[</span>'
        '<a href="/w/index.php?title=Harbour&amp;action=edit&amp;section=2" title="Edit section: Trade"><span>edit</span></a>'
        '<span class="mw-editsection-bracket">]</span></span></div><p>Fish, coal and timber passed over the quay.</p>'
        '<p>Posted in News. <span class="edit-link"><a class="post-edit-link" href="https://www.example.org/wp-admin/post.php?post=7&amp;action=edit">Edit</a></span></p>',
        2,
    ),
    (boilerplate.JUMP_LINKS, '<a class="skip-link screen-reader-text" href="#content">Skip to content</a>', 1),
    (
        boilerplate.JUMP_LINKS,
        '<div id="jump-to-nav" class="mw-jump">Jump to: <a href="#mw-head">navigation</a>, <a href="#p-search">search</a></div>',
        1,
    ),
    (
        boilerplate.COOKIE_BAR,
        # CookieYes / GDPR Cookie Consent (WordPress).
        '<div id="cookie-law-info-bar" data-nosnippet="true"><span>This website uses cookies to improve your experience. '
        'We\'ll assume you\'re ok with this.<a role="button" id="cookie_action_close_header" class="cli_action_button">Accept</a>'
        '<a href="/privacy/" id="CONSTANT_OPEN_URL" class="cli-plugin-main-link">Read More</a></span></div>',
        1,
    ),
    (
        boilerplate.COOKIE_BAR,
        '<div id="onetrust-consent-sdk"><div id="onetrust-banner-sdk" class="otFlat" role="region" aria-label="Cookie banner">'
        '<div id="onetrust-policy-text">We and our partners store and access information on your device.</div>'
        '<button id="onetrust-accept-btn-handler">Accept All Cookies</button></div></div>',
        1,
    ),
    (
        boilerplate.SHARE_BAR,
        # Jetpack's sharing buttons.
        '<div class="sharedaddy sd-sharing-enabled"><div class="robots-nocontent sd-block sd-social sd-social-icon-text sd-sharing">'
        '<h3 class="sd-title">Share this:</h3><div class="sd-content"><ul><li class="share-twitter"><a class="share-twitter sd-button" href="?share=twitter">'
        '<span>Twitter</span></a></li><li class="share-facebook"><a class="share-facebook sd-button" href="?share=facebook"><span>Facebook</span></a></li>'
        "</ul></div></div></div>",
        1,
    ),
    (
        boilerplate.SHARE_BAR,
        '<div class="a2a_kit a2a_kit_size_32 addtoany_list"><a class="a2a_button_facebook" href="/#facebook"></a>'
        '<a class="a2a_button_x" href="/#x"></a><a class="a2a_dd addtoany_share_save" href="https://www.addtoany.com/share"></a></div>',
        1,
    ),
]


@pytest.mark.parametrize("rule, markup, n", REMOVED, ids=[f"{r}-{i}" for i, (r, _, _) in enumerate(REMOVED)])
def test_rule_removes_its_markup(rule, markup, n):
    html = article_page(markup)
    assert _counts(html) == {rule: n}
    texts = _texts(html)
    assert texts[0] == ARTICLE_OPENING and texts[-1] == ARTICLE_CLOSING


def test_removed_text_is_gone_and_the_text_around_stays():
    html = article_page(REMOVED[4][1])  # footnote marks inside a paragraph
    assert "The quay was finished in 1905. Trade doubled within a decade." in _texts(html)
    html = article_page(REMOVED[6][1])  # edit links
    texts = _texts(html)
    assert "Trade" in texts and "Fish, coal and timber passed over the quay." in texts
    assert not any("edit" in t.lower() for t in texts)


KEPT = [
    # A class on the article's own container says it has a table of contents.
    '<div class="entry-content has-toc post-sharing-enabled"><p>The harbour master kept a log of every ship that '
    "entered the basin, with its cargo, its draught and the name of its master.</p></div>",
    # Social history, a cookie recipe: words, not furniture.
    '<section class="social-history"><h2>Social history</h2><p>The quay was where the town met: fish sellers, net '
    "menders and ferrymen worked side by side, and the harbour master settled their quarrels.</p>"
    "<p>" + " ".join(["Weddings, markets and regattas were held on the quay every summer."] * 4) + "</p></section>",
    '<div class="cookie-recipe"><h2>Harbour biscuits</h2><p>Mix the flour, butter and sugar, then bake until golden.</p></div>',
    # A long "shared" section is not a share bar.
    '<div class="shared-history">' + "<p>The quay was shared by the fishing fleet and the coal trade for a century.</p>" * 8 + "</div>",
    # Sphinx writes class="reference" on every cross-reference link: words, not marks.
    '<p>See <a class="reference internal" href="#installing">Installing the survey tools</a> and '
    '<a class="reference external" href="https://docs.example.org/">the reference manual</a> for details.</p>'
    '<div class="reference"><p>A reference card: the tide tables for the quay, month by month.</p></div>',
    # Ids made from a heading's text (mdBook, Markdown renderers, Sphinx sections).
    '<h2 id="shared-state-concurrency"><a class="header" href="#shared-state-concurrency">Shared-State Concurrency</a></h2>'
    "<p>Message passing is a fine way of handling concurrency, but it is not the only one.</p>",
    '<section id="cookie-policy"><h2>Cookie policy</h2><p>The harbour office sells biscuits on Saturdays.</p></section>',
    # A table of contents class on text that is not mostly links.
    '<div class="toc-intro"><p>This guide has three parts: the history of the quay, its trade, and its restoration.</p></div>',
]


@pytest.mark.parametrize("markup", KEPT)
def test_near_misses_are_left_alone(markup):
    assert _counts(article_page(markup)) == {}


def test_nothing_holding_the_headline_or_the_article_is_removed():
    html = (
        '<html><body><div class="share-wrapper" id="toc"><article><h1>The harbour</h1>'
        f"<p>{ARTICLE_OPENING}</p><p>{ARTICLE_CLOSING}</p></article></div></body></html>"
    )
    assert _counts(html) == {}
    assert _texts(html)[-2:] == [ARTICLE_OPENING, ARTICLE_CLOSING]
