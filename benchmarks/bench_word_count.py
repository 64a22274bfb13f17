"""Word counts of scripts written without spaces: accuracy against gold segmentations
and speed, for mmcurate's count (``filters.text.word_units``: ICU's dictionary word
break), one character a word (``character_units``, the count before), and the
single-language segmenters that are installed (rjieba, jieba, fugashi + unidic-lite,
sudachipy + sudachidict-core, pythainlp; none is a dependency of mmcurate).

Accuracy: gold words from Universal Dependencies CoNLL-U files you give (the test
sets of UD_Chinese-GSDSimp, UD_Japanese-GSD, UD_Thai-PUD, ...), punctuation tokens
left out; prints each method's word count over the gold count and its word F1
(a word is right when its start and end match a gold word).
Speed: characters per second over human reference translations of WMT
(``../shared/data/mt-wmt2*/``), in documents of ~2,000 characters, one thread; and
the whole heuristics stage (``stages.heuristics.heuristic_steps``, default config)
per document, process CPU time, on the clean fixture pages of spaced scripts (25,
with the 4,000-word English article) and of Chinese, Japanese and Thai (5, with the
long Chinese and Japanese articles): run it at two commits to compare them.

    .venv/bin/python benchmarks/bench_word_count.py --conllu zh=zh_gsdsimp-ud-test.conllu \\
        --conllu ja=ja_gsd-ud-test.conllu --conllu th=th_pud-ud-test.conllu --sentences 8
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Callable

import regex

from mmcurate.filters.text import character_units, word_units

ROOT = Path(__file__).resolve().parents[1]
SHARED = next((p / "shared" / "data" for p in (ROOT.parent, ROOT.parent.parent) if (p / "shared" / "data").is_dir()), ROOT / "data")
WMT = {
    "zh": ["mt-wmt22/txt/sources/generaltest2022.zh-en.src.zh", "mt-wmt23/txt/references/generaltest2023.en-zh.ref.refA.zh"],
    "ja": ["mt-wmt23/txt/references/generaltest2023.en-ja.ref.refA.ja"],
}
_WORDLIKE = regex.compile(r"[\w\p{M}]")


def read_conllu(path: Path, limit: int) -> list[tuple[str, list[str]]]:
    """(text, gold words without punctuation) of the first ``limit`` sentences."""
    out: list[tuple[str, list[str]]] = []
    text, words = "", []
    for line in path.read_text(encoding="utf-8").splitlines() + [""]:
        if line.startswith("# text = "):
            text = line[len("# text = ") :]
        elif line and not line.startswith("#"):
            cols = line.split("\t")
            if cols[0].isdigit() and cols[3] != "PUNCT":
                words.append(cols[1])
        elif not line and text:
            out.append((text, words))
            text, words = "", []
            if len(out) >= limit:
                break
    return out


def segmenters(lang: str) -> dict[str, Callable[[str], list[str]]]:
    """mmcurate's count, one character a word, and the installed segmenters for ``lang``."""
    found: dict[str, Callable[[str], list[str]]] = {"mmcurate (ICU word break)": word_units, "one character a word": character_units}

    def words_of(tokens: list[str]) -> list[str]:
        return [t for t in tokens if _WORDLIKE.search(t)]

    try:
        if lang == "zh":
            import rjieba

            found["rjieba"] = lambda t: words_of(rjieba.cut(t))
    except ImportError:
        pass
    try:
        if lang == "zh":
            import jieba

            found["jieba"] = lambda t: words_of(jieba.lcut(t))
    except ImportError:
        pass
    try:
        if lang == "ja":
            import fugashi

            tagger = fugashi.Tagger()
            found["fugashi + unidic-lite"] = lambda t: words_of([w.surface for w in tagger(t)])
    except (ImportError, RuntimeError):
        pass
    try:
        if lang == "ja":
            from sudachipy import Dictionary, SplitMode

            sudachi = Dictionary().create()
            found["sudachipy (mode A)"] = lambda t: words_of([m.surface() for m in sudachi.tokenize(t, SplitMode.A)])
    except (ImportError, RuntimeError):
        pass
    try:
        if lang == "th":
            from pythainlp.tokenize import word_tokenize

            found["pythainlp newmm"] = lambda t: words_of(word_tokenize(t, engine="newmm"))
    except ImportError:
        pass
    return found


def spans(text: str, words: list[str]) -> set[tuple[int, int]]:
    out, pos = set(), 0
    for w in words:
        i = text.find(w, pos)
        if i >= 0:
            out.add((i, i + len(w)))
            pos = i + len(w)
    return out


def accuracy(lang: str, sentences: list[tuple[str, list[str]]]) -> None:
    gold_words = sum(len(g) for _, g in sentences)
    print(f"\n{lang}: {len(sentences)} gold sentences, {gold_words} words")
    print(f"  {'method':28s} {'count / gold':>13s} {'word F1':>8s}")
    for name, segment in segmenters(lang).items():
        predicted = right = 0
        for text, gold in sentences:
            words = segment(text)
            predicted += len(words)
            right += len(spans(text, gold) & spans(text, words))
        precision, recall = right / (predicted or 1), right / (gold_words or 1)
        f1 = 2 * precision * recall / ((precision + recall) or 1)
        print(f"  {name:28s} {predicted / gold_words:13.2f} {f1:8.3f}")


def documents(lines: list[str], size: int = 2000) -> list[str]:
    out, current = [], ""
    for line in lines:
        current += line + "\n"
        if len(current) >= size:
            out.append(current)
            current = ""
    return out


def speed(lang: str) -> None:
    paths = [SHARED / p for p in WMT[lang] if (SHARED / p).exists()]
    if not paths:
        print(f"\n{lang}: no WMT text under {SHARED}")
        return
    docs = documents([line for p in paths for line in p.read_text(encoding="utf-8").splitlines() if line.strip()])
    chars = sum(map(len, docs))
    print(f"\n{lang} speed: {len(docs)} documents, {chars:,} characters (WMT human text)")
    for name, segment in segmenters(lang).items():
        segment(docs[0])
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            units = sum(len(segment(d)) for d in docs)
            best = min(best, time.perf_counter() - start)
        print(f"  {name:28s} {chars / best / 1e6:6.2f} M chars/s  {chars / units:5.2f} characters a word")


def heuristics_cpu(repeats: int = 10) -> None:
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_keep import TEXT_DIR, fixture_languages, page

    from mmcurate.filters.language import load_identifier
    from mmcurate.pipeline.config import load_config
    from mmcurate.stages.heuristics import heuristic_steps
    from mmcurate.stages.results import apply_filters

    config = load_config().heuristics
    steps = heuristic_steps(config, language_model=load_identifier(config.language.identifier))
    langs = fixture_languages()

    def long_page(lang: str, images: int, every: int):
        text = (TEXT_DIR / "long" / f"{lang}.txt").read_text(encoding="utf-8")
        return page(f"long-{lang}", [b.strip() for b in text.split("\n\n") if b.strip()], images=images, every=every)

    unspaced = ("zh", "ja", "th")
    sets = {
        "spaced-script pages": [page(f"clean-{l}", p, images=2) for l, p in langs.items() if l not in unspaced]
        + [long_page("en", 10, 6)],
        "zh, ja, th pages": [page(f"clean-{l}", langs[l], images=2) for l in unspaced] + [long_page("zh", 3, 4), long_page("ja", 3, 4)],
    }
    print("\nheuristics stage, process CPU per document (best of 5 rounds):")
    for name, docs in sets.items():
        for doc in docs:
            apply_filters(doc, steps)
        best = float("inf")
        for _ in range(5):
            start = time.process_time()
            for _ in range(repeats):
                for doc in docs:
                    apply_filters(doc, steps)
            best = min(best, time.process_time() - start)
        print(f"  {name:22s} {len(docs):3d} docs  {best / (repeats * len(docs)) * 1e3:6.2f} ms/doc")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conllu", action="append", default=[], metavar="LANG=FILE", help="gold CoNLL-U file of a language")
    parser.add_argument("--sentences", type=int, default=1000, help="gold sentences read from each file")
    args = parser.parse_args()
    for item in args.conllu:
        lang, _, path = item.partition("=")
        accuracy(lang, read_conllu(Path(path), args.sentences))
    for lang in WMT:
        speed(lang)
    heuristics_cpu()


if __name__ == "__main__":
    main()
