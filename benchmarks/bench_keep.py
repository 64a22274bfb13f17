"""What the heuristics keep of clean pages, per language and script, and how well
language ID does at sentence and document length.

1. Keep rate: clean pages built from the prose in ``tests/fixtures/text/`` (one
   page per language, two images), a long illustrated article (3,900+ words of
   human-written WMT news references, ten images) and 2,500-character Chinese and
   Japanese articles (``tests/fixtures/text/long/``, WMT references), through the heuristics stage's steps with the
   default config, exactly as the stage runs them (``stages.heuristics.build_steps``); then the pages of the
   fixture WARCs (read and extracted first). Prints kept / rejected with the reason
   per page, and the keep rate per script; the long pages again under OBELICS's
   2,000-word cap.
2. Language ID: accuracy of lid.176 and heliport on labelled text, at sentence
   length (one segment) and document length (5 consecutive sentences): the human
   references of WMT22/23 in ``../shared/data`` (--data) and the fixture prose.
   "right" = the top language is the label (both in mmcurate's code scheme, so
   hr/bs/sr count as hbs); "kept" = right and at or above the identifier's
   threshold (what the stage keeps). Speed: sentences per second, one thread.

    .venv/bin/python benchmarks/bench_keep.py
    .venv/bin/python benchmarks/bench_keep.py --sentences 300 --skip-warcs
"""

from __future__ import annotations

import argparse
import re
import sys
import time
import unicodedata
from collections import Counter, defaultdict
from pathlib import Path

from mmcurate.filters.language import LID176_MIN_SCORE, canonical_language, clean_sample, load_identifier
from mmcurate.pipeline.config import load_config
from mmcurate.schemas import Document, ImageNode, Provenance, TextNode
from mmcurate.stages.results import apply_filters
from mmcurate.stages.heuristics import heuristic_steps

ROOT = Path(__file__).resolve().parents[1]
TEXT_DIR = ROOT / "tests/fixtures/text"
DEFAULT_DATA = next((p for p in (ROOT.parent / "shared" / "data", ROOT.parents[1] / "shared" / "data") if p.is_dir()), ROOT.parent / "shared" / "data")
_SENTENCE_END = re.compile(r"(?<=[.!?\u0964\u061f])\s+|(?<=[\u3002\uff01\uff1f])")


def page(doc_id: str, paragraphs: list[str], images: int, every: int = 0) -> Document:
    """A page of ``paragraphs`` with ``images`` images: after every ``every``-th
    paragraph (0: all at the end)."""
    nodes: list = []
    placed = 0
    for i, p in enumerate(paragraphs, 1):
        nodes.append(TextNode(text=p))
        if every and i % every == 0 and placed < images:
            nodes.append(ImageNode(src=f"https://example.org/{doc_id}/figure-{placed}.jpg", alt=f"figure {placed}"))
            placed += 1
    nodes += [ImageNode(src=f"https://example.org/{doc_id}/figure-{i}.jpg") for i in range(placed, images)]
    prov = Provenance(warc_file="bench.warc.gz", record_id=f"<urn:uuid:{doc_id}>", date="2024-05-01T00:00:00Z", offset=0)
    return Document(doc_id=doc_id, url=f"https://example.org/{doc_id}", provenance=prov, nodes=tuple(nodes))


def fixture_languages() -> dict[str, list[str]]:
    return {
        p.stem: [b.strip() for b in p.read_text(encoding="utf-8").split("\n\n") if b.strip()]
        for p in sorted(TEXT_DIR.glob("*.txt"))
    }


def sentences_of(lang: str, paragraphs: list[str]) -> list[str]:
    out: list[str] = []
    for para in paragraphs:
        parts = para.split() if lang == "th" else _SENTENCE_END.split(para)
        out += [s.strip() for s in parts if s.strip()]
    return out


def wmt_references(data: Path) -> dict[str, list[str]]:
    """Human reference segments by language (the last suffix of each file name)."""
    by_lang: dict[str, list[str]] = defaultdict(list)
    for path in sorted(data.glob("mt-wmt2*/txt/references/*")):
        lang = path.name.rsplit(".", 1)[-1]
        by_lang[lang] += [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return by_lang


def script_of(text: str) -> str:
    counts: Counter = Counter()
    for ch in text:
        if ch.isalpha():
            name = unicodedata.name(ch, "")
            counts[name.split(" ")[0] if name else "?"] += 1
    if not counts:
        return "-"
    top = counts.most_common(1)[0][0]
    return {"CJK": "Han", "HIRAGANA": "Japanese", "KATAKANA": "Japanese"}.get(top, top.title())


def _outcome(steps, doc: Document) -> tuple[str, Document]:
    out, verdict = apply_filters(doc, steps)
    if verdict is None:
        return "kept", out
    value = f"{verdict.value:.3g}" if isinstance(verdict.value, float) else verdict.value
    return f"{verdict.reason} ({value} vs {verdict.threshold})", out


def keep_rates(data: Path, warcs: list[Path]) -> None:
    config = load_config().heuristics
    steps = heuristic_steps(config, language_model=load_identifier(config.language.identifier))
    pages: list[tuple[str, Document]] = []
    for lang, paragraphs in fixture_languages().items():
        pages.append((lang, page(f"clean-{lang}", paragraphs, images=2)))
    refs = wmt_references(data) if data.is_dir() else {}
    if refs.get("en"):
        lines = refs["en"][:400]
        paragraphs = [" ".join(lines[i : i + 4]) for i in range(0, len(lines), 4)]
        words = 0
        for n, p in enumerate(paragraphs):
            words += len(p.split())
            if words >= 3900:
                paragraphs = paragraphs[: n + 1]
                break
        pages.append(("en (long)", page("long-en", paragraphs, images=10, every=max(1, len(paragraphs) // 10))))
    for lang in ("zh", "ja"):
        paragraphs = [b.strip() for b in (TEXT_DIR / "long" / f"{lang}.txt").read_text(encoding="utf-8").split("\n\n") if b.strip()]
        pages.append((f"{lang} (2,500 chars)", page(f"long-{lang}", paragraphs, images=3, every=4)))
    print(f"Clean pages through the heuristics (default config, identifier {config.language.identifier}):")
    by_script: dict[str, Counter] = defaultdict(Counter)
    for label, doc in pages:
        outcome, out = _outcome(steps, doc)
        script = script_of(doc.text)
        by_script[script][outcome == "kept"] += 1
        words = out.signals.get("content.word_count", 0)
        print(f"  {label:<18} {script:<11} {int(words):>6} words  {out.language or '-':<4} "
              f"{out.language_score or 0:5.2f}  {outcome}")
    print("  keep rate by script: " + ", ".join(
        f"{s} {c[True]}/{c[True] + c[False]}" for s, c in sorted(by_script.items())))
    capped = config.model_copy(update={"obelics": config.obelics.model_copy(update={"max_words": 2000})})
    capped_steps = heuristic_steps(capped, language_model=load_identifier(config.language.identifier))
    print("  long pages under OBELICS's 2,000-word cap (obelics.max_words=2000):")
    for label, doc in pages:
        if "(" in label:
            outcome, out = _outcome(capped_steps, doc)
            print(f"  {label:<18} {int(out.signals.get('content.word_count', 0)):>6} words  {outcome}")
    if warcs:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from bench_heuristics import extracted_documents

        docs = extracted_documents(warcs)
        reasons: Counter = Counter()
        for doc in docs:
            outcome, _ = _outcome(steps, doc)
            reasons[outcome.split(" ")[0]] += 1
        print(f"\nFixture WARC pages ({', '.join(w.name for w in warcs)}): {len(docs)} extracted, "
              f"{reasons['kept']} kept ({reasons['kept'] / max(1, len(docs)):.0%})")
        for reason, n in reasons.most_common():
            if reason != "kept":
                print(f"  {reason:<36} {n}")


def language_id(data: Path, per_language: int) -> None:
    config = load_config().heuristics.language
    labelled: dict[str, list[str]] = {}
    for lang, lines in (wmt_references(data) if data.is_dir() else {}).items():
        labelled[f"{lang} (wmt)"] = lines[: per_language]
    for lang, paragraphs in fixture_languages().items():
        labelled[lang] = sentences_of(lang, paragraphs)
    identifiers = {}
    for name in ("lid176", "heliport"):
        t0 = time.perf_counter()
        identifiers[name] = load_identifier(name)
        print(f"{name}: loaded in {time.perf_counter() - t0:.1f} s")
    print(f"\nLanguage ID: right / kept (right and over the threshold), sentences and 5-sentence documents "
          f"(lid176 threshold {config.min_score or LID176_MIN_SCORE}; heliport "
          f"{config.min_score if config.min_score is not None else 'its per-language confidence thresholds'})")
    header = f"  {'language':<12} {'sents':>5} {'docs':>4}  " + "  ".join(
        f"{n + ' sent':>17} {n + ' doc':>16}" for n in identifiers)
    print(header)
    totals = {n: Counter() for n in identifiers}
    speed = {n: [0, 0.0] for n in identifiers}
    for label, sents in labelled.items():
        gold = canonical_language(label.split(" ")[0])
        docs = [" ".join(sents[i : i + 5]) for i in range(0, max(1, len(sents) - 4), 5 if len(sents) > 20 else 1)]
        row = f"  {label:<12} {len(sents):>5} {len(docs):>4}  "
        cells = []
        for name, ident in identifiers.items():
            res = {}
            for kind, texts in (("sent", sents), ("doc", docs)):
                samples = [clean_sample(t, max_chars=config.max_chars, min_line_chars=0) for t in texts]
                t0 = time.perf_counter()
                preds = [ident.identify(s) for s in samples]
                if kind == "sent":
                    speed[name][0] += len(samples)
                    speed[name][1] += time.perf_counter() - t0
                right = sum(p.language == gold for p in preds)
                kept = sum(
                    p.language == gold
                    and p.score >= (config.min_score if config.min_score is not None
                                    else LID176_MIN_SCORE if p.threshold is None else p.threshold)
                    for p in preds
                )
                totals[name][kind + "_n"] += len(preds)
                totals[name][kind + "_right"] += right
                totals[name][kind + "_kept"] += kept
                res[kind] = f"{right / len(preds):.2f}/{kept / len(preds):.2f}"
            cells.append(f"{res['sent']:>17} {res['doc']:>16}")
        print(row + "  ".join(cells))
    print("  all (micro)" + " " * 13 + "  ".join(
        f"{t['sent_right'] / t['sent_n']:.3f}/{t['sent_kept'] / t['sent_n']:.3f}".rjust(17)
        + f"{t['doc_right'] / t['doc_n']:.3f}/{t['doc_kept'] / t['doc_n']:.3f}".rjust(17)
        for t in totals.values()))
    for name, (n, secs) in speed.items():
        print(f"  {name}: {n / secs:,.0f} sentences/s (one thread, {n} sentences)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder with mt-wmt22/ and mt-wmt23/")
    parser.add_argument("--sentences", type=int, default=1000, help="WMT reference segments per language")
    parser.add_argument("--warcs", nargs="*", type=Path,
                        default=[ROOT / "tests/fixtures/warc/demo.warc.gz", ROOT / "tests/fixtures/warc/clueweb-quirk.warc.gz"])
    parser.add_argument("--skip-warcs", action="store_true")
    args = parser.parse_args()
    keep_rates(args.data, [] if args.skip_warcs else args.warcs)
    print()
    language_id(args.data, args.sentences)


if __name__ == "__main__":
    main()
