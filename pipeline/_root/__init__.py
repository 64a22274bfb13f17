"""mmcurate: curate interleaved image-text pretraining corpora from WARC files with Apache Beam.

The Python API is the stages themselves: composite ``beam.PTransform``s that a
pipeline of your own can apply, each built from its config section::

    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions
    from mmcurate import ReadWarc, ExtractDocuments, ApplyTextHeuristics, load_config
    from mmcurate.runners.direct import runner_for

    config = load_config("curate.yaml", ["heuristics.language.allowed=[en]"])
    options = PipelineOptions()
    with beam.Pipeline(runner=runner_for(options), options=options) as p:
        read = p | ReadWarc(["crawl/*.warc.gz"], config.read)
        extracted = read.pages | ExtractDocuments(config.extract)
        text = extracted.kept | ApplyTextHeuristics(config.heuristics)
        text.kept | beam.Map(my_own_step)

Every filtering stage returns a ``StageResult`` (``kept``, ``rejected``,
``errors``); ``ReadWarc`` a ``ReadResult``. ``runner_for`` keeps Beam's DirectRunner
from offering the pipeline to the Prism runner (a download at run time), as
``mmcurate run`` does. The names below are imported on first use, so ``import
mmcurate`` is cheap and a model stage (which pulls in torch through Beam's
RunInference) costs nothing until it is asked for.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# name -> module that defines it. The stages in funnel order, then their results,
# the config, the whole pipeline, the export and the record types.
_API = {
    # stage read
    "ReadWarc": "mmcurate.stages.read",
    "ReadWarcIndex": "mmcurate.stages.read_index",
    "ReadResult": "mmcurate.stages.read",
    # stage extract
    "ExtractDocuments": "mmcurate.stages.extract",
    # stage heuristics
    "ApplyTextHeuristics": "mmcurate.stages.heuristics",
    # stage dedup
    "DedupDocuments": "mmcurate.stages.dedup",
    # stage quality (fastText models in batches; no torch)
    "ScoreQuality": "mmcurate.stages.quality",
    # stage images
    "CurateImages": "mmcurate.stages.images",
    # stage scoring (CLIP through RunInference: torch)
    "ScoreImageText": "mmcurate.stages.scoring.score_image_text",
    # stage recycle
    "RecyclePairs": "mmcurate.stages.recycle",
    # stage write
    "WriteCorpus": "mmcurate.stages.write",
    "StageResult": "mmcurate.stages.results",
    # config
    "Config": "mmcurate.pipeline.config",
    "ConfigError": "mmcurate.pipeline.config",
    "load_config": "mmcurate.pipeline.config",
    # the whole pipeline, as `mmcurate run` builds and runs it
    "build_pipeline": "mmcurate.pipeline.build",
    "run_curation": "mmcurate.pipeline.run",
    # source planning, as `mmcurate plan` builds and runs it (docs/sources.md)
    "PlanSources": "mmcurate.stages.plan_sources",
    "plan_sources": "mmcurate.pipeline.plan",
    # shards for a trainer, as `mmcurate export` builds and runs them (docs: export)
    "ExportShards": "mmcurate.pipeline.export_shards",
    "export": "mmcurate.pipeline.export",
    # records
    "Document": "mmcurate.schemas",
    "TextNode": "mmcurate.schemas",
    "ImageNode": "mmcurate.schemas",
    "Decision": "mmcurate.schemas",
}

__all__ = ["__version__", *_API]


def __getattr__(name: str) -> Any:
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'mmcurate' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next lookup skips this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_API))
