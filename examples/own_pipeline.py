"""A Beam pipeline of your own that composes mmcurate stages with a step of its own.

It reads WARC files, extracts documents, applies the text heuristics (language
ID, Gopher, FineWeb, OBELICS rules, ...) and then, instead of the rest of the
funnel, runs its own transform: every kept document becomes one JSON line of
(url, language, words, images), and the rejections are counted per reason code.

    python examples/own_pipeline.py tests/fixtures/warc/demo.warc.gz --output /tmp/own
    # -> /tmp/own/documents-00000-of-00001.jsonl, /tmp/own/rejections-00000-of-00001.tsv

Any Beam flag works after the mmcurate ones (``--runner``, ``--direct_num_workers``, ...).
With Beam's DirectRunner (the default) it runs as ``mmcurate run`` does, through
``runner_for``: Beam 2.77's DirectRunner would otherwise offer the pipeline to the
Prism runner first, which downloads Prism's binary at run time.
"""

from __future__ import annotations

import argparse
import json
from typing import Iterable, Sequence

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from mmcurate import ApplyTextHeuristics, Document, ExtractDocuments, ReadWarc, load_config
from mmcurate.runners.direct import runner_for


class SummariseFn(beam.DoFn):
    """The user's own step: one JSON record per document, with the images that
    carry alt text counted apart."""

    def process(self, doc: Document) -> Iterable[str]:
        images = doc.image_nodes
        yield json.dumps(
            {
                "url": doc.url,
                "language": doc.language,
                "words": len(doc.text.split()),
                "images": len(images),
                "images_with_alt": sum(1 for image in images if image.alt),
            },
            ensure_ascii=False,
            sort_keys=True,
        )


def build(pipeline: beam.Pipeline, inputs: Sequence[str], output: str, overrides: Sequence[str] = ()):
    """Adds read -> extract -> heuristics -> the user's own steps to ``pipeline``;
    returns the heuristics stage's result (kept, rejected, errors) for more steps."""
    config = load_config(None, list(overrides))  # the defaults, plus --set style overrides
    read = pipeline | "Read" >> ReadWarc(list(inputs), config.read)
    extracted = read.pages | "Extract" >> ExtractDocuments(config.extract)
    text = extracted.kept | "Heuristics" >> ApplyTextHeuristics(config.heuristics)
    (
        text.kept
        | "Summarise" >> beam.ParDo(SummariseFn())
        | "WriteDocuments" >> beam.io.WriteToText(f"{output}/documents", file_name_suffix=".jsonl")
    )
    (
        text.rejected
        | "ReasonOf" >> beam.Map(lambda decision: decision.reason)
        | "CountReasons" >> beam.combiners.Count.PerElement()
        | "AsTsv" >> beam.MapTuple(lambda reason, n: f"{reason}\t{n}")
        | "WriteRejections" >> beam.io.WriteToText(f"{output}/rejections", file_name_suffix=".tsv")
    )
    return text


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("inputs", nargs="+", help="WARC files or globs")
    parser.add_argument("--output", required=True, help="output directory")
    parser.add_argument("--set", dest="overrides", action="append", default=[], help="SECTION.KEY=VALUE")
    args, beam_args = parser.parse_known_args(argv)
    options = PipelineOptions(beam_args)
    with beam.Pipeline(runner=runner_for(options), options=options) as pipeline:
        build(pipeline, args.inputs, args.output, args.overrides)


if __name__ == "__main__":
    main()
