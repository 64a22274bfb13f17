"""Language identifiers compared for the heuristics stage's default: accuracy, coverage, memory, speed.

Usage: ``nice -n 10 .venv/bin/python benchmarks/bench_langid.py [--only NAME ...] [--wmt-sentences 500]``

The languages are fixed in ``LANGUAGES`` below, written before anything was measured:
100 UDHR translations (97 languages in mmcurate's scheme: Croatian and Serbian in
both scripts are one ``hbs``, Chinese in both scripts one ``zh``) chosen for web
presence and for spread over scripts and families — every script with a large web (Latin, Cyrillic, Greek, Armenian, Georgian, Arabic, Hebrew,
Thaana, the Indic scripts, Thai, Lao, Khmer, Myanmar, Han, Kana, Hangul, Ethiopic,
Tibetan), the right-to-left ones among them, and the close pairs an identifier has
to tell apart (Tswana / Northern Sotho / Southern Sotho, Xhosa / Zulu, Croatian /
Serbian, Bokmål / Danish, Czech / Slovak, Malay / Indonesian, Persian / Tajik,
Hindi / Marathi / Nepali, Amharic / Tigrinya). Text: the ``<para>`` paragraphs of
``../shared/data/langid-udhr/xml/udhr_<key>.xml`` as sentences, five consecutive
ones as a document; the human WMT22/23 references (news, ``mt-wmt2*/txt/
references``) in cs, de, en, he, ja, ru, uk, zh, the first ``--wmt-sentences`` each,
in five-segment documents; and the prose of ``tests/fixtures/text/`` (27 languages,
written for mmcurate, so in no identifier's training data, which the UDHR may be: it
is a common source of text for rare languages). Every text goes through
``clean_sample`` as the stage's does. Expected codes are mmcurate's scheme (``canonical_language``: macrolanguages
merged, so Croatian and Serbian are ``hbs``, Indonesian ``ms``, Bokmål ``no``).

Identifiers (each measured in a child process of its own, so its memory is its own):
``lid176`` (fastText lid.176.ftz, shipped, CC BY-SA 3.0), ``heliport`` (GPL-3.0; the
former default, for reference), ``cld2`` (``pycld2``, Apache-2.0), ``cld3``
(``cld3-py``, Apache-2.0), ``py3langid`` (BSD-3-Clause), ``lingua`` and
``lingua-low`` (``lingua-language-detector``, Apache-2.0; high and low accuracy
mode). An identifier that is not installed is skipped with a line saying so. The
candidates that are not mmcurate's dependencies were measured from a folder of their
own: ``pip install --target /tmp/lidcand --no-deps py3langid==0.4.0
lingua-language-detector==2.1.1 cld3-py==3.1.0``, then ``PYTHONPATH=/tmp/lidcand``.

Columns: ``right`` = top language is the expected one (macro mean over languages: each
language weighs the same); ``kept`` = right and passing the identifier's own
reliability rule (lid176: probability >= 0.65; heliport: its per-language
thresholds; cld2 as ``filters/language.py`` runs it: at least half of the text CLD2
called; cld3: its ``is_reliable``; py3langid and lingua have none, 0); ``cover`` =
listed languages the identifier can name (its published label set), ``docs>0`` = listed languages with at least one UDHR
document right; ``MB`` = peak resident memory of the child above its state before
importing the identifier (load and the whole run); ``docs/s`` = 5-sentence UDHR
documents per CPU second on one thread (process time, ``clean_sample`` excluded).
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = next(
    (p for p in (ROOT.parent / "shared" / "data", ROOT.parents[1] / "shared" / "data") if p.is_dir()),
    ROOT.parent / "shared" / "data",
)
MAX_CHARS = 4000  # heuristics.language.max_chars's default

# (UDHR file key, expected code in mmcurate's scheme). Written before measuring.
LANGUAGES: tuple[tuple[str, str], ...] = (
    # Latin script, Europe
    ("eng", "en"), ("deu_1996", "de"), ("fra", "fr"), ("spa", "es"), ("por_PT", "pt"), ("ita", "it"),
    ("nld", "nl"), ("pol", "pl"), ("ces", "cs"), ("slk", "sk"), ("slv", "sl"), ("hrv", "hbs"),
    ("srp_latn", "hbs"), ("ron_2006", "ro"), ("hun", "hu"), ("fin", "fi"), ("est", "et"), ("lav", "lv"),
    ("lit", "lt"), ("swe", "sv"), ("dan", "da"), ("nob", "no"), ("isl", "is"), ("cat", "ca"),
    ("eus", "eu"), ("glg", "gl"), ("gle", "ga"), ("cym", "cy"), ("mlt", "mt"), ("als", "sq"),
    ("lat", "la"), ("epo", "eo"),
    # Latin script, Asia and the Pacific
    ("tur", "tr"), ("azj_latn", "az"), ("uzn_latn", "uz"), ("vie", "vi"), ("ind", "ms"), ("tgl", "tl"),
    ("jav", "jv"), ("sun", "su"), ("ceb", "ceb"),
    # Latin script, Africa
    ("swh", "sw"), ("som", "so"), ("yor", "yo"), ("hau_NG", "ha"), ("ibo", "ig"), ("zul", "zu"),
    ("xho", "xh"), ("tsn", "tn"), ("nso", "nso"), ("sot", "st"), ("afr", "af"), ("kin", "rw"),
    ("sna", "sn"), ("nya_chechewa", "ny"), ("plt", "mg"),
    # Cyrillic
    ("rus", "ru"), ("ukr", "uk"), ("bel", "be"), ("bul", "bg"), ("mkd", "mk"), ("srp_cyrl", "hbs"),
    ("kaz", "kk"), ("kir", "ky"), ("tgk", "tg"), ("khk", "mn"), ("tat", "tt"),
    # Greek, Armenian, Georgian
    ("ell_monotonic", "el"), ("hye", "hy"), ("kat", "ka"),
    # Right to left: Arabic, Hebrew, Thaana
    ("arb", "ar"), ("pes_1", "fa"), ("urd", "ur"), ("heb", "he"), ("pbu", "ps"), ("uig_arab", "ug"),
    ("ydd", "yi"), ("div", "dv"),
    # Indic scripts
    ("hin", "hi"), ("ben", "bn"), ("mar", "mr"), ("guj", "gu"), ("pan", "pa"), ("tam", "ta"),
    ("tel", "te"), ("kan", "kn"), ("mal", "ml"), ("nep", "ne"), ("sin", "si"),
    # Southeast Asia
    ("tha", "th"), ("lao", "lo"), ("khm", "km"), ("mya", "my"),
    # East Asia
    ("cmn_hans", "zh"), ("cmn_hant", "zh"), ("jpn", "ja"), ("kor", "ko"),
    # Ethiopic, Tibetan
    ("amh", "am"), ("tir", "ti"), ("bod", "bo"),
)
WMT_LANGUAGES = ("cs", "de", "en", "he", "ja", "ru", "uk", "zh")
CANDIDATES = ("lid176", "heliport", "cld2", "cld3", "py3langid", "lingua", "lingua-low")
LICENCES = {
    "lid176": "CC-BY-SA-3.0 (data)", "heliport": "GPL-3.0", "cld2": "Apache-2.0", "cld3": "Apache-2.0",
    "py3langid": "BSD-3-Clause", "lingua": "Apache-2.0", "lingua-low": "Apache-2.0",
}
# Old or alternative codes the libraries write, as ISO 639 has them.
_ALIASES = {"iw": "he", "jw": "jv", "in": "id", "fil": "tl", "mo": "ro", "zh-hant": "zh", "zh-latn": "zh"}
_NS = re.compile(r"\{[^}]*\}")
_SENTENCE_END = re.compile(r"(?<=[.!?\u0964\u061f])\s+|(?<=[\u3002\uff01\uff1f])")


def udhr_paragraphs(data: Path, key: str) -> list[str]:
    root = ET.parse(data / "langid-udhr" / "xml" / f"udhr_{key}.xml").getroot()
    paras = [" ".join("".join(el.itertext()).split()) for el in root.iter() if _NS.sub("", el.tag) == "para"]
    return [p for p in paras if p]


def wmt_references(data: Path, per_language: int) -> dict[str, list[str]]:
    by_lang: dict[str, list[str]] = defaultdict(list)
    for path in sorted(data.glob("mt-wmt2*/txt/references/*")):
        lang = path.name.rsplit(".", 1)[-1]
        if lang in WMT_LANGUAGES:
            by_lang[lang] += [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {lang: lines[:per_language] for lang, lines in sorted(by_lang.items())}


def fixture_prose() -> dict[str, list[str]]:
    """Sentences of ``tests/fixtures/text/*.txt``: prose written for mmcurate in 27
    languages, so in no identifier's training data."""
    out = {}
    for path in sorted((ROOT / "tests" / "fixtures" / "text").glob("*.txt")):
        sents: list[str] = []
        for para in path.read_text(encoding="utf-8").split("\n\n"):
            parts = para.split() if path.stem == "th" else _SENTENCE_END.split(para)
            sents += [p.strip() for p in parts if p.strip()]
        out[path.stem] = sents
    return out


def documents(sentences: list[str], size: int = 5) -> list[str]:
    return ["\n".join(sentences[i : i + size]) for i in range(0, len(sentences) - size + 1, size)]


# --------------------------------------------------------------------------------
# The identifiers: load() -> (identify(text) -> (code, score, reliable), label set or None)
# --------------------------------------------------------------------------------


def _canon(code: str) -> str:
    from mmcurate.filters.language import canonical_language

    code = code.lower()
    return canonical_language(_ALIASES.get(code, code.split("-")[0]))


def load_candidate(name: str):
    from mmcurate.filters.language import IDENTIFIERS

    if name in IDENTIFIERS:
        from mmcurate.filters.language import LID176_MIN_SCORE, load_identifier

        ident = load_identifier(name)

        def identify(text: str):
            p = ident.identify(text)
            threshold = LID176_MIN_SCORE if p.threshold is None else p.threshold
            return p.language, p.score, p.score >= threshold

        return identify, None
    if name == "cld3":
        import gcld3

        model = gcld3.NNetLanguageIdentifier(min_num_bytes=0, max_num_bytes=MAX_CHARS * 4)

        def identify(text: str):
            r = model.FindLanguage(text)
            return _canon(r.language), r.probability, r.is_reliable

        return identify, None
    if name == "py3langid":
        from py3langid.langid import MODEL_FILE, LanguageIdentifier

        model = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)

        def identify(text: str):
            lang, prob = model.classify(text)
            return _canon(lang), float(prob), False

        return identify, {_canon(c) for c in model.labels}
    if name in ("lingua", "lingua-low"):
        from lingua import Language, LanguageDetectorBuilder

        builder = LanguageDetectorBuilder.from_all_languages().with_preloaded_language_models()
        detector = (builder.with_low_accuracy_mode() if name == "lingua-low" else builder).build()

        def identify(text: str):
            values = detector.compute_language_confidence_values(text)
            if not values or values[0].value == 0:
                return "", 0.0, False
            return _canon(values[0].language.iso_code_639_1.name), values[0].value, False

        return identify, {_canon(lang.iso_code_639_1.name) for lang in Language.all()}
    raise ValueError(name)


def _rss_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) / 1024


def measure(name: str, data: Path, wmt_sentences: int) -> dict:
    """One identifier over every text, in this process (a child of ``main``)."""
    from mmcurate.filters.language import clean_sample

    def prepare(texts: list[str]) -> list[str]:
        return [clean_sample(t, max_chars=MAX_CHARS, min_line_chars=0) for t in texts]

    corpus: dict[str, tuple[str, list[str], list[str]]] = {}
    for key, code in LANGUAGES:
        sents = udhr_paragraphs(data, key)
        corpus[f"udhr:{key}"] = (code, prepare(sents), prepare(documents(sents)))
    for lang, sents in wmt_references(data, wmt_sentences).items():
        corpus[f"wmt:{lang}"] = (_canon(lang), prepare(sents), prepare(documents(sents)))
    for lang, sents in fixture_prose().items():
        corpus[f"prose:{lang}"] = (_canon(lang), prepare(sents), prepare(documents(sents)))
    base = _rss_mb("VmRSS")
    t0 = time.perf_counter()
    try:
        identify, labels = load_candidate(name)
    except ImportError as exc:
        return {"name": name, "missing": str(exc)}
    load_s = time.perf_counter() - t0
    rows = {}
    doc_n, doc_cpu = 0, 0.0
    for label, (gold, sents, docs) in corpus.items():
        row = {}
        for kind, texts in (("sent", sents), ("doc", docs)):
            c0 = time.process_time()
            preds = [identify(t) for t in texts]
            cpu = time.process_time() - c0
            if kind == "doc" and label.startswith("udhr:"):
                doc_n += len(texts)
                doc_cpu += cpu
            right = [p[0] == gold for p in preds]
            row[kind] = (len(preds), sum(right), sum(r and p[2] for r, p in zip(right, preds)))
            if kind == "doc":
                wrong = [p[0] or "-" for p in preds if p[0] != gold]
                row["wrong"] = max(set(wrong), key=wrong.count) if wrong else ""
        rows[label] = row
    mb = _rss_mb("VmHWM") - base
    listed = {code for _, code in LANGUAGES}
    labels = labels if labels is not None else shipped_labels(name)
    return {
        "name": name, "load_s": load_s, "mb": mb, "docs_per_s": doc_n / doc_cpu,
        "cover": len(listed & labels) if labels is not None else None, "rows": rows,
    }


def shipped_labels(name: str) -> set[str] | None:
    """The label set of one of mmcurate's identifiers, in mmcurate's scheme (read after
    the memory figure: heliport's is a second load of its model)."""
    if name == "cld2":
        import pycld2

        from mmcurate.filters.language import _CLD2_CODES

        return {_canon(_CLD2_CODES.get(code, code)) for lang, code in pycld2.LANGUAGES
                if lang in pycld2.DETECTED_LANGUAGES and not code.startswith("xx-")}
    if name == "lid176":
        from mmcurate.filters.language import load_language_model

        return {_canon(label[len("__label__"):]) for label in load_language_model().get_labels()}
    if name == "heliport":
        import heliport

        return {_canon(code) for code in heliport.Identifier().get_confidence_all()}
    return None


def _macro(rows: dict, prefix: str, kind: str, col: int) -> float:
    vals = [r[kind][col] / r[kind][0] for label, r in rows.items() if label.startswith(prefix) and r[kind][0]]
    return sum(vals) / len(vals)


def report(results: list[dict], per_language: bool) -> None:
    n_langs = len({code for _, code in LANGUAGES})
    print(f"\n{len(LANGUAGES)} UDHR translations ({n_langs} languages), WMT references in {', '.join(WMT_LANGUAGES)}")
    print("right / kept, macro mean over languages; cover: of the listed languages, in the label set; "
          "docs>0: listed languages with a UDHR document right\n")
    print("| identifier | licence | UDHR sentences | UDHR 5-sentence docs | WMT sentences | WMT 5-segment docs "
          f"| prose sentences | prose 5-sentence docs | cover (of {n_langs}) | docs>0 | load s | MB | docs/s (1 core) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        if "missing" in r:
            print(f"| {r['name']} | not installed: {r['missing']} |")
            continue
        rows = r["rows"]
        cells = [f"{_macro(rows, p, k, 1):.3f} / {_macro(rows, p, k, 2):.3f}"
                 for p, k in (("udhr:", "sent"), ("udhr:", "doc"), ("wmt:", "sent"), ("wmt:", "doc"),
                              ("prose:", "sent"), ("prose:", "doc"))]
        udhr_langs = defaultdict(int)
        for (key, code) in LANGUAGES:
            udhr_langs[code] = max(udhr_langs[code], rows[f"udhr:{key}"]["doc"][1])
        ever = sum(1 for v in udhr_langs.values() if v)
        cover = "-" if r["cover"] is None else str(r["cover"])
        print(f"| {r['name']} | {LICENCES[r['name']]} | {' | '.join(cells)} | {cover} | {ever} | "
              f"{r['load_s']:.1f} | {r['mb']:.0f} | {r['docs_per_s']:,.0f} |")
    print()
    for r in results:
        if "missing" in r:
            continue
        weak = [f"{label} {row['doc'][1]}/{row['doc'][0]} ({row['wrong']})"
                for label, row in r["rows"].items() if row["doc"][0] and row["doc"][1] / row["doc"][0] < 0.8]
        print(f"{r['name']}: documents below 0.8 right (most frequent wrong answer): {', '.join(weak) or 'none'}")
        if per_language:
            for label, row in r["rows"].items():
                (sn, sr, sk), (dn, dr, dk) = row["sent"], row["doc"]
                print(f"  {label:<20} sent {sr}/{sn} kept {sk}  doc {dr}/{dn} kept {dk}  {row['wrong']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder with langid-udhr/ and mt-wmt2*/")
    parser.add_argument("--only", nargs="*", choices=CANDIDATES, default=list(CANDIDATES))
    parser.add_argument("--wmt-sentences", type=int, default=500, help="WMT reference segments per language")
    parser.add_argument("--per-language", action="store_true", help="print every language's counts")
    parser.add_argument("--child", choices=CANDIDATES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, args.data, args.wmt_sentences)))
        return
    results = []
    for name in args.only:
        out = subprocess.run(
            [sys.executable, __file__, "--child", name, "--data", str(args.data),
             "--wmt-sentences", str(args.wmt_sentences)],
            capture_output=True, text=True,
        )
        if out.returncode:
            raise SystemExit(f"{name} failed:\n{out.stderr}")
        results.append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(f"{name}: measured", file=sys.stderr)
    report(results, args.per_language)


if __name__ == "__main__":
    main()
