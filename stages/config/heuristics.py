"""Settings of the heuristics stage: URL rules, language ID, text rules and node cleanup.

Part of the one typed config tree (``pipeline.config.Config`` assembles it); the
stage receives this section only.
"""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import Field, field_validator

from mmcurate.stages.config.base import Section as _Section


class LanguageConfig(_Section):
    """Language ID (filters/language.py). Codes are BCP 47 primary subtags with
    macrolanguages merged (``hbs``, ``no``, ``ms``, ``zh``, ...; README "Language ID")."""

    # "cld2" (Google's CLD2 through pycld2 0.42, Apache-2.0), "lid176" (fastText
    # lid.176.ftz, shipped, CC BY-SA 3.0) or "heliport" (HeLI-OTS 2.0, heliport 1.0.1,
    # GPL-3.0: the optional extra `pip install 'mmcurate[heliport]'`). cld2 by
    # measurement (benchmarks/bench_langid.py, docs/stages.md): of 97 languages it
    # names all, heliport 89, lid176 85; 798 of 800 WMT news documents right; 8 MB
    # and ~21,000 documents/s where heliport holds ~880 MB; permissively licensed. Ours.
    identifier: Literal["cld2", "lid176", "heliport"] = "cld2"
    # Language codes to keep ("en", "de", "hr", ...; mapped into the scheme, so "hr"
    # keeps the hbs group); empty keeps every language.
    allowed: tuple[str, ...] = ()
    # Minimum score of the top language group. Unset: the identifier's own default,
    # 0.65 for lid176 (a probability; FineWeb, Penedo et al. 2024, datatrove), 0.5 for
    # cld2 (the group's share of the text; ours), heliport's per-language thresholds
    # shipped with its model. A number applies to the chosen identifier's score.
    min_score: Optional[float] = Field(default=None, ge=0)
    # lid176 only: a fastText language-ID model file; empty uses lid.176.ftz, which
    # mmcurate ships as package data (filters/data/, CC BY-SA 3.0).
    model_path: str = ""
    # Characters of cleaned main text the identifier reads.
    max_chars: int = Field(default=4000, gt=0)
    # Lines shorter than this (menus, captions, bylines) are left out of the sample
    # when the page has longer ones. Ours: about one short sentence.
    min_line_chars: int = Field(default=40, ge=0)
    # A page whose letters are at least this share of one script that its identified
    # language is not written in (Han characters identified as English) is identified
    # again among the languages written in that script (filters/scripts.py); 1 turns
    # it off. Ours: the script holds the majority of the letters.
    script_min_share: float = Field(default=0.5, ge=0, le=1)

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
        "logo",
        "icon",
        "favicon",
        "avatar",
        "gravatar",
        "spacer",
        "pixel",
        "blank",
        "tracking",
        "button",
        "badge",
        "sprite",
        "emoji",
        "plugin",
        "widget",
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
        5: 0.15,
        6: 0.14,
        7: 0.13,
        8: 0.12,
        9: 0.11,
        10: 0.10,
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
    # Fewer words of main text than this: content.too_few_words (Gopher's lower
    # bound; Chinese, Japanese, Thai counted in dictionary words, filters/text.py).
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
