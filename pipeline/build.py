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
phase is a point a rerun resumes from (``pipeline.phases``; inside the first phase,
each finished input range is one too: ``stages.range_staging``).
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

import apache_beam as beam

from mmcurate.pipeline import progress
from mmcurate.pipeline.config import Config
from mmcurate.stages.scoring.options import ScoringOptions
from mmcurate.stages.dedup import DedupDocuments
from mmcurate.stages.extract import ExtractDocuments
from mmcurate.stages.heuristics import ApplyTextHeuristics
from mmcurate.stages.read import ReadWarc
from mmcurate.stages.results import StageResult
from mmcurate.pipeline import beam_files, range_outputs
from mmcurate.pipeline.range_outputs import STAGED_CAPTURED, STAGED_DECISIONS, STAGED_DOCS
from mmcurate.pipeline.range_outputs import captured_key as _captured_key
from mmcurate.pipeline.range_outputs import decision_key as _decision_key
from mmcurate.stages.engines.staging_files import record_key
from mmcurate.stages.range_staging import (
    RangeStaging,
    ReadStagedBatchFn,
    ReadStagedFilesInOrderFn,
    ReadStagedRangeFn,
    without_document,
)
from mmcurate.stages.read_index import ReadWarcIndex
from mmcurate.stages.safety import DropUnsafeImages, RedactPersonalData, RejectUnsafePages, has_lists
from mmcurate.stages.staging import ReadStaged, WriteStaged, read_all
from mmcurate.schemas.arrow_rows import table_row
from mmcurate.schemas.tables import DECISIONS
from mmcurate.stages.write import WriteCorpus, WriteTable

log = logging.getLogger(__name__)

# Corpus-wide stages: each opens a phase that reads the documents of the phase
# before from staging, and runs staged (only compact records cross its shuffles).
STAGED_STAGES = ("dedup", "images")

# What a phase writes under its staging directory (and STAGED_DOCS, STAGED_DECISIONS,
# STAGED_CAPTURED: pipeline/range_outputs.py).
STAGED_BLOBS = "blobs"
STAGED_FETCHED = "fetched"  # under the run's staging root, not a phase's
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
    """The phases of a run: a new one at each stage of ``STAGED_STAGES``. A run with
    none ends with a ``write`` phase of no stage, so that its first phase, too,
    stages what it keeps by input range (what a killed run resumes from) and the
    output tables are written by one Beam sink, from staging."""
    groups: list[tuple[str, list[str]]] = [("read", [])]
    for stage in config.run.stages:
        if stage == "recycle":
            continue  # not a filter of kept documents: built in the last phase, from all decisions
        if stage in STAGED_STAGES:
            groups.append((stage, []))
        groups[-1][1].append(stage)
    if len(groups) == 1:
        groups.append(("write", []))
    return [Phase(i, name, tuple(stages), i == len(groups) - 1) for i, (name, stages) in enumerate(groups)]


def phase_dir(root: str, phase: Phase) -> str:
    return beam_files.join(root, phase.dirname)


def scoring_accelerator(pipeline: beam.Pipeline) -> Optional[str]:
    """The --scoring_accelerator flag (set by the dataflow preset's gpu=), if given."""
    return pipeline.options.view_as(ScoringOptions).scoring_accelerator


def build_phase(
    pipeline: beam.Pipeline,
    phases: Sequence[Phase],
    phase: Phase,
    staging: str,
    inputs: Sequence[str],
    config: Config,
    reader: beam.PTransform | None = None,
    tables: Optional[str] = None,
    done_ranges: Optional[Mapping[str, int]] = None,
) -> None:
    """Adds one phase to ``pipeline``; its outputs go to ``phase_dir(staging, phase)``.

    Phase 0 reads ``inputs`` (``reader``, e.g. ``ReadWarcIndex``, replaces
    ``ReadWarc(inputs)``; it must return a ``ReadResult`` too); the others read what
    the phases before them staged, which must be complete when the pipeline runs
    (their files are listed then). The final phase writes the output tables under
    ``tables`` (default ``<phase dir>/tables``). A stage of ``STAGED_STAGES`` runs
    staged only when it opens a later phase; in phase 0 it joins in memory.

    With ``done_ranges`` (range id -> its pages; maybe empty) the first phase stages
    its outputs per input range when it can (``Funnel.stages_ranges``), skipping the
    ranges named there, which an earlier run staged.
    """
    here = phase_dir(staging, phase)
    # Image bodies fetched over HTTP, kept across the run's phases and reruns (stages/image_retrieval.py).
    fetched = beam_files.join(staging, STAGED_FETCHED) if done_ranges is not None or phase.index > 0 else None
    funnel = Funnel(pipeline, config, phase, here, done_ranges, fetched)
    if phase.index == 0:
        funnel.read(inputs, reader)
        funnel.extract()
    else:
        funnel.read_staged(phase_dir(staging, phases[phase.index - 1]), phase_dir(staging, phases[0]))
    # Each call adds its stage if this phase runs it.
    funnel.heuristics()
    funnel.dedup()
    funnel.quality()
    funnel.images()
    funnel.scoring(scoring_accelerator(pipeline))
    if not phase.final:
        funnel.stage_outputs()
        return
    funnel.redact_personal_data()
    funnel.gather_decisions([phase_dir(staging, p) for p in phases[: phase.index]])
    funnel.recycle(scoring_accelerator(pipeline))
    funnel.write(tables or beam_files.join(here, TABLES_DIR))


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
    through staging instead. Running the pipeline is yours too: on Beam 2.77's
    DirectRunner (``beam.Pipeline()``'s default) Beam first offers it to its Prism
    runner, downloading Prism's binary from GitHub, and runs it on the DirectRunner's
    own FnApiRunner only if that fails; ``beam.Pipeline(runner=
    mmcurate.runners.direct.runner_for(options), options=options)`` skips Prism, as
    mmcurate's own runs do (``runners/direct.py``)."""
    phase = Phase(0, "read", tuple(s for s in config.run.stages if s != "recycle"), True)
    build_phase(pipeline, [phase], phase, output_dir, inputs, config, reader=reader, tables=output_dir)


class Funnel:
    """The stages of one phase as they are added, each built from its own config
    section: the documents kept so far, every decision row on the way, the images
    the read stage set aside and the images table's rows. Each stage's outputs pass
    through ``progress.count`` (the live progress line of local runs)."""

    def __init__(self, pipeline: beam.Pipeline, config: Config, phase: Phase, here: str, done_ranges=None,
                 fetched_dir: Optional[str] = None):
        self.pipeline, self.config, self.phase, self.here = pipeline, config, phase, here
        self.done_ranges = done_ranges
        self.fetched_dir = fetched_dir
        self.ranged = False  # whether phase 0 stages its outputs per input range
        self.range_staging: Optional[RangeStaging] = None
        self.docs: Optional[beam.PCollection] = None
        self.decisions: list[beam.PCollection] = []
        self.captured: Optional[beam.PCollection] = None
        self.staged = None  # StagedRecords of the phase before (phases after the first)
        self.image_rows: Optional[beam.PCollection] = None
        self.all_decisions: Optional[beam.PCollection] = None  # the last phase's, every phase's rows
        self.staged_decisions: list[beam.PCollection] = []  # the earlier phases' rows, written apart
        self.pairs: Optional[beam.PCollection] = None

    def read(self, inputs: Sequence[str], reader: Optional[beam.PTransform]) -> None:
        # ReadWarc reads whole files, skipping records between those it emits: they count
        # as read too. Another reader (ReadWarcIndex) reads only the records it emits.
        gap = progress.SKIPPED_GAP if reader is None else 0
        self.ranged = self.stages_ranges(reader)
        staging = self.range_staging = self._range_staging() if self.ranged else None
        if reader is None:
            readers = {}
            if staging is not None:
                readers = {
                    "chunk_reader": ReadStagedRangeFn(self.config.read, staging),
                    "in_order_reader": ReadStagedFilesInOrderFn(self.config.read, staging),
                }
            reader = ReadWarc(list(inputs), self.config.read, **readers)
        elif staging is not None:
            reader = copy.copy(reader)  # a ReadWarcIndex: its batches of pointers are the ranges
            reader.batch_reader = ReadStagedBatchFn(self.config.read, staging)
        read = self.pipeline | "Read" >> reader
        self.docs = progress.count(read.pages, "CountReadKept", "read", read_gap=gap)
        self._decided(read.rejected, read.errors, read_gap=gap)
        self.captured = progress.count(read.images, "CountReadImages", read_gap=gap)

    def extract(self) -> None:
        # safety.urls (stages/safety.py): listed pages are rejected before they are parsed,
        # listed images dropped as soon as extraction has found them.
        unsafe_urls = self.config.safety.urls if has_lists(self.config.safety.urls) else None
        pages = self.docs
        if unsafe_urls is not None:
            gated = pages | "RejectUnsafeUrls" >> RejectUnsafePages(unsafe_urls)
            pages = gated.kept
            self._decided(gated.rejected)
        extracted = pages | "Extract" >> ExtractDocuments(self.config.extract)
        self._decided(extracted.rejected, extracted.errors)
        docs = extracted.kept
        if unsafe_urls is not None and unsafe_urls.images:
            dropped = docs | "DropUnsafeImages" >> DropUnsafeImages(unsafe_urls)
            docs = dropped.kept
            self._decided(dropped.rejected)
        self.docs = progress.count(docs, "CountExtractKept", "extract")

    def read_staged(self, previous: str, first: str) -> None:
        """The documents the phase before staged (and, for images and recycle, the
        images phase 0 set aside)."""
        self.staged = self.pipeline | "ReadStaged" >> ReadStaged([beam_files.join(previous, STAGED_DOCS)])
        if not self.phase.stages:  # the write phase: the staged documents are what it keeps
            self.docs = self.staged.records | "StagedDocuments" >> beam.Values()
        if self._needs_captured():
            self.captured = read_all([beam_files.join(first, STAGED_CAPTURED)], self.pipeline, "ReadCaptured")

    def heuristics(self) -> None:
        if self._runs("heuristics"):
            self._apply("heuristics", ApplyTextHeuristics(self.config.heuristics))

    def dedup(self) -> None:
        if self._runs("dedup"):
            self._apply("dedup", DedupDocuments(self.config.dedup, units=self._units("dedup")))

    # The model stages are imported only when they run: Beam's RunInference module
    # imports torch (about 1.5 s and 600 MB), which a text-only run never needs.
    def quality(self) -> None:
        if self._runs("quality"):
            from mmcurate.stages.quality import ScoreQuality

            self._apply("quality", ScoreQuality(self.config.quality))

    def images(self) -> None:
        if self._runs("images"):
            from mmcurate.stages.images import CurateImages

            units = self._units("images")
            blobs = beam_files.join(self.here, STAGED_BLOBS) if units is not None else None
            result = self._apply("images", CurateImages(self.config.images, self.captured, units=units, blob_dir=blobs,
                                                        fetched_dir=self.fetched_dir))
            self.image_rows = result.images

    def scoring(self, accelerator: Optional[str]) -> None:
        if not self._runs("scoring"):
            return
        if not self.config.scoring.active:
            log.warning("stage scoring is off: scoring.checkpoint is not set (and scoring.judge is off)")
            return
        from mmcurate.stages.scoring.score_image_text import ScoreImageText

        # The images table's rows (the bytes, joined by image_id) come from the images stage before it.
        self._apply("scoring", ScoreImageText(self.config.scoring, self.image_rows, accelerator=accelerator))

    def stages_ranges(self, reader: Optional[beam.PTransform]) -> bool:
        """Whether this phase stages per input range: ``stages_by_range``, in ``mmcurate
        run`` (which gives ``done_ranges``)."""
        return self.done_ranges is not None and stages_by_range(self.config, self.phase, reader)

    def _range_staging(self) -> RangeStaging:
        return RangeStaging(
            self.here,
            range_outputs.range_tables(self.here),
            dict(self.done_ranges),
            self._needs_captured(),
        )

    def stage_outputs(self) -> None:
        """A phase before the last: its documents, decisions (and phase 0's captured
        images) to staging, for the next phase."""
        if self.ranged:
            captured = self.captured if self._needs_captured() else None
            range_outputs.stage_ranges(self.range_staging, self.docs, self.decisions, captured, self._recycled())
            return
        _ = self.docs | "StageDocuments" >> WriteStaged(beam_files.join(self.here, STAGED_DOCS), key=record_key)
        _ = self._all_decisions() | "StageDecisions" >> WriteStaged(beam_files.join(self.here, STAGED_DECISIONS), key=_decision_key)
        if self.phase.index == 0 and self._needs_captured():
            _ = self.captured | "StageCaptured" >> WriteStaged(beam_files.join(self.here, STAGED_CAPTURED), key=_captured_key)

    def gather_decisions(self, earlier: Sequence[str]) -> None:
        """The last phase: its decision rows and those the phases before it staged
        (counted when they ran), as one PCollection."""
        staged = [read_all([beam_files.join(directory, STAGED_DECISIONS)], self.pipeline, f"ReadDecisions{index}")
                  for index, directory in enumerate(earlier)]
        if self._recycled():  # recycling reads every decision row at once
            self.decisions.extend(staged)
        else:
            # Written by sinks of their own (``write``): a Flatten of them with this phase's
            # rows would hold every decision row of the run in a runner's memory (Beam's
            # FnApiRunner materialises a Flatten of several inputs).
            self.staged_decisions = staged
        self.all_decisions = self._all_decisions()

    def redact_personal_data(self) -> None:
        # Every stage has decided: personal data in the kept text is replaced now, so no
        # rule ever measured redacted text and no page's fate depends on it (safety.pii).
        if self.config.safety.pii.enabled:
            self.docs = self.docs | "RedactPersonalData" >> RedactPersonalData(self.config.safety.pii)

    def recycle(self, accelerator: Optional[str]) -> None:
        """Pairs from the rejected documents' images (and the kept ones', by config),
        with the parts recycling uses: the images stage's retrieval and pHash
        clustering, the scoring stage's pair check (with a CLIP checkpoint) and
        caption redaction (safety.pii). Every decision is known here; recycling reads
        them and changes no page's fate."""
        self.pairs = self.pipeline | "NoPairRows" >> beam.Create([])
        if not self._recycled():
            return
        from mmcurate.stages.image_clusters import ClusterByPhash
        from mmcurate.stages.image_retrieval import RetrieveImages
        from mmcurate.stages.recycle import RecyclePairs
        from mmcurate.stages.safety import RedactCaptionsFn
        from mmcurate.stages.scoring.pair_scores import ScorePairs

        config = self.config
        recycled = self.all_decisions | "Recycle" >> RecyclePairs(
            config.recycle,
            retrieve=RetrieveImages(config.images, fetched_dir=self.fetched_dir),
            near_duplicates=ClusterByPhash(config.images.phash_max_distance),
            score=ScorePairs(config.scoring, accelerator=accelerator) if config.scoring.clip_on else None,
            redact_captions=beam.ParDo(RedactCaptionsFn(config.safety.pii)) if config.safety.pii.enabled else None,
            language_model_path=config.heuristics.language.model_path,
            captured=self.captured if self.captured is not None else self.pipeline | "NoCaptured" >> beam.Create([]),
            image_rows=self._image_rows(),
            kept=self.docs,
        )
        self.pairs = recycled.pairs
        compact = self.all_decisions | "CompactDecisions" >> beam.Map(without_document)
        self.all_decisions = (compact, recycled.decisions) | "WithPairDecisions" >> beam.Flatten()

    def write(self, tables: str) -> None:
        docs = progress.count(self.docs, "CountKept", "write")
        outputs = (docs, self.all_decisions, self._image_rows(), self.pairs)
        _ = outputs | "Write" >> WriteCorpus(tables, self.config.write)
        for index, staged in enumerate(self.staged_decisions):
            _ = (
                staged
                | f"StagedDecisionRows{index}" >> beam.Map(table_row, DECISIONS)
                | f"WriteStagedDecisions{index}" >> WriteTable(tables, DECISIONS, self.config.write, name=f"phase{index}")
            )

    # -- the bookkeeping every stage shares --------------------------------------------

    def _runs(self, stage: str) -> bool:
        return stage in self.phase.stages

    def _units(self, stage: str) -> Optional[beam.PCollection]:
        """The staged units, when ``stage`` opens this phase (it runs staged)."""
        return self.staged.units if self.phase.index > 0 and stage == self.phase.name else None

    def _apply(self, stage: str, transform: beam.PTransform) -> StageResult:
        """``transform`` over the documents so far (the staged records for the stage
        that opens a phase); its kept documents go on, its decisions are gathered."""
        source = self.staged.records if self._units(stage) is not None else self.docs
        result = source | stage.capitalize() >> transform
        self.docs = progress.count(result.kept, f"Count{stage.capitalize()}Kept", stage)
        self._decided(result.rejected, result.errors)
        return result

    def _decided(self, *decisions: beam.PCollection, read_gap: int = -1) -> None:
        for pcoll in decisions:
            self.decisions.append(progress.count(pcoll, f"CountDecisions{len(self.decisions)}", read_gap=read_gap))

    def _needs_captured(self) -> bool:
        return "images" in self.config.run.stages or "recycle" in self.config.run.stages

    def _recycled(self) -> bool:
        return "recycle" in self.config.run.stages

    def _all_decisions(self) -> beam.PCollection:
        if not self.decisions:  # the write phase decides nothing itself
            return self.pipeline | "NoDecisions" >> beam.Create([])
        return _gather(self.decisions, self._recycled(), "AllDecisions")

    def _image_rows(self) -> beam.PCollection:
        if self.image_rows is None:
            self.image_rows = self.pipeline | "NoImageRows" >> beam.Create([])
        return self.image_rows


def stages_by_range(config: Config, phase: Phase, reader: Optional[beam.PTransform]) -> bool:
    """Whether ``phase`` of ``mmcurate run`` stages its outputs per input range
    (``stages/range_staging.py``): the first phase of several, reading WARC files
    (cut into ranges; whole files without ``read.reshuffle`` or under ``read.limit``)
    or CC-index pointers (in batches)."""
    return phase.index == 0 and not phase.final and (reader is None or isinstance(reader, ReadWarcIndex))


def _gather(decisions: list, keep_documents: bool, label: str) -> beam.PCollection:
    """One PCollection of decision rows. Without recycling the rejected documents
    they carry are dropped first, in each producer's own step, so that no full
    document reaches the Flatten (which a runner may hold in memory)."""
    if not keep_documents:
        decisions = [d | f"{label}Compact{i}" >> beam.Map(without_document) for i, d in enumerate(decisions)]
    return decisions | label >> beam.Flatten()
