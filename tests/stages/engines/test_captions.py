"""Image captions in the markup real sites use (stages/engines/extraction/captions.py):
each page has the structure of one kind, and the test asserts the exact caption of
each image and that the caption's text is not also a text node."""

import pytest

from mmcurate.filters.captions import SOURCE_FIGCAPTION, caption_candidates
from mmcurate.pipeline.config import ExtractConfig
from mmcurate.schemas import Document, ImageNode, Provenance, TextNode
from mmcurate.stages.engines.extraction.trafilatura_adapter import extract_trafilatura
from pagebuild import ARTICLE_CLOSING, ARTICLE_OPENING, article_page

PAGE = "https://en.example.org/wiki/Harbour"
UPLOAD = "https://upload.example.org/commons/thumb"


def _extract(body: str):
    extraction = extract_trafilatura(article_page(body), PAGE, ExtractConfig())
    images = [n for n in extraction.nodes if isinstance(n, ImageNode)]
    texts = [n.text for n in extraction.nodes if isinstance(n, TextNode)]
    return images, texts


CASES = {
    "figcaption": (
        '<figure><img src="/img/quay.jpg" alt="The quay"><figcaption>The quay at dawn, 1905.</figcaption></figure>',
        ["The quay at dawn, 1905."],
    ),
    "mediawiki_figure": (
        # MediaWiki 1.40+ (Parsoid markup): figure[typeof~="mw:File"] with its figcaption.
        '<figure class="mw-default-size" typeof="mw:File/Thumb"><a href="/wiki/File:Quay.jpg" class="mw-file-description">'
        f'<img src="{UPLOAD}/a/ab/Quay.jpg/220px-Quay.jpg" class="mw-file-element" width="220" height="147" '
        f'srcset="{UPLOAD}/a/ab/Quay.jpg/330px-Quay.jpg 1.5x, {UPLOAD}/a/ab/Quay.jpg/440px-Quay.jpg 2x"></a>'
        "<figcaption>Vacant wall in the Salon Carré, Louvre, after the theft</figcaption></figure>",
        ["Vacant wall in the Salon Carré, Louvre, after the theft"],
    ),
    "mediawiki_thumb": (
        # The older thumbnail markup: div.thumb > div.thumbinner > a > img, div.thumbcaption
        # with its (empty) magnify link.
        '<div class="thumb tright"><div class="thumbinner" style="width:222px;">'
        f'<a href="/wiki/File:Salon.jpg" class="image"><img alt="" src="{UPLOAD}/b/bc/Salon.jpg/220px-Salon.jpg" '
        'width="220" height="165" class="thumbimage"></a><div class="thumbcaption"><div class="magnify">'
        '<a href="/wiki/File:Salon.jpg" class="internal" title="Enlarge"></a></div>'
        "Vacant wall in the Salon Carré, Louvre</div></div></div>",
        ["Vacant wall in the Salon Carré, Louvre"],
    ),
    "mediawiki_gallery": (
        '<ul class="gallery mw-gallery-traditional">'
        + "".join(
            f'<li class="gallerybox" style="width: 155px"><div class="thumb" style="width: 150px; height: 150px;">'
            f'<span typeof="mw:File"><a href="/wiki/File:G{k}.jpg" class="mw-file-description">'
            f'<img src="{UPLOAD}/c/cd/G{k}.jpg/120px-G{k}.jpg" width="120" height="90" class="mw-file-element"></a></span></div>'
            f'<div class="gallerytext">Study number {k} for the portrait</div></li>'
            for k in range(3)
        )
        + "</ul>",
        [f"Study number {k} for the portrait" for k in range(3)],
    ),
    "wordpress_classic": (
        # WordPress's [caption] shortcode since 4.x: aria-describedby names the caption.
        '<div id="attachment_42" style="width: 810px" class="wp-caption aligncenter">'
        '<img aria-describedby="caption-attachment-42" class="size-large wp-image-42" '
        'src="https://blog.example.org/wp-content/uploads/2023/06/quay-800x533.jpg" width="800" height="533" alt="">'
        '<p id="caption-attachment-42" class="wp-caption-text">Fishing boats drawn up on the quay</p></div>',
        ["Fishing boats drawn up on the quay"],
    ),
    "wordpress_old_dl": (
        # WordPress before 3.x wrote the caption as a definition list.
        '<dl class="wp-caption alignleft" style="width: 310px;"><dt class="wp-caption-dt">'
        '<a href="/wp-content/uploads/2009/05/nets.jpg"><img src="/wp-content/uploads/2009/05/nets-300x200.jpg" width="300" height="200" alt="nets"></a>'
        '</dt><dd class="wp-caption-dd">Nets drying on the harbour wall</dd></dl>',
        ["Nets drying on the harbour wall"],
    ),
    "wordpress_block": (
        '<figure class="wp-block-image size-large"><img decoding="async" width="1024" height="683" '
        'src="/wp-content/uploads/2023/06/crane-1024x683.jpg" alt="" class="wp-image-7">'
        '<figcaption class="wp-element-caption">The old crane, restored in 2019</figcaption></figure>',
        ["The old crane, restored in 2019"],
    ),
    "blogger": (
        '<table align="center" cellpadding="0" cellspacing="0" class="tr-caption-container" style="margin-left: auto;">'
        '<tbody><tr><td style="text-align: center;"><a href="https://blogger.example.com/img/b/R29v/s1600/ferry.jpg">'
        '<img border="0" height="240" src="https://blogger.example.com/img/b/R29v/s320/ferry.jpg" width="320"></a></td></tr>'
        '<tr><td class="tr-caption" style="text-align: center;">The ferry leaving at noon</td></tr></tbody></table>',
        ["The ferry leaving at noon"],
    ),
    "news_image_caption": (
        # A news CMS: the picture in a media block, the caption in a div beside it.
        '<div class="media media--image"><picture><source srcset="/img/vote-1600.webp 1600w" type="image/webp">'
        '<img src="/img/vote-800.jpg" alt="Voters" width="800" height="450"></picture>'
        '<div class="image-caption">Voters queue outside the town hall on Thursday</div></div>',
        ["Voters queue outside the town hall on Thursday"],
    ),
    "span_media_caption_with_credit": (
        # A caption and, beside it, a photo credit: the credit is no caption.
        '<div class="article-image"><img src="/img/storm.jpg" alt="" width="1200" height="800">'
        '<span class="media-caption">Waves breaking over the sea wall</span>'
        '<span class="media-credit">Photo: Harbour Agency</span></div>',
        ["Waves breaking over the sea wall"],
    ),
    "figcaption_with_credit_inside": (
        '<figure><img src="/img/pier.jpg" alt=""><figcaption>The pier at low tide. '
        '<span class="credit">Photograph: J. Smith/Agency</span></figcaption></figure>',
        ["The pier at low tide."],
    ),
    "aria_describedby": (
        '<div class="photo"><img src="/img/lock.jpg" alt="Lock gates" aria-describedby="lock-desc"></div>'
        '<p id="lock-desc" class="photo-note">The lock gates were replaced in 1962</p>',
        ["The lock gates were replaced in 1962"],
    ),
    "aria_labelledby_on_figure": (
        '<figure role="group" aria-labelledby="fig-3-label"><img src="/img/map.png" alt="">'
        '<div id="fig-3-label">Figure 3: the harbour in 1850</div></figure>',
        ["Figure 3: the harbour in 1850"],
    ),
    "mdbook_paragraph_after": (
        # mdBook (the Rust book): the picture's paragraph, then the caption's, among
        # the chapter's other paragraphs and pictures.
        '<p><img alt="Two tables" src="img/trpl04-01.svg" class="center" style="width: 50%;"></p>'
        '<p><span class="caption">Figure 4-1: The representation in memory of a <code>String</code></span></p>'
        "<p>The length is how much memory, in bytes, the contents of the string are currently using.</p>"
        '<p><img alt="Three tables" src="img/trpl04-02.svg" class="center" style="width: 50%;"></p>'
        '<p><span class="caption">Figure 4-2: The representation in memory of the variable <code>s2</code></span></p>',
        ["Figure 4-1: The representation in memory of a String", "Figure 4-2: The representation in memory of the variable s2"],
    ),
    "inline_after_image": (
        # Older blogs and news sites: the picture's own paragraph, an italic line under it.
        '<p><a href="/img/big/boats.jpg"><img src="/img/boats.jpg" width="500" height="333" alt=""></a><br>'
        "<em>Boats on the slipway before the regatta</em></p>",
        ["Boats on the slipway before the regatta"],
    ),
    "credit_alone": (
        '<div class="image"><img src="/img/gull.jpg" alt="" width="800" height="600">'
        '<span class="image-credit">Photo: Harbour Agency</span></div>',
        [""],
    ),
}


@pytest.mark.parametrize("kind", sorted(CASES))
def test_caption_found_and_not_kept_as_text(kind):
    body, expected = CASES[kind]
    images, texts = _extract(body)
    assert [i.caption for i in images] == expected
    for caption in expected:
        if caption:
            assert not any(caption in t for t in texts), texts
    # The article's own text is all there, in order, around the pictures.
    assert texts[0] == ARTICLE_OPENING and texts[-1] == ARTICLE_CLOSING


def test_caption_beside_two_images_belongs_to_neither():
    body = (
        '<div class="pair"><img src="/img/before.jpg" alt="" width="400" height="300">'
        '<img src="/img/after.jpg" alt="" width="400" height="300"><p class="caption">Before and after the repairs</p></div>'
    )
    images, texts = _extract(body)
    assert [i.caption for i in images] == ["", ""]


def test_a_figure_caption_is_shared_by_the_figure_images():
    body = (
        '<figure class="wp-block-gallery"><figure class="wp-block-image"><img src="/img/a.jpg" alt=""></figure>'
        '<figure class="wp-block-image"><img src="/img/b.jpg" alt=""><figcaption>Only the second</figcaption></figure>'
        "<figcaption class=\"blocks-gallery-caption\">The whole gallery</figcaption></figure>"
    )
    images, texts = _extract(body)
    assert [i.caption for i in images] == ["The whole gallery", "Only the second"]
    assert not any("gallery" in t or "second" in t for t in texts)


def test_a_paragraph_in_a_span_beside_an_image_stays_text():
    """Pasted rich text: the paragraph's text in a span, a floated image before it."""
    sentence = "The harbour board met on Tuesday and agreed to repair the north pier before the winter."
    body = f'<p><img class="alignleft" src="/img/pier.jpg" width="300" height="200" alt=""><span style="font-weight: 400;">{sentence}</span></p>'
    images, texts = _extract(body)
    assert [i.caption for i in images] == [""]
    assert sentence in texts


def test_a_video_caption_is_left_alone():
    body = '<figure><video src="/v/launch.mp4"></video><figcaption>The launch, filmed from the pier</figcaption></figure>'
    images, texts = _extract(body)
    assert images == []


def test_recycled_pairs_take_the_found_caption():
    body, expected = CASES["mediawiki_thumb"]
    extraction = extract_trafilatura(article_page(body), PAGE, ExtractConfig())
    doc = Document(doc_id="d", url=PAGE, provenance=Provenance(warc_file="t"), nodes=extraction.nodes)
    position = next(i for i, n in enumerate(doc.nodes) if isinstance(n, ImageNode))
    assert (SOURCE_FIGCAPTION, expected[0]) in caption_candidates(doc, position)
