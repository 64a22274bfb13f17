"""Stage `heuristics`: the first and cheapest cut of the funnel.

One ParDo (``ApplyFiltersFn`` over ``build_steps``) runs, per document and cheapest first:

1. URL rules on the normalised URL (``filters/urls.py``);
2. an empty page (no word, no image) is ``content.empty``;
   node cleanup, a named transform (``filters/nodes.py``), then ``nothing_left``;
3. the content minimum: image bounds, non-empty text, word count
   (``filters/content.py``, ``filters/obelics.py``);
4. fastText language ID, which sets ``language``/``language_score`` on the
   document, then the allowed-language and minimum-score rule (``filters/language.py``);
5. the document rule sets: Gopher quality, OBELICS word bounds and ratios, FineWeb,
   C4, Gopher repetition (``filters/gopher.py``, ``obelics.py``, ``fineweb.py``, ``c4.py``).

The first rejection ends the document's way through the stage; every figure measured
until then is in its signals, on the kept document or on the decision row. The
language model and the blocklist files are loaded once per worker in ``setup``.
Counters (namespace ``heuristics``): ``kept``, ``rejected.<reason>``,
``errors.<ExceptionType>``, ``micros`` and ``nodes.removed.<reason>``.
"""

from __future__ import annotations

import inspect
import logging
import threading
from functools import partial
from typing import Any, Sequence

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.utils.shared import Shared

from mmcurate.filters import c4, content, fineweb, gopher, language, nodes, obelics, scripts, urls
from mmcurate.filters import flagged_words as flagged
from mmcurate.filters.text import TextView
from mmcurate.stages.config import HeuristicsConfig
from mmcurate.schemas import Document
from mmcurate.stages.results import ERRORS, KEPT, REJECTED, ApplyFiltersFn, DocumentStep, StageResult

log = logging.getLogger(__name__)

STAGE = "heuristics"

def read_blocklists(paths: Sequence[str]) -> list[str]:
    """Entries of every blocklist file, through Beam's filesystems (local, gs://, s3://)."""
    entries: list[str] = []
    for path in paths:
        with FileSystems.open(path) as fh:
            entries += urls.read_entries(fh.read().decode("utf-8", "replace").splitlines())
    return entries


def node_cleanup(config: HeuristicsConfig) -> nodes.NodeCleanup:
    c = config.nodes
    return nodes.NodeCleanup(
        boilerplate_max_words=c.boilerplate_max_words,
        min_declared_image_size=c.min_declared_image_size,
        image_url_tokens=frozenset(t.lower() for t in c.image_url_tokens),
        remove_repeated_images=c.remove_repeated_images,
        max_special_character_ratio=c.max_special_character_ratio,
        character_repetition_length=c.character_repetition_length,
        max_character_repetition_ratio=c.max_character_repetition_ratio,
        word_repetition_length=c.word_repetition_length,
        max_word_repetition_ratio=c.max_word_repetition_ratio,
        special_measure=c.special_character_measure,
        repeats_only=c.repetition_counts == "repeats",
    )


class SharedTextView:
    """The ``TextView`` of the document the steps are on: joined and tokenised once
    per document (again only after an edit of its nodes, such as node cleanup), and
    handed to every rule family through ``view=``."""

    def __init__(self) -> None:
        self._nodes: tuple | None = None
        self._view: TextView | None = None

    def __call__(self, doc: Document) -> TextView:
        if self._view is None or self._nodes is not doc.nodes:
            self._nodes, self._view = doc.nodes, TextView(doc.text)
        return self._view


# The rules that take ``view=``.
_VIEW_RULES = (
    content.min_words,
    language.annotate_language,
    scripts.reidentify_by_script,
    gopher.quality,
    gopher.repetition,
    obelics.word_bounds,
    obelics.text_ratios,
    fineweb.rules,
    c4.rules,
    flagged.document_ratio,
)


class WithSharedView:
    """A rule step called with the shared view of its document."""

    def __init__(self, step: Any, shared: SharedTextView):
        self.step = step
        self.shared = shared

    @property
    def func(self) -> Any:
        """The rule function (benchmarks name a step by it)."""
        return getattr(self.step, "func", self.step)

    def __call__(self, doc: Document) -> Any:
        return self.step(doc, view=self.shared(doc))


def with_settings(rule: Any, section: Any, **values: Any) -> partial:
    """``rule`` with every keyword-only parameter (but ``view``) bound to ``values``
    or else to the config field of the same name: the rule families' settings are
    named as their rules' parameters. A parameter with neither is an error here,
    when the steps are built, not on the first document."""
    bound = {}
    for name, param in inspect.signature(rule).parameters.items():
        if param.kind is not param.KEYWORD_ONLY or name == "view":
            continue
        if name in values:
            bound[name] = values[name]
        elif name in type(section).model_fields:
            bound[name] = getattr(section, name)
        elif param.default is param.empty:
            raise TypeError(f"{rule.__module__}.{rule.__name__}: no setting {name!r} in {type(section).__name__}")
    return partial(rule, **bound)


def heuristic_steps(
    config: HeuristicsConfig,
    *,
    language_model: Any,
    blocked_domains: frozenset[str] = frozenset(),
    blocked_substrings: Sequence[str] = (),
    flagged_words: "flagged.FlaggedWords | None" = None,
) -> list[DocumentStep]:
    """The stage's steps with thresholds bound from config, cheapest first. The text
    rules share one ``TextView`` per document (``SharedTextView``)."""
    shared = SharedTextView()
    steps: list[DocumentStep] = []
    if blocked_domains:
        steps.append(partial(urls.blocklisted_domain, domains=blocked_domains))
    pattern = urls.compile_substrings(blocked_substrings)
    if pattern is not None:
        steps.append(partial(urls.blocklisted_substring, pattern=pattern))
    steps.append(content.not_empty)
    if config.nodes.enabled:
        steps.append(node_cleanup(config))
        steps.append(partial(nodes.nothing_left, min_images=config.min_images))
    if config.min_images > 0:
        steps.append(partial(content.min_images, min_images=config.min_images))
    o = config.obelics
    if o.enabled:
        steps.append(with_settings(obelics.image_count, o))
    steps.append(content.has_text)
    steps.append(partial(content.min_words, min_words=config.min_words))
    lang = config.language
    steps.append(
        partial(language.annotate_language, model=language_model, max_chars=lang.max_chars, min_line_chars=lang.min_line_chars)
    )
    if lang.script_min_share < 1:
        # a page whose main script its language is not written in: identified again
        # among that script's languages (filters/scripts.py)
        steps.append(
            partial(scripts.reidentify_by_script, model=language_model, max_chars=lang.max_chars, min_share=lang.script_min_share)
        )
    steps.append(partial(language.language_allowed, allowed=frozenset(lang.allowed), min_score=lang.min_score))
    # -- safety: flagged words, once the language is known (filters/flagged_words.py).
    # The document rule reads the text as extracted; the node rule then removes the
    # odd flagged paragraph of a page that passed, as OBELICS does.
    fw = config.flagged_words
    if fw.enabled and flagged_words is not None:
        steps.append(
            partial(
                flagged.document_ratio,
                words=flagged_words,
                max_ratio=fw.max_document_ratio,
                max_ratio_by_language=dict(fw.max_document_ratio_by_language),
            )
        )
        steps.append(flagged.FlaggedNodeCleanup(flagged_words, fw.max_node_ratio))
        steps.append(partial(nodes.nothing_left, min_images=config.min_images))
    # -- end of the safety block
    # The document rule sets: each rule's thresholds are the fields of its config
    # section of the same names (``with_settings``).
    g = config.gopher_quality
    if g.enabled:
        stops = {language.canonical_language(k): frozenset(w.casefold() for w in v) for k, v in g.stop_words.items()}
        steps.append(with_settings(gopher.quality, g, stop_words=stops))
    if o.enabled:
        steps.append(with_settings(obelics.word_bounds, o))
    for section, rule in ((config.fineweb, fineweb.rules), (config.c4, c4.rules), (config.gopher_repetition, gopher.repetition)):
        if section.enabled:
            steps.append(with_settings(rule, section))
    if o.enabled:
        steps.append(with_settings(obelics.text_ratios, o))
    return [WithSharedView(step, shared) if _takes_view(step) else step for step in steps]


def _takes_view(step: Any) -> bool:
    return getattr(step, "func", None) in _VIEW_RULES or isinstance(step, flagged.FlaggedNodeCleanup)


def load_flagged_words(config) -> "flagged.FlaggedWords | None":
    """The flagged-word lists (``heuristics.flagged_words``), or None when the rule is off."""
    if not config.enabled:
        return None
    return flagged.load_flagged_words(config.lists_dir, fallback_language=config.fallback_language)


# One Shared handle per identifier setting in this process: every DoFn instance on the
# worker's threads (and recycling's caption check) holds one copy of the model.
_IDENTIFIERS: dict[tuple[str, str], Shared] = {}
_IDENTIFIERS_LOCK = threading.Lock()


def shared_identifier(name: str, model_path: str = "") -> Any:
    """``language.load_identifier(name, model_path)``, loaded once per worker process
    (Beam's ``Shared``) and kept while any step holds it."""
    key = (name, str(model_path or ""))
    with _IDENTIFIERS_LOCK:
        handle = _IDENTIFIERS.setdefault(key, Shared())
    return handle.acquire(lambda: language.load_identifier(name, model_path))


def build_steps(config: HeuristicsConfig) -> list[DocumentStep]:
    """The stage's steps with their resources loaded: once per worker (DoFn setup),
    the language identifier once per worker process."""
    return heuristic_steps(
        config,
        language_model=shared_identifier(config.language.identifier, config.language.model_path),
        blocked_domains=urls.parse_domains(read_blocklists(config.urls.domain_blocklists)),
        blocked_substrings=read_blocklists(config.urls.substring_blocklists),
        flagged_words=load_flagged_words(config.flagged_words),
    )


# The counters of ``edit_counts``: node cleanup per reason, and the flagged-word node rule.
_EDIT_COUNTERS = (*(nodes.removed_signal(reason) for reason in nodes.REMOVAL_REASONS), flagged.NODES_REMOVED)


def edit_counts(doc: Document) -> dict[str, int]:
    """Nodes the cleanup steps removed from ``doc``, by counter name: node cleanup per
    reason, and the flagged-word node rule (safety)."""
    signals = doc.signals
    return {name: int(signals.get(name, 0)) for name in _EDIT_COUNTERS}


def check_inputs(config: HeuristicsConfig) -> None:
    """Fail at pipeline construction, naming the key, when a file the stage needs is missing."""
    for key, paths in (("domain_blocklists", config.urls.domain_blocklists), ("substring_blocklists", config.urls.substring_blocklists)):
        for path in paths:
            if not FileSystems.exists(path):
                raise FileNotFoundError(f"heuristics.urls.{key}: file not found: {path}")
    if config.flagged_words.enabled and config.flagged_words.lists_dir:
        if not FileSystems.exists(config.flagged_words.lists_dir):
            raise FileNotFoundError(f"heuristics.flagged_words.lists_dir: not found: {config.flagged_words.lists_dir}")
    if config.language.identifier == "lid176":
        if config.language.model_path:
            if not FileSystems.exists(config.language.model_path):
                raise FileNotFoundError(f"heuristics.language.model_path: file not found: {config.language.model_path}")
        else:
            language.shipped_model_path()
    else:
        language.check_identifier_installed(config.language.identifier)


class ApplyTextHeuristics(beam.PTransform):
    def __init__(self, config: HeuristicsConfig, label: str | None = None):
        super().__init__(label)
        check_inputs(config)
        self._config = config

    def expand(self, docs: beam.PCollection) -> StageResult:
        outputs = docs | "ApplyHeuristics" >> beam.ParDo(
            ApplyFiltersFn(STAGE, make_filters=partial(build_steps, self._config), edit_counts=edit_counts)
        ).with_outputs(
            REJECTED, ERRORS, main=KEPT
        )
        return StageResult(outputs[KEPT], outputs[REJECTED], outputs[ERRORS])
