"""URL blocklists; node cleanup counted per reason in signals."""

from pathlib import Path

import pytest

from docfactory import PROSE, make_doc
from mmcurate.filters import nodes, urls
from mmcurate.pipeline.config import HeuristicsConfig
from mmcurate.schemas import Document, ImageNode, Provenance, TextNode
from mmcurate.stages.heuristics import node_cleanup

DATA = Path(urls.__file__).resolve().parent / "data"


def test_example_blocklists_ship_and_parse():
    domains = urls.parse_domains(urls.read_entries((DATA / "blocklist-domains.example.txt").read_text().splitlines()))
    assert domains == {"spam.example", "casino.example.net"}
    subs = urls.read_entries((DATA / "blocklist-url-substrings.example.txt").read_text().splitlines())
    assert subs == ["/wp-login.php", "?replytocom="]


def test_parent_domain_blocks_subdomains_but_not_lookalikes():
    domains = urls.parse_domains(["spam.example"])
    assert not urls.blocklisted_domain(make_doc("a", url="https://a.b.spam.example/x"), domains=domains).keep
    assert urls.blocklisted_domain(make_doc("b", url="https://notspam.example/x"), domains=domains).keep


def _doc(*nodes_):
    return Document(doc_id="d", url="https://example.org/d", provenance=Provenance("t.warc.gz"), nodes=tuple(nodes_))


def test_cleanup_removes_each_kind_and_counts_it():
    cleanup = node_cleanup(HeuristicsConfig())
    doc = _doc(
        TextNode("Home > Travel > Harbours", "p"),
        TextNode(PROSE),
        TextNode("We use cookies to give you the best experience. Accept cookies?"),
        ImageNode("https://example.org/photo.jpg", declared_width=800, declared_height=600),
        ImageNode("https://example.org/thumb.jpg", declared_width=40, declared_height=40),
        ImageNode("https://cdn.example.org/assets/site-logo.svg"),
        ImageNode("https://pixel.tracker.example/p.gif"),
        TextNode("12345 67890 +++ ### 2024-05-01 // 99.99 %%% $$$"),
        TextNode("buy now buy now buy now buy now buy now buy now buy now buy now"),
        TextNode("© 2024 Example Media. All rights reserved."),
        ImageNode("https://example.org/photo.jpg"),
    )
    out = cleanup(doc)
    assert [n.text if isinstance(n, TextNode) else n.src for n in out.nodes] == [PROSE, "https://example.org/photo.jpg"]
    removed = {r: out.signals[nodes.removed_signal(r)] for r in nodes.REMOVAL_REASONS}
    assert removed == {
        nodes.BOILERPLATE: 3,
        nodes.SPECIAL_CHARACTERS: 1,
        nodes.CHARACTER_REPETITION: 1,
        nodes.WORD_REPETITION: 0,
        nodes.TINY_IMAGE: 1,
        nodes.IMAGE_URL: 2,
        nodes.REPEATED_IMAGE: 1,
    }
    assert (out.signals[nodes.TEXT_BEFORE], out.signals[nodes.IMAGES_BEFORE]) == (6, 5)
    assert nodes.nothing_left(out, min_images=1).keep
    assert len(doc.nodes) == 11  # the input is not changed


def test_word_repetition_node_and_clean_nodes_untouched():
    cleanup = node_cleanup(HeuristicsConfig())
    rep = "the quay the boats the market the quay the boats the market the quay the boats the market today"
    out = cleanup(_doc(TextNode(PROSE), TextNode(rep)))
    assert out.signals[nodes.removed_signal(nodes.WORD_REPETITION)] + out.signals[nodes.removed_signal(nodes.CHARACTER_REPETITION)] == 1
    clean = make_doc("c", PROSE, images=2)
    assert cleanup(clean).nodes == clean.nodes


@pytest.mark.parametrize(
    "text",
    ["Chocolate chip cookies", "Copyright law changed in 1998 after a long debate.", "He/she/they went home."],
)
def test_content_that_only_looks_like_boilerplate_stays(text):
    assert not nodes.is_boilerplate(text, max_words=30)


def test_long_paragraph_mentioning_cookies_is_not_boilerplate():
    text = PROSE + " This site uses cookies, the bakery says, and sells them by the kilo."
    assert not nodes.is_boilerplate(text, max_words=30)


# -- node cleanup keeps clean prose (issue: repeated term, figures and dates) ----------

CAFFEINE = (
    "Caffeine, or 1,3,7-trimethylxanthine, is a stimulant of the central nervous system found in the seeds, "
    "nuts and leaves of several plants native to Africa, East Asia and South America. Chemists first isolated "
    "1,3,7-trimethylxanthine from coffee beans in 1819."
)
CENSUS = (
    "The population was 12,345 at the 2010 census, up from 11,020 in 2000 and 9,874 in 1990. The town covers "
    "23.4 km2 (9.0 sq mi), of which 1.2 km2 (0.5 sq mi) is water; its elevation is 312 m (1,024 ft) above sea level."
)


def test_node_cleanup_keeps_a_paragraph_that_names_one_term_twice_and_one_full_of_figures():
    from mmcurate.filters.obelics import character_repetition_ratio, special_character_ratio
    from mmcurate.pipeline.config import HeuristicsConfig
    from mmcurate.stages.heuristics import node_cleanup

    # OBELICS's own measures would cut both at its node cutoffs (0.1 and 0.3)
    assert character_repetition_ratio(CAFFEINE, 10) > 0.1
    assert special_character_ratio(CENSUS) > 0.3
    cleanup = node_cleanup(HeuristicsConfig())
    assert cleanup.text_reason(CAFFEINE) is None and cleanup.text_reason(CENSUS) is None
    exact = node_cleanup(HeuristicsConfig(nodes={"special_character_measure": "obelics", "repetition_counts": "obelics",
                                                 "max_special_character_ratio": 0.3}))
    assert exact.text_reason(CAFFEINE) == nodes.CHARACTER_REPETITION
    assert exact.text_reason(CENSUS) == nodes.SPECIAL_CHARACTERS


@pytest.mark.parametrize(
    "text, reason",
    [
        ("=== *** --- === *** --- ~~~ +++ ### @@@", nodes.SPECIAL_CHARACTERS),
        ('{"id": 12, "name": "x", "tags": [1, 2, 3], "ok": true}', nodes.SPECIAL_CHARACTERS),
        ("★★★★☆ (4.5) ♥♥♥ !!! $$$ ✓✓✓ → → →", nodes.SPECIAL_CHARACTERS),
        ("Buy the best cheap shoes online now. " * 4, nodes.CHARACTER_REPETITION),
    ],
)
def test_node_cleanup_still_removes_degenerate_nodes(text, reason):
    from mmcurate.pipeline.config import HeuristicsConfig
    from mmcurate.stages.heuristics import node_cleanup

    assert node_cleanup(HeuristicsConfig()).text_reason(text) == reason
