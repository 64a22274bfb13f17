"""``normalize_texts`` tokenises by array operations; its tokens are exactly those of
the regular expression that defines them, on real text of every script the fixtures
hold, on random strings of the characters where the rules differ, and at the cap."""

import random
import re
import unicodedata
from pathlib import Path

import pytest

from mmcurate.filters.quality import MAX_TOKENS, normalize_text, normalize_texts
from mmcurate.filters.text import _UNSPACED_CHAR

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

# The definition: NFKC, case-folded, every unspaced-script character spaced out, then
# letter-and-digit runs (with ' or ’ between two of them) and every other visible
# character alone; "_" and whitespace only separate.
_UNSPACED_RUN = re.compile(_UNSPACED_CHAR.pattern + "+")
_TOKEN = re.compile(r"[^\W_]+(?:['’][^\W_]+)*|[^\w\s]")


def reference(text: str, max_tokens: int = MAX_TOKENS) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    text = _UNSPACED_RUN.sub(lambda m: " " + " ".join(m.group(0)) + " ", text)
    return " ".join(_TOKEN.findall(text)[:max_tokens])


def _fixture_texts() -> list[str]:
    paths = sorted((FIXTURES / "mt").glob("*.txt")) + sorted((FIXTURES / "text").rglob("*.txt"))
    texts = [p.read_text(encoding="utf-8") for p in paths]
    assert len(texts) >= 24
    return texts + [line for t in texts for line in t.splitlines()]


def test_real_text_of_every_script_is_tokenised_as_the_definition_says():
    texts = _fixture_texts()
    assert normalize_texts(texts) == [reference(t) for t in texts]


def test_random_strings_of_the_characters_where_the_rules_differ():
    alphabet = list("ab1_'’ -.,!?\n\t") + [
        "中", "文", "ा", "्", "é", "😀", "\u200b", "\u00a0", "ß", "ﬁ", "İ", "\ud800", "ー", "々", "ก", "ั", "\U00020000",
    ]
    rng = random.Random(0)
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30))) for _ in range(5000)]
    assert normalize_texts(texts) == [reference(t) for t in texts]
    assert normalize_texts(texts, 3) == [reference(t, 3) for t in texts]


def test_examples_and_the_cap():
    assert normalize_texts(["a'b'c ''x'' _y_ ﬁne", "", "  ", "l’été", "don't'"]) == [
        "a'b'c ' ' x ' ' y fine", "", "", "l’été", "don't '",
    ]
    long = ["word " * 5000, "x", "中" * 1500 + " tail", "a'b " * 1200]
    out = normalize_texts(long)
    assert [len(t.split()) for t in out] == [1000, 1, 1000, 1000]
    assert out == [reference(t) for t in long]
    assert normalize_texts([]) == []


@pytest.mark.parametrize("batch", [1, 7, 64])
def test_a_text_normalises_the_same_alone_or_in_any_batch(batch):
    texts = _fixture_texts()[:50]
    batched = [t for i in range(0, len(texts), batch) for t in normalize_texts(texts[i : i + batch])]
    assert batched == [normalize_text(t) for t in texts]
