"""The C4 rules (Raffel et al. 2020, "Exploring the Limits of Transfer Learning with a
Unified Text-to-Text Transformer", section 2.2 "Colossal Clean Crawled Corpus").

C4 drops a page containing "lorem ipsum" or a curly bracket ``{``, drops every line
that does not end in terminal punctuation, has fewer than 3 words, mentions
"javascript" or carries a policy/cookie phrase, and then drops a page left with
fewer than 5 sentences (``min_sentences``).

mmcurate does not edit text here (a filter never changes the document). The line
rules are measured as the share of the page's words on lines that each rule would
drop, and a page is rejected under that rule's own code when the share reaches its
threshold; the default 1.0 rejects exactly the page C4 would empty by that rule
alone. The sentence count is taken over the lines C4 would keep, as C4 does.
Terminal punctuation includes CJK, Arabic and Devanagari full stops, so a Chinese
page is not a page "without punctuation".
"""

from __future__ import annotations

from mmcurate.filters import reasons
from mmcurate.filters.text import TextView, count_sentences, count_words, view_of
from mmcurate.filters.verdict import Verdict, keep, reject
from mmcurate.schemas import Document

# The policy phrases of C4's line filter (Raffel et al. 2020, section 2.2; as in the
# TensorFlow Datasets C4 builder).
POLICY_PHRASES = ("terms of use", "privacy policy", "cookie policy", "uses cookies", "use of cookies", "use cookies")

SENTENCES = "c4.sentences"
NO_TERMINAL_PUNCTUATION_FRACTION = "c4.no_terminal_punctuation_fraction"
JAVASCRIPT_FRACTION = "c4.javascript_fraction"
POLICY_FRACTION = "c4.policy_fraction"
TOO_SHORT_LINE_FRACTION = "c4.too_short_line_fraction"


def rules(
    doc: Document,
    *,
    min_sentences: int,
    min_words_per_line: int,
    max_no_terminal_punctuation_fraction: float,
    max_javascript_fraction: float,
    max_policy_fraction: float,
    reject_lorem_ipsum: bool,
    reject_curly_bracket: bool,
    view: TextView | None = None,
) -> Verdict:
    v = view_of(doc, view)
    text = v.text
    lowered = text.casefold()
    total = no_punct = javascript = policy = too_short = 0
    sentences = 0
    # A line's casefolded text is a piece of the whole text's (casefolding maps each
    # character on its own): what the whole text lacks, no line holds.
    any_js = "javascript" in lowered
    any_policy = any(p in lowered for p in POLICY_PHRASES)
    for line, ends in zip(v.lines, v.line_ends):
        words = count_words(line)
        total += words
        unterminated = not ends
        short = words < min_words_per_line
        js = pol = False
        if any_js or any_policy:
            low = line.casefold()
            js = any_js and "javascript" in low
            pol = any_policy and any(p in low for p in POLICY_PHRASES)
        no_punct += words if unterminated else 0
        too_short += words if short else 0
        javascript += words if js else 0
        policy += words if pol else 0
        if not (unterminated or short or js or pol):
            sentences += count_sentences(line)
    total = total or 1
    signals = {
        SENTENCES: float(sentences),
        NO_TERMINAL_PUNCTUATION_FRACTION: no_punct / total,
        JAVASCRIPT_FRACTION: javascript / total,
        POLICY_FRACTION: policy / total,
        TOO_SHORT_LINE_FRACTION: too_short / total,
    }
    if reject_lorem_ipsum and "lorem ipsum" in lowered:
        return reject(reasons.C4_LOREM_IPSUM, 1, None, **signals)
    if reject_curly_bracket and "{" in text:
        return reject(reasons.C4_CURLY_BRACKET, text.count("{"), None, **signals)
    for reason, key, limit in (
        (reasons.C4_NO_TERMINAL_PUNCTUATION, NO_TERMINAL_PUNCTUATION_FRACTION, max_no_terminal_punctuation_fraction),
        (reasons.C4_JAVASCRIPT_LINES, JAVASCRIPT_FRACTION, max_javascript_fraction),
        (reasons.C4_POLICY_LINES, POLICY_FRACTION, max_policy_fraction),
    ):
        if signals[key] >= limit:
            return reject(reason, signals[key], limit, **signals)
    if sentences < min_sentences:
        return reject(reasons.C4_TOO_FEW_SENTENCES, sentences, min_sentences, **signals)
    return keep(**signals)
