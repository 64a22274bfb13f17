"""Cost of the safety steps per document, against the text path they ride on.

1. Reads the pages of the given WARCs (Beam DirectRunner, in-process).
2. Times, in this one process, per page: the text path -- extraction (the configured
   extractor, in-process) and the heuristics stage's steps without the safety block
   -- and the safety steps on the same page and document: the page URL and every
   image URL against adult lists (the test lists plus 100,000 generated domains, so
   the lookup is not timed on a toy set), the flagged-word document and node rules
   (language as the heuristics stage sets it), and personal-data redaction.
3. Prints CPU microseconds per document for each, and the safety steps' share of the
   text path (the goal: under 5%).

    .venv/bin/python benchmarks/bench_safety.py
    .venv/bin/python benchmarks/bench_safety.py --repeat 5 tests/fixtures/warc/demo.warc.gz
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import tempfile
import time
from pathlib import Path

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from mmcurate.filters import flagged_words, unsafe_urls
from mmcurate.filters.language import load_language_model
from mmcurate.filters.pii import redact_document
from mmcurate.runners.direct import runner_for
from mmcurate.pipeline.config import load_config
from mmcurate.schemas import Document
from mmcurate.stages.engines.extraction.page_documents import page_metadata
from mmcurate.stages.engines.extraction.registry import load_extractor
from mmcurate.stages.heuristics import heuristic_steps, load_flagged_words
from mmcurate.stages.read import ReadWarc
from mmcurate.stages.safety import read_list_files, redactor

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_WARCS = [
    ROOT / "tests/fixtures/warc/clueweb-quirk.warc.gz",
    ROOT / "tests/fixtures/warc/demo.warc.gz",
    ROOT / "tests/fixtures/warc/books.toscrape.warc",
]
LISTS = ROOT / "tests/fixtures/lists/adult"


def read_pages(warcs: list[Path]) -> list:
    config = load_config()
    with tempfile.TemporaryDirectory() as tmp:
        prefix = str(Path(tmp) / "pages")
        with beam.Pipeline(runner=runner_for(PipelineOptions(["--runner=DirectRunner"]))) as p:
            read = p | ReadWarc([str(w) for w in warcs], config.read)
            _ = read.pages | beam.Map(lambda pg: pickle.dumps(pg).hex()) | beam.io.WriteToText(prefix, shard_name_template="")
        return [pickle.loads(bytes.fromhex(line)) for line in Path(prefix).read_text().split()]


def blocklist() -> unsafe_urls.UrlBlocklist:
    domains = read_list_files([str(LISTS / "domains")]) + [f"site{i}.adult-example.test" for i in range(100_000)]
    return unsafe_urls.UrlBlocklist.parse(domains, read_list_files([str(LISTS / "urls")]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("warcs", nargs="*", type=Path, default=DEFAULT_WARCS)
    parser.add_argument("--repeat", type=int, default=3, help="passes over the pages (the median pass is reported)")
    args = parser.parse_args()

    config = load_config()
    pages = read_pages(args.warcs)
    extractor = load_extractor(config.extract.extractor)
    model = load_language_model(config.heuristics.language.model_path)
    # Without flagged_words= the steps leave the safety block out: the text path alone.
    text_steps = heuristic_steps(config.heuristics, language_model=model)
    words = load_flagged_words(config.heuristics.flagged_words)
    fw = config.heuristics.flagged_words
    node_rule = flagged_words.FlaggedNodeCleanup(words, fw.max_node_ratio)
    lists = blocklist()
    pii = redactor(config.safety.pii)
    clock = time.process_time  # CPU time of this process: robust to other work on a shared machine

    def one_pass() -> tuple[float, float, float, float, int, int]:
        text = urls = fwords = redact = 0.0
        docs = images = 0
        for page in pages:
            t0 = clock()
            extraction = extractor(page.html, page.url, config.extract)
            doc = Document(
                doc_id=page.doc_id, url=page.url, provenance=page.provenance, nodes=tuple(extraction.nodes),
                title=extraction.title, metadata=page_metadata(page, config.extract),
            )
            for step in text_steps:
                result = step(doc)
                if isinstance(result, Document):
                    doc = result
            text += clock() - t0
            t1 = clock()
            unsafe_urls.page_url(page.url, blocklist=lists)
            for node in doc.image_nodes:
                unsafe_urls.image_url(node.src, blocklist=lists)
            t2 = clock()
            flagged_words.document_ratio(doc, words=words, max_ratio=fw.max_document_ratio, max_ratio_by_language={})
            node_rule(doc)
            t3 = clock()
            redact_document(doc, pii, default_region=config.safety.pii.phone_region)
            t4 = clock()
            urls += t2 - t1
            fwords += t3 - t2
            redact += t4 - t3
            docs += 1
            images += len(doc.image_nodes)
        return text, urls, fwords, redact, docs, images

    passes = [one_pass() for _ in range(args.repeat)]
    text, urls, fwords, redact, docs, images = sorted(passes, key=lambda p: p[0])[len(passes) // 2]
    per = lambda seconds: 1e6 * seconds / max(1, docs)  # noqa: E731
    safety = urls + fwords + redact
    print(f"pages: {docs} from {len(args.warcs)} WARC(s), {images} image nodes; median of {args.repeat} passes, CPU time of one process")
    print(f"{'step':<42} {'us/doc':>10} {'share of text path':>19}")
    for name, seconds in [
        ("text path: extraction + heuristics", text),
        ("adult URL lists (page + every image)", urls),
        ("flagged words (document + node rules)", fwords),
        ("personal-data redaction", redact),
        ("safety steps together", safety),
    ]:
        print(f"{name:<42} {per(seconds):>10.1f} {100 * seconds / text:>18.2f}%")
    print(f"per-pass spread of the text path: {statistics.pstdev([p[0] for p in passes]) / max(1e-9, text) * 100:.1f}%")


if __name__ == "__main__":
    main()
