"""The Python API: ``from mmcurate import ...`` and the example of a user's own pipeline."""

from __future__ import annotations

import importlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions

import mmcurate
from mmcurate.filters import reasons
from mmcurate.runners.direct import runner_for

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "tests" / "fixtures" / "warc" / "demo.warc.gz"


def _example():
    spec = importlib.util.spec_from_file_location("own_pipeline", ROOT / "examples" / "own_pipeline.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_exported_name_resolves_to_what_its_module_defines():
    for name, module in mmcurate._API.items():
        assert getattr(mmcurate, name) is getattr(importlib.import_module(module), name), name
        assert name in mmcurate.__all__ and name in dir(mmcurate)
    for stage in ("ReadWarc", "ExtractDocuments", "ApplyTextHeuristics", "DedupDocuments", "ScoreQuality",
                  "CurateImages", "ScoreImageText", "RecyclePairs", "WriteCorpus"):
        assert issubclass(getattr(mmcurate, stage), beam.PTransform), stage


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="NoSuchStage"):
        mmcurate.NoSuchStage  # noqa: B018


def test_text_stages_do_not_import_torch():
    # A fresh interpreter: this one may have imported torch through other tests.
    code = (
        "import sys\n"
        "from mmcurate import ReadWarc, ExtractDocuments, ApplyTextHeuristics, DedupDocuments, load_config\n"
        "load_config(None, [])\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_own_pipeline_example_composes_stages_with_its_own_transform(tmp_path, prism_calls):
    example = _example()
    overrides = ["heuristics.language.allowed=[en]"]
    options = PipelineOptions()
    with beam.Pipeline(runner=runner_for(options), options=options) as pipeline:  # as the README shows
        text = example.build(pipeline, [str(DEMO)], str(tmp_path / "out"), overrides)
        # What the heuristics stage decided, written beside the example's own outputs.
        _ = text.kept | "KeptUrls" >> beam.Map(lambda doc: doc.url) | beam.io.WriteToText(str(tmp_path / "kept"))
        _ = text.rejected | "RejectedIds" >> beam.Map(lambda d: d.reason) | "W2" >> beam.io.WriteToText(
            str(tmp_path / "rejected"))
    records = [json.loads(line) for f in (tmp_path / "out").glob("documents-*.jsonl") for line in f.read_text().splitlines()]
    rejections = {
        reason: int(n)
        for f in (tmp_path / "out").glob("rejections-*.tsv")
        for reason, n in (line.split("\t") for line in f.read_text().splitlines())
    }
    kept = sorted(line for f in tmp_path.glob("kept-*") for line in f.read_text().splitlines())
    rejected = [line for f in tmp_path.glob("rejected-*") for line in f.read_text().splitlines()]
    # The user's own step summarised exactly the documents the stage kept ...
    assert kept and sorted(r["url"] for r in records) == kept
    assert all(r["language"] == "en" and r["words"] > 0 and 0 <= r["images_with_alt"] <= r["images"] for r in records)
    # ... and counted exactly its rejections by reason code.
    assert rejections == {reason: rejected.count(reason) for reason in set(rejected)}
    # The demo's two pages with too few images, rejected with that code.
    assert rejections[reasons.CONTENT_TOO_FEW_IMAGES] == 2
    assert prism_calls == []


def test_own_pipeline_example_runs_from_the_command_line(tmp_path, prism_calls):
    _example().main([str(DEMO), "--output", str(tmp_path), "--direct_num_workers=1"])
    assert prism_calls == []  # Beam's DirectRunner ran it in Python, without offering it to Prism
    lines = (tmp_path / "documents-00000-of-00001.jsonl").read_text().splitlines()
    urls = {json.loads(line)["url"] for line in lines}
    assert "https://www.marshjournal.example/2024/05/salt-marsh-at-dawn/" in urls
