"""Assembles the stages into Beam pipelines from a ``Config``: one per phase.

A run is cut into phases at its corpus-wide stages, ``dedup`` and ``images``
(``STAGED_STAGES``). The first phase reads the input and runs extraction and the
per-document stages up to the first corpus-wide one, all fused and streaming; it
writes the documents it keeps, its decision rows and the captured-image pointers
to staging (``stages.staging``). Each later phase reads the staged documents of the
phase before, runs its corpus-wide stage staged (only compact records cross a
shuffle; the verdicts are applied as each unit of documents is read again), then
its per-document stages. The last phase also gathers every phase's decision rows
and writes the output tables. Each phase is its own Beam pipeline, so a finished
phase is a point a rerun resumes from (``pipeline.run``).
"""

from __future__ import annotations

import dataclasses
import logging
import posixpath
from dataclasses import dataclass
from typing import Optional, Sequence

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from mmcurate.pipeline.config import Config
from mmcurate.stages.scoring.options import ScoringOptions
from mmcurate.runners.progress import CountKeptFn
from mmcurate.schemas import Decision
from mmcurate.stages.dedup import DedupDocuments
from mmcurate.stages.extract import ExtractDocuments
from mmcurate.stages.heuristics import ApplyTextHeuristics
from mmcurate.stages.read import ReadWarc
from mmcurate.stages.safety import DropUnsafeImages, RedactPersonalData, RejectUnsafePages, has_lists
from mmcurate.stages.staging import ReadStaged, WriteStaged, read_all, record_key, staged_files
from mmcurate.stages.write import WriteCorpus


# The model stages are imported only when they run: Beam's RunInference module
# imports torch (about 1.5 s and 600 MB), which a text-only run never needs.
def _score_quality(config: Config) -> beam.PTransform:
    from mmcurate.stages.quality import ScoreQuality

    return ScoreQuality(config.quality)


def _curate_images(config: Config, captured, units=None, blob_dir=None) -> beam.PTransform:
    from mmcurate.stages.images import CurateImages

    return CurateImages(config.images, captured, units=units, blob_dir=blob_dir)


def _score_image_text(config: Config, rows, accelerator) -> beam.PTransform:
    from mmcurate.stages.scoring.score_image_text import ScoreImageText

    return ScoreImageText(config.scoring, rows, accelerator=accelerator)


def _recycle_pairs(config: Config, captured, image_rows, kept, accelerator) -> beam.PTransform:
    """The recycle stage with the parts it uses: the images stage's retrieval and
    pHash clustering, the scoring stage's pair check (with a CLIP checkpoint), and
    caption redaction (safety.pii)."""
    from mmcurate.stages.image_clusters import ClusterByPhash
    from mmcurate.stages.image_retrieval import RetrieveImages
    from mmcurate.stages.recycle import RecyclePairs
    from mmcurate.stages.safety import RedactCaptionsFn
    from mmcurate.stages.scoring.pair_scores import ScorePairs

    return RecyclePairs(
        config.recycle,
        retrieve=RetrieveImages(config.images),
        near_duplicates=ClusterByPhash(config.images.phash_max_distance),
        score=ScorePairs(config.scoring, accelerator=accelerator) if config.scoring.clip_on else None,
        redact_captions=beam.ParDo(RedactCaptionsFn(config.safety.pii)) if config.safety.pii.enabled else None,
        language_model_path=config.heuristics.language.model_path,
        captured=captured,
        image_rows=image_rows,
        kept=kept,
    )


# Filtering stages in funnel order, each a PTransform from documents to a
# StageResult, built from its own config section only.
_FILTER_STAGES = {
    "heuristics": lambda config: ApplyTextHeuristics(config.heuristics),
    "dedup": lambda config: DedupDocuments(config.dedup),
    "quality": _score_quality,
    # Also takes the image pointers the read stage set aside (see build_phase).
    "images": _curate_images,
    # Also takes the images table's rows (the bytes, joined by image_id) and the
    # accelerator hint of its model transform (see _TAKES_IMAGE_ROWS).
    "scoring": _score_image_text,
}

# Stages built from (config, images-table rows, accelerator hint).
_TAKES_IMAGE_ROWS = frozenset({"scoring"})

log = logging.getLogger(__name__)


def scoring_accelerator(pipeline: beam.Pipeline) -> Optional[str]:
    """The --scoring_accelerator flag (set by the dataflow preset's gpu=), if given."""
    return pipeline.options.view_as(ScoringOptions).scoring_accelerator


# Corpus-wide stages: each opens a phase that reads the documents of the phase
# before from staging, and runs staged (only compact records cross its shuffles).
STAGED_STAGES = ("dedup", "images")

# What a phase writes under its staging directory.
STAGED_DOCS = "docs"
STAGED_DECISIONS = "decisions"
STAGED_CAPTURED = "captured"
STAGED_BLOBS = "blobs"
TABLES_DIR = "tables"


@dataclass(frozen=True)
class Phase:
    index: int
    name: str  # "read", or the staged stage that opens it
    stages: tuple[str, ...]  # the filtering stages it runs, in funnel order
    final: bool

    @property
    def dirname(self) -> str:
        return f"{self.index}-{self.name}"


def plan_phases(config: Config) -> list[Phase]:
    """The phases of a run: a new one at each stage of ``STAGED_STAGES``."""
    groups: list[tuple[str, list[str]]] = [("read", [])]
    for stage in config.run.stages:
        if stage == "recycle":
            continue  # not a filter of kept documents: built in the last phase, from all decisions
        if stage in STAGED_STAGES:
            groups.append((stage, []))
        groups[-1][1].append(stage)
    return [Phase(i, name, tuple(stages), i == len(groups) - 1) for i, (name, stages) in enumerate(groups)]


def _join(*parts: str) -> str:
    return FileSystems.join(*parts) if "://" in parts[0] else posixpath.join(*parts)


def phase_dir(root: str, phase: Phase) -> str:
    return _join(root, phase.dirname)


def _needs_captured(config: Config) -> bool:
    return "images" in config.run.stages or "recycle" in config.run.stages


def _without_document(decision: Decision) -> Decision:
    return decision if decision.document is None else dataclasses.replace(decision, document=None)


def _gather(decisions: list, keep_documents: bool, label: str) -> beam.PCollection:
    """One PCollection of decision rows. Without recycling the rejected documents
    they carry are dropped first, in each producer's own step, so that no full
    document reaches the Flatten (which a runner may hold in memory)."""
    if not keep_documents:
        decisions = [d | f"{label}Compact{i}" >> beam.Map(_without_document) for i, d in enumerate(decisions)]
    return decisions | label >> beam.Flatten()


def build_phase(
    pipeline: beam.Pipeline,
    phases: Sequence[Phase],
    phase: Phase,
    staging: str,
    inputs: Sequence[str],
    config: Config,
    reader: beam.PTransform | None = None,
    tables: Optional[str] = None,
) -> None:
    """Adds one phase to ``pipeline``; its outputs go to ``phase_dir(staging, phase)``.

    Phase 0 reads ``inputs`` (``reader``, e.g. ``ReadWarcIndex``, replaces
    ``ReadWarc(inputs)``; it must return a ``ReadResult`` too); the others read what
    the phases before them staged, which must be complete when this is called (the
    staged files are listed here). The final phase writes the output tables under
    ``tables`` (default ``<phase dir>/tables``). A stage of ``STAGED_STAGES`` runs
    staged only when it opens a later phase; in phase 0 it joins in memory.
    """
    here = phase_dir(staging, phase)
    first = phases[0]
    recycle = "recycle" in config.run.stages
    decisions = []
    stages = list(phase.stages)
    if phase.index == 0:
        read = pipeline | "Read" >> (reader if reader is not None else ReadWarc(list(inputs), config.read))
        pages = read.pages
        decisions += [read.rejected, read.errors]
        # safety.urls (stages/safety.py): listed pages are rejected before they are parsed,
        # listed images dropped as soon as extraction has found them.
        unsafe_urls = config.safety.urls if has_lists(config.safety.urls) else None
        if unsafe_urls is not None:
            gated = pages | "RejectUnsafeUrls" >> RejectUnsafePages(unsafe_urls)
            pages = gated.kept
            decisions.append(gated.rejected)
        extracted = pages | "Extract" >> ExtractDocuments(config.extract)
        decisions += [extracted.rejected, extracted.errors]
        docs = extracted.kept
        if unsafe_urls is not None and unsafe_urls.images:
            dropped = docs | "DropUnsafeImages" >> DropUnsafeImages(unsafe_urls)
            docs = dropped.kept
            decisions.append(dropped.rejected)
        captured = read.images
    else:
        previous = phase_dir(staging, phases[phase.index - 1])
        staged = pipeline | "ReadStaged" >> ReadStaged(staged_files(_join(previous, STAGED_DOCS)))
        captured = None
        if _needs_captured(config):
            captured = read_all(staged_files(_join(phase_dir(staging, first), STAGED_CAPTURED)), pipeline, "ReadCaptured")
    image_rows = []
    for stage in stages:
        if stage == "scoring" and not config.scoring.active:
            log.warning("stage scoring is off: scoring.checkpoint is not set (and scoring.judge is off)")
            continue
        make = _FILTER_STAGES[stage]
        opens_phase = phase.index > 0 and stage == phase.name
        if stage == "images":
            blobs = _join(here, STAGED_BLOBS)
            transform = make(config, captured, staged.units, blobs) if opens_phase else make(config, captured)
        elif stage == "dedup" and opens_phase:
            transform = DedupDocuments(config.dedup, units=staged.units)
        elif stage in _TAKES_IMAGE_ROWS:
            transform = make(config, image_rows[0], scoring_accelerator(pipeline))
        else:
            transform = make(config)
        result = (staged.records if opens_phase else docs) | stage.capitalize() >> transform
        docs = result.kept
        decisions += [result.rejected, result.errors]
        if stage == "images":
            image_rows.append(result.images)
    if phase.index > 0 and not stages:
        docs = staged.records | "Unkey" >> beam.Values()

    if not phase.final:
        _ = docs | "StageDocuments" >> WriteStaged(_join(here, STAGED_DOCS), key=record_key)
        _ = _gather(decisions, recycle, "AllDecisions") | "StageDecisions" >> WriteStaged(
            _join(here, STAGED_DECISIONS), key=lambda d: d.doc_id
        )
        if phase.index == 0 and _needs_captured(config):
            _ = captured | "StageCaptured" >> WriteStaged(_join(here, STAGED_CAPTURED), key=lambda i: i.url)
        return

    # The last phase: every phase's decisions, recycling, and the output tables.
    for earlier in phases[: phase.index]:
        files = staged_files(_join(phase_dir(staging, earlier), STAGED_DECISIONS))
        decisions.append(read_all(files, pipeline, f"ReadDecisions{earlier.index}"))
    # A pass-through that feeds the live progress line of local runs (runners.progress).
    docs = docs | "CountKept" >> beam.ParDo(CountKeptFn())
    # Every stage has decided: personal data in the kept text is replaced now, so no
    # rule ever measured redacted text and no page's fate depends on it (safety.pii).
    if config.safety.pii.enabled:
        docs = docs | "RedactPersonalData" >> RedactPersonalData(config.safety.pii)
    all_decisions = _gather(decisions, recycle, "AllDecisions")
    if not image_rows:
        image_rows.append(pipeline | "NoImageRows" >> beam.Create([]))
    images = image_rows | "AllImageRows" >> beam.Flatten()
    pair_rows = pipeline | "NoPairRows" >> beam.Create([])
    if recycle:
        if captured is None:
            captured = pipeline | "NoCaptured" >> beam.Create([])
        # Every decision is known here; recycling reads them and changes no page's fate.
        recycled = all_decisions | "Recycle" >> _recycle_pairs(config, captured, images, docs, scoring_accelerator(pipeline))
        pair_rows = recycled.pairs
        all_decisions = (
            all_decisions | "CompactDecisions" >> beam.Map(_without_document),
            recycled.decisions,
        ) | "WithPairDecisions" >> beam.Flatten()
    _ = (docs, all_decisions, images, pair_rows) | "Write" >> WriteCorpus(tables or _join(here, TABLES_DIR), config.write)


def build_pipeline(
    pipeline: beam.Pipeline,
    inputs: Sequence[str],
    output_dir: str,
    config: Config,
    reader: beam.PTransform | None = None,
) -> None:
    """Adds the whole funnel, read → extract → enabled stages → write, to one
    pipeline, the tables going to ``output_dir``: for composing mmcurate into a
    pipeline of your own. Its corpus-wide stages join documents through shuffles
    (no staging, no phases), so a runner that keeps shuffled data in memory holds
    the documents; ``mmcurate run`` (``pipeline.run``) runs the same stages in phases
    through staging instead."""
    phase = Phase(0, "read", tuple(s for s in config.run.stages if s != "recycle"), True)
    build_phase(pipeline, [phase], phase, output_dir, inputs, config, reader=reader, tables=output_dir)
