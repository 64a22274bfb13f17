"""Flagged words: per-language lists, whole words in spaced scripts, substrings in
Chinese, Japanese and Thai, ambiguous (medical, anatomical) entries, the document
rule and the node rule."""

import dataclasses
from pathlib import Path

import pytest

from docfactory import PROSE, make_doc
from mmcurate.filters import flagged_words as fw
from mmcurate.filters import reasons
from mmcurate.filters.flagged_words import FlaggedNodeCleanup, document_ratio, find, load_flagged_words
from mmcurate.filters.text import count_words

TEXT_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "text"
WORDS = load_flagged_words()

# A clean health article: anatomy and sexual health named plainly and often, as a
# patient leaflet does (about 300 words, 15 of them on the English list).
HEALTH = [
    "Cervical screening checks the health of the cervix, the opening to the womb from the vagina. "
    "It is offered to women and people with a cervix aged 25 to 64, and it is not a test for cancer: "
    "it looks for changes that could become cancer if they are not treated.",
    "During the test a nurse gently opens the vagina with a speculum and takes a small sample of cells. "
    "Some people find the test uncomfortable. Tell the nurse if you have had pain during sexual "
    "intercourse, bleeding after sex, or unusual discharge from the vagina, because these can be signs "
    "of an infection that is easy to treat.",
    "Human papillomavirus is passed on through sexual contact, including vaginal and anal sex, and most "
    "sexually active people will have it at some point. Condoms lower the risk but do not remove it, as "
    "the virus lives on the skin around the genitals, the anus and the vulva.",
    "Men can get HPV too. It can cause warts on the penis or around the anus, and, rarely, cancers of the "
    "penis, the anus or the throat. There is no screening test for men, so the vaccine offered at school "
    "matters for everyone.",
    "If your result shows changes, you will be invited for a colposcopy, a closer look at the cervix. "
    "Most changes go away on their own, and those that do not are removed in a short appointment at the "
    "clinic, usually without an overnight stay.",
]
SLANG = "hot milf porn, fuck her pussy, cum on her tits, free xxx blowjob videos"


def en_doc(doc_id, paragraphs, language="en", images=1):
    return dataclasses.replace(make_doc(doc_id, paragraphs, images=images), language=language, language_score=0.99)


def decide(doc, max_ratio=0.01):
    return document_ratio(doc, words=WORDS, max_ratio=max_ratio, max_ratio_by_language={})


@pytest.mark.parametrize("lang", ["en", "de", "zh", "ja", "ru", "ar"])
def test_clean_pages_in_six_languages_have_no_flagged_words(lang):
    text = (TEXT_DIR / f"{lang}.txt").read_text(encoding="utf-8")
    verdict = decide(en_doc(f"clean-{lang}", [p for p in text.split("\n\n") if p.strip()], language=lang))
    assert verdict.keep
    assert verdict.signals[fw.RATIO] == 0.0
    assert verdict.signals[fw.CHECKED] == 1.0


def test_clean_health_article_with_anatomical_words_is_kept():
    verdict = decide(en_doc("health", HEALTH))
    assert verdict.keep
    # Every match is ambiguous (vagina, sex, anus, penis, ...): none counts on its own.
    assert verdict.signals[fw.AMBIGUOUS] >= 15
    assert verdict.signals[fw.MATCHES] == 0.0
    assert verdict.signals[fw.RATIO] == 0.0


def test_health_words_count_beside_pornographic_slang():
    verdict = decide(en_doc("spam", HEALTH[:2] + [SLANG]))
    assert not verdict.keep
    assert verdict.reason == reasons.SAFETY_FLAGGED_WORDS
    assert verdict.threshold == 0.01
    assert verdict.value > 0.05
    # Ambiguous entries count once a strong one is present.
    assert verdict.signals[fw.MATCHES] > 9
    assert verdict.detail.startswith("language=en ")
    assert "porn" in verdict.detail


def test_whole_words_only_in_spaced_scripts():
    text = "The analyst classified the document in Essex, assessed the title and passed the cocktail menu to Scunthorpe."
    assert find(text, WORDS.for_language("en")).entries == {}
    assert find("What the fuck.", WORDS.for_language("en")).entries == {"fuck": 1}
    # Phrases match across line breaks and repeated spaces, case-insensitively.
    assert find("a BLOW\n  job", WORDS.for_language("en")).entries == {"blow job": 1}


def test_substrings_in_chinese_japanese_and_thai():
    zh = find("这个网站有很多做爱视频和口交图片", WORDS.for_language("zh"))
    assert zh.entries == {"做爱": 1, "口交": 1}
    # Words: 2 flagged words of 9 (这个 网站 有 很多 做爱 视频 和 口交 图片).
    assert (zh.counted_units, zh.units) == (2, 9)
    ja = find("無料のポルノ動画とフェラチオ画像", WORDS.for_language("ja"))
    assert set(ja.entries) == {"ポルノ", "フェラチオ"}
    th = find("เว็บนี้มีคลิปเย็ดฟรี", WORDS.for_language("th"))
    assert th.entries == {"เย็ด": 1}


def test_chinese_health_text_with_ambiguous_characters_is_kept():
    text = (
        "乳腺癌是女性最常见的癌症之一。定期检查乳房，了解自己的身体，是早发现的关键。"
        "医生会询问月经史、生育史和家族史，并检查阴道出血等症状。性能良好的超声设备可以发现很小的肿块。"
    )
    verdict = decide(en_doc("zh-health", [text], language="zh"))
    assert verdict.keep
    assert verdict.signals[fw.AMBIGUOUS] >= 3
    assert verdict.signals[fw.RATIO] == 0.0


def test_the_document_language_picks_the_list():
    english_slang_in_german = en_doc("de", ["Das ist ein fuck Text über Häfen und Boote an der Küste."], language="de")
    assert decide(english_slang_in_german).signals[fw.MATCHES] == 0.0
    german = en_doc("de2", ["Das ist ein Arschloch und eine Schlampe."], language="de")
    assert decide(german).reason == reasons.SAFETY_FLAGGED_WORDS
    assert decide(dataclasses.replace(german, language="en")).keep
    # Tagalog is fil in the lists, tl in lid.176.
    assert WORDS.for_language("tl").language == "fil"


def test_language_without_a_list_is_not_checked_unless_a_fallback_is_set():
    doc = en_doc("sw", ["Hii ni porn na fuck."], language="sw")
    verdict = decide(doc)
    assert verdict.keep and verdict.signals == {fw.CHECKED: 0.0}
    fallback = load_flagged_words(languages=["en"], fallback_language="en")
    assert document_ratio(doc, words=fallback, max_ratio=0.01, max_ratio_by_language={}).reason == reasons.SAFETY_FLAGGED_WORDS


def test_per_language_threshold():
    doc = en_doc("fr", [PROSE.replace("harbour", "putain harbour")], language="fr")
    ratio = find(doc.text, WORDS.for_language("fr")).ratio
    assert 0.008 < ratio <= 0.02
    assert document_ratio(doc, words=WORDS, max_ratio=0.05, max_ratio_by_language={"fr": 0.008}).reason == (
        reasons.SAFETY_FLAGGED_WORDS
    )
    assert document_ratio(doc, words=WORDS, max_ratio=0.05, max_ratio_by_language={}).keep


def test_node_rule_removes_the_flagged_paragraph_of_a_page_that_passes():
    clean = [PROSE, PROSE.replace("harbour", "port"), PROSE.replace("valley", "river")]
    doc = en_doc("comment", clean + ["Great post! " + SLANG])
    # The page as a whole is under the document threshold ...
    assert find(doc.text, WORDS.for_language("en")).ratio < 0.1
    cleaned = FlaggedNodeCleanup(WORDS, max_node_ratio=0.01)(doc)
    # ... and the node rule drops the spam paragraph only.
    assert [n.text for n in cleaned.text_nodes] == clean
    assert cleaned.signals[fw.NODES_REMOVED] == 1.0
    assert len(cleaned.image_nodes) == 1


def test_the_node_rule_reads_the_document_scan_from_the_shared_view(monkeypatch):
    from mmcurate.filters.text import TextView

    clean = [PROSE, PROSE.replace("harbour", "port")]
    pages = [
        en_doc("clean", clean),
        en_doc("spam", clean + ["Great post! " + SLANG]),
        # "baby batter" only across two nodes: the whole text holds a match, no node does
        en_doc("straddle", [PROSE + " Baby", "batter " + PROSE]),
        en_doc("ja", ["\uff21\uff22\uff23 \u65e5\u672c\u8a9e\u306e\u6587\u7ae0\u3002", PROSE], language="ja"),
    ]
    rule = FlaggedNodeCleanup(WORDS, max_node_ratio=0.01)
    scanned = []
    monkeypatch.setattr(fw, "find", lambda text, *a, **k: scanned.append(text) or find(text, *a, **k))
    for doc in pages:
        alone = rule(doc)
        view = TextView(doc.text)
        assert document_ratio(doc, words=WORDS, max_ratio=0.01, max_ratio_by_language={}, view=view) == decide(doc)
        before = len(scanned)
        # the same nodes are removed, with the same signal, as without the view ...
        assert rule(doc, view=view) == alone
        # ... and the nodes are scanned only when the whole text held a match
        whole = find(doc.text, WORDS.for_language(doc.language))
        assert len(scanned) - before == (len([n for n in doc.text_nodes if n.text.strip()]) if whole.entries else 0)
    assert [rule(d).signals[fw.NODES_REMOVED] for d in pages] == [0.0, 1.0, 0.0, 0.0]
    assert find(pages[2].text, WORDS.for_language("en")).entries == {"baby batter": 1}


def test_shipped_lists_have_licence_provenance_and_consistent_ambiguous_entries():
    root = fw.shipped_lists_dir()
    assert "Attribution 4.0 International" in (root / "LICENSE").read_text(encoding="utf-8")
    assert "5faf2ba4" in (root / "README.md").read_text(encoding="utf-8")
    for path in root.glob("*.ambiguous.txt"):
        code = path.name.split(".")[0]
        listed = WORDS.lists[code]
        entries = [fw.normalize(e) for e in fw.read_list(path.read_text(encoding="utf-8").splitlines())]
        missing = [e for e in entries if e not in listed.entries]
        assert not missing, f"{path.name}: not in {code}.txt: {missing}"
        assert listed.ambiguous == frozenset(entries)


def test_the_title_is_counted_with_the_text():
    doc = en_doc("titled", [PROSE] * 3)
    assert decide(doc).keep
    spam_title = dataclasses.replace(doc, title="Hot milf porn: free xxx blowjob videos")
    verdict = decide(spam_title)
    assert (verdict.keep, verdict.reason) == (False, reasons.SAFETY_FLAGGED_WORDS)
    assert verdict.signals[fw.TITLE_MATCHES] == 4.0 and verdict.signals[fw.MATCHES] == 4.0
    # 4 words of the text's and the title's together
    assert verdict.value == pytest.approx(4 / (count_words(doc.text) + count_words(spam_title.title)))
    news_title = dataclasses.replace(doc, title="Porn site owner fined by the harbour authority")
    kept = decide(news_title)
    assert kept.keep and kept.signals[fw.TITLE_MATCHES] == 1.0
    # the title's words join the denominator when only the text matched
    text = en_doc("text", [PROSE] * 3 + ["Free porn."])
    with_title = decide(dataclasses.replace(text, title="The harbour at dawn"))
    assert decide(text).signals[fw.RATIO] == pytest.approx(1 / count_words(text.text))
    assert with_title.signals[fw.RATIO] == pytest.approx(1 / (count_words(text.text) + 4))


def test_chinese_title_words_are_counted_in_chinese():
    text = (TEXT_DIR / "zh.txt").read_text(encoding="utf-8")
    doc = en_doc("zh-title", [p for p in text.split("\n\n") if p.strip()], language="zh")
    assert decide(doc).keep
    verdict = decide(dataclasses.replace(doc, title="成人影片 日本无码 巨乳 激情性爱 情色小说 做爱视频 口交 肛交"))
    assert verdict.signals[fw.TITLE_MATCHES] >= 5
    assert verdict.signals[fw.MATCHES] == verdict.signals[fw.TITLE_MATCHES]
