"""Every reason code a filter can return, declared once.

Codes read ``family.condition``. A shipped code is never renamed: analysts'
queries over the decisions table depend on it. Add new codes to ``ALL_REASONS``;
the test suite fails for a declared code that has no fixture asserting it.
"""

# http: the response itself is not a page worth extracting (stage: read)
HTTP_STATUS_NOT_OK = "http.status_not_ok"

# content: the minimum a page needs to be a document at all (stage: heuristics)
CONTENT_NO_TEXT = "content.no_text"
CONTENT_TOO_FEW_WORDS = "content.too_few_words"
CONTENT_TOO_FEW_IMAGES = "content.too_few_images"
CONTENT_EMPTY = "content.empty"  # no words and no images at all: nothing was extracted

# dedup (stage: dedup; stages/dedup.py). Each row's detail names the survivor.
DEDUP_EXACT_TEXT = "dedup.exact_text"
DEDUP_SAME_URL = "dedup.same_url"  # same normalised URL, a later capture survives
DEDUP_NEAR_DUPLICATE = "dedup.near_duplicate"  # MinHash-LSH cluster; value = Jaccard to the survivor

# heuristics: URL rules (stage: heuristics; filters/urls.py)
URL_BLOCKLISTED_DOMAIN = "url.blocklisted_domain"
URL_BLOCKLISTED_SUBSTRING = "url.blocklisted_substring"

# heuristics: what node cleanup left behind (stage: heuristics; filters/nodes.py)
NODES_NO_TEXT_LEFT = "nodes.no_text_left"
NODES_NO_IMAGES_LEFT = "nodes.no_images_left"

# heuristics: fastText language ID (stage: heuristics; filters/language.py)
LANGUAGE_NOT_ALLOWED = "language.not_allowed"
LANGUAGE_LOW_SCORE = "language.low_score"

# heuristics: Gopher quality rules (stage: heuristics; filters/gopher.py)
GOPHER_TOO_FEW_WORDS = "gopher.too_few_words"
GOPHER_TOO_MANY_WORDS = "gopher.too_many_words"
GOPHER_SHORT_MEAN_WORD_LENGTH = "gopher.short_mean_word_length"
GOPHER_LONG_MEAN_WORD_LENGTH = "gopher.long_mean_word_length"
GOPHER_SYMBOL_WORD_RATIO = "gopher.symbol_word_ratio"
GOPHER_BULLET_LINES = "gopher.bullet_lines"
GOPHER_ELLIPSIS_LINES = "gopher.ellipsis_lines"
GOPHER_ALPHABETIC_WORDS = "gopher.alphabetic_words"
GOPHER_STOP_WORDS = "gopher.stop_words"

# heuristics: Gopher repetition rules (stage: heuristics; filters/gopher.py)
GOPHER_DUPLICATE_LINES = "gopher.duplicate_lines"
GOPHER_DUPLICATE_PARAGRAPHS = "gopher.duplicate_paragraphs"
GOPHER_DUPLICATE_LINE_CHARS = "gopher.duplicate_line_chars"
GOPHER_DUPLICATE_PARAGRAPH_CHARS = "gopher.duplicate_paragraph_chars"
GOPHER_TOP_NGRAM_CHARS = "gopher.top_ngram_chars"
GOPHER_DUPLICATE_NGRAM_CHARS = "gopher.duplicate_ngram_chars"

# heuristics: C4 rules (stage: heuristics; filters/c4.py)
C4_LOREM_IPSUM = "c4.lorem_ipsum"
C4_CURLY_BRACKET = "c4.curly_bracket"
C4_NO_TERMINAL_PUNCTUATION = "c4.no_terminal_punctuation"
C4_JAVASCRIPT_LINES = "c4.javascript_lines"
C4_POLICY_LINES = "c4.policy_lines"
C4_TOO_FEW_SENTENCES = "c4.too_few_sentences"

# heuristics: FineWeb rules (stage: heuristics; filters/fineweb.py)
FINEWEB_LINE_PUNCTUATION = "fineweb.line_punctuation"
FINEWEB_SHORT_LINES = "fineweb.short_lines"
FINEWEB_DUPLICATE_LINE_CHARS = "fineweb.duplicate_line_chars"
FINEWEB_LIST_LIKE = "fineweb.list_like"

# heuristics: OBELICS interleaved-document rules (stage: heuristics; filters/obelics.py)
OBELICS_TOO_MANY_IMAGES = "obelics.too_many_images"
OBELICS_TOO_FEW_WORDS = "obelics.too_few_words"
OBELICS_TOO_MANY_WORDS = "obelics.too_many_words"
OBELICS_IMAGE_WORD_RATIO = "obelics.image_word_ratio"
OBELICS_SPECIAL_CHARACTERS = "obelics.special_characters"
OBELICS_CHARACTER_REPETITION = "obelics.character_repetition"
OBELICS_WORD_REPETITION = "obelics.word_repetition"

# image: retrieval failed (stage: images, subject image; stages/engines/image_fetch.py)
IMAGE_NOT_CAPTURED = "image.not_captured"
IMAGE_UNSUPPORTED_SCHEME = "image.unsupported_scheme"
IMAGE_REFUSED_ADDRESS = "image.refused_address"
IMAGE_ROBOTS_DISALLOWED = "image.robots_disallowed"
IMAGE_OPTED_OUT = "image.opted_out"
IMAGE_HTTP_STATUS = "image.http_status"
IMAGE_TIMEOUT = "image.timeout"
IMAGE_CONNECTION_FAILED = "image.connection_failed"
IMAGE_TOO_MANY_BYTES = "image.too_many_bytes"
IMAGE_WRONG_CONTENT_TYPE = "image.wrong_content_type"
IMAGE_REDIRECT_LOOP = "image.redirect_loop"
IMAGE_TOO_MANY_REDIRECTS = "image.too_many_redirects"
# A URL (or a redirect's Location) that cannot be fetched as written: unparseable,
# a port out of range, a host name IDNA cannot encode.
IMAGE_INVALID_URL = "image.invalid_url"
# Captured in the input WARCs, but over read.max_image_bytes, so not kept aside.
IMAGE_CAPTURE_TOO_LARGE = "image.capture_too_large"
# Its host failed images.host_give_up_after times in a row (refused, timed out, TLS
# error), so the URL was not tried.
IMAGE_HOST_GIVEN_UP = "image.host_given_up"

# image: decoding and validation (stage: images, subject image; filters/images.py)
IMAGE_NOT_AN_IMAGE = "image.not_an_image"
IMAGE_UNDECODABLE = "image.undecodable"
IMAGE_DECOMPRESSION_BOMB = "image.decompression_bomb"
# Decoded size (pixels x bytes a pixel, after JPEG draft scaling) over what one
# worker decodes at once, images.decode_budget_bytes.
IMAGE_DECODE_BUDGET = "image.decode_budget"
IMAGE_SVG = "image.svg"
IMAGE_ANIMATED = "image.animated"
IMAGE_FORMAT_NOT_ALLOWED = "image.format_not_allowed"
IMAGE_TOO_SMALL = "image.too_small"
IMAGE_TOO_LARGE = "image.too_large"
IMAGE_ASPECT_RATIO = "image.aspect_ratio"

# image: corpus-wide dedup (stage: images, subject image; stages/images.py)
IMAGE_TOO_FREQUENT = "image.too_frequent"
IMAGE_DUPLICATE_IN_DOCUMENT = "image.duplicate_in_document"

# image: document rules after retrieval (stage: images, subject page; filters/images.py)
IMAGE_DOCUMENT_NO_IMAGES = "image.document_no_images"
IMAGE_DOCUMENT_TOO_FEW = "image.document_too_few"
IMAGE_DOCUMENT_TOO_MANY = "image.document_too_many"
IMAGE_DOCUMENT_TOO_FEW_WORDS_PER_IMAGE = "image.document_too_few_words_per_image"
IMAGE_DOCUMENT_DUPLICATE_SET = "image.document_duplicate_set"

# quality: fastText quality score (stage: quality; filters/quality.py)
QUALITY_LOW_SCORE = "quality.low_score"

# mt: machine-translated text (stage: quality; filters/machine_translation.py)
MT_NOTICE = "mt.notice"
MT_WIDGET = "mt.widget"
MT_HREFLANG_FANOUT = "mt.hreflang_fanout"
MT_URL_LANGUAGE_MISMATCH = "mt.url_language_mismatch"
MT_HIGH_SCORE = "mt.high_score"
# (filters/mt_combined.py: the text score with the site's mean or the page's evidence)
MT_SITE_HIGH_SCORE = "mt.site_high_score"
MT_PAGE_AND_SCORE = "mt.page_and_score"

# llm: text written by weak models (stage: quality; filters/llm_text.py)
LLM_TEMPLATE_PHRASE = "llm.template_phrase"
LLM_HIGH_SCORE = "llm.high_score"
LLM_SITE_HIGH_SCORE = "llm.site_high_score"

# rewrite: semantic near-duplicates (stage: quality; filters/rewrites.py)
REWRITE_NEAR_DUPLICATE = "rewrite.near_duplicate"

# clip: CLIP image-text similarity (stage: scoring; filters/clip.py). Images below
# the similarity floor are image rows; the document rules are page rows.
CLIP_IMAGE_LOW_SIMILARITY = "clip.image_low_similarity"
CLIP_NO_IMAGES_LEFT = "clip.no_images_left"
CLIP_LOW_MEAN_SIMILARITY = "clip.low_mean_similarity"
CLIP_LOW_SHARE_ABOVE = "clip.low_share_above"
# stage recycle, subject pair: a candidate pair below scoring.pair_min_similarity
CLIP_PAIR_LOW_SIMILARITY = "clip.pair_low_similarity"

# judge: the VLM judge's rubric score (stage: scoring; stages/scoring/judge.py). Malformed
# answers and failed requests are error rows (JudgeAnswerError, JudgeRequestError).
JUDGE_LOW_SCORE = "judge.low_score"

# caption: caption rules for recycled pairs (stage: recycle, subject pair; filters/captions.py)
CAPTION_MISSING = "caption.missing"
CAPTION_TOO_SHORT = "caption.too_short"
CAPTION_TOO_LONG = "caption.too_long"
CAPTION_FILENAME = "caption.filename"
CAPTION_URL = "caption.url"
CAPTION_GENERIC = "caption.generic"
CAPTION_LANGUAGE_NOT_ALLOWED = "caption.language_not_allowed"
CAPTION_LOW_LANGUAGE_SCORE = "caption.low_language_score"

# pair: one pair per distinct image (stage: recycle, subject pair; stages/recycle.py)
PAIR_DUPLICATE_IMAGE = "pair.duplicate_image"
PAIR_IMAGE_NOT_RETRIEVED = "pair.image_not_retrieved"

# safety: unsafe content and where it is dropped. Pages from URLs on the adult lists
# (safety.urls) are rejected with the url.* codes above, in stage extract before they
# are parsed; images by their own codes below. (filters/flagged_words.py,
# filters/unsafe_urls.py, filters/nsfw.py)
SAFETY_FLAGGED_WORDS = "safety.flagged_words"  # stage heuristics, page: flagged-word ratio
SAFETY_NSFW_IMAGES = "safety.nsfw_images"  # stage scoring, page: NSFW images (scoring.nsfw)
IMAGE_NSFW = "image.nsfw"  # stage scoring, subject image; stage recycle, subject pair
# An image whose URL is on the adult lists: stage extract, subject image, as soon as
# extraction found it (so recycling never sees it either).
IMAGE_BLOCKLISTED_DOMAIN = "image.blocklisted_domain"
IMAGE_BLOCKLISTED_SUBSTRING = "image.blocklisted_substring"
# A page or image whose URL starts with an entry of a UT1 ``urls`` list (host and path
# prefix; the shipped UT1 adult list's): stage extract (filters/unsafe_urls.py).
URL_BLOCKLISTED_PREFIX = "url.blocklisted_prefix"
IMAGE_BLOCKLISTED_PREFIX = "image.blocklisted_prefix"

ALL_REASONS = frozenset(
    {
        HTTP_STATUS_NOT_OK,
        CONTENT_NO_TEXT,
        CONTENT_TOO_FEW_WORDS,
        CONTENT_TOO_FEW_IMAGES,
        CONTENT_EMPTY,
        DEDUP_EXACT_TEXT,
        DEDUP_SAME_URL,
        DEDUP_NEAR_DUPLICATE,
        URL_BLOCKLISTED_DOMAIN,
        URL_BLOCKLISTED_SUBSTRING,
        NODES_NO_TEXT_LEFT,
        NODES_NO_IMAGES_LEFT,
        LANGUAGE_NOT_ALLOWED,
        LANGUAGE_LOW_SCORE,
        GOPHER_TOO_FEW_WORDS,
        GOPHER_TOO_MANY_WORDS,
        GOPHER_SHORT_MEAN_WORD_LENGTH,
        GOPHER_LONG_MEAN_WORD_LENGTH,
        GOPHER_SYMBOL_WORD_RATIO,
        GOPHER_BULLET_LINES,
        GOPHER_ELLIPSIS_LINES,
        GOPHER_ALPHABETIC_WORDS,
        GOPHER_STOP_WORDS,
        GOPHER_DUPLICATE_LINES,
        GOPHER_DUPLICATE_PARAGRAPHS,
        GOPHER_DUPLICATE_LINE_CHARS,
        GOPHER_DUPLICATE_PARAGRAPH_CHARS,
        GOPHER_TOP_NGRAM_CHARS,
        GOPHER_DUPLICATE_NGRAM_CHARS,
        C4_LOREM_IPSUM,
        C4_CURLY_BRACKET,
        C4_NO_TERMINAL_PUNCTUATION,
        C4_JAVASCRIPT_LINES,
        C4_POLICY_LINES,
        C4_TOO_FEW_SENTENCES,
        FINEWEB_LINE_PUNCTUATION,
        FINEWEB_SHORT_LINES,
        FINEWEB_DUPLICATE_LINE_CHARS,
        FINEWEB_LIST_LIKE,
        OBELICS_TOO_MANY_IMAGES,
        OBELICS_TOO_FEW_WORDS,
        OBELICS_TOO_MANY_WORDS,
        OBELICS_IMAGE_WORD_RATIO,
        OBELICS_SPECIAL_CHARACTERS,
        OBELICS_CHARACTER_REPETITION,
        OBELICS_WORD_REPETITION,
        IMAGE_NOT_CAPTURED,
        IMAGE_UNSUPPORTED_SCHEME,
        IMAGE_REFUSED_ADDRESS,
        IMAGE_ROBOTS_DISALLOWED,
        IMAGE_OPTED_OUT,
        IMAGE_HTTP_STATUS,
        IMAGE_TIMEOUT,
        IMAGE_CONNECTION_FAILED,
        IMAGE_TOO_MANY_BYTES,
        IMAGE_WRONG_CONTENT_TYPE,
        IMAGE_REDIRECT_LOOP,
        IMAGE_TOO_MANY_REDIRECTS,
        IMAGE_INVALID_URL,
        IMAGE_CAPTURE_TOO_LARGE,
        IMAGE_HOST_GIVEN_UP,
        IMAGE_NOT_AN_IMAGE,
        IMAGE_UNDECODABLE,
        IMAGE_DECOMPRESSION_BOMB,
        IMAGE_DECODE_BUDGET,
        IMAGE_SVG,
        IMAGE_ANIMATED,
        IMAGE_FORMAT_NOT_ALLOWED,
        IMAGE_TOO_SMALL,
        IMAGE_TOO_LARGE,
        IMAGE_ASPECT_RATIO,
        IMAGE_TOO_FREQUENT,
        IMAGE_DUPLICATE_IN_DOCUMENT,
        IMAGE_DOCUMENT_NO_IMAGES,
        IMAGE_DOCUMENT_TOO_FEW,
        IMAGE_DOCUMENT_TOO_MANY,
        IMAGE_DOCUMENT_TOO_FEW_WORDS_PER_IMAGE,
        IMAGE_DOCUMENT_DUPLICATE_SET,
        QUALITY_LOW_SCORE,
        MT_NOTICE,
        MT_WIDGET,
        MT_HREFLANG_FANOUT,
        MT_URL_LANGUAGE_MISMATCH,
        MT_HIGH_SCORE,
        MT_SITE_HIGH_SCORE,
        MT_PAGE_AND_SCORE,
        LLM_TEMPLATE_PHRASE,
        LLM_HIGH_SCORE,
        LLM_SITE_HIGH_SCORE,
        REWRITE_NEAR_DUPLICATE,
        CLIP_IMAGE_LOW_SIMILARITY,
        CLIP_NO_IMAGES_LEFT,
        CLIP_LOW_MEAN_SIMILARITY,
        CLIP_LOW_SHARE_ABOVE,
        CLIP_PAIR_LOW_SIMILARITY,
        JUDGE_LOW_SCORE,
        CAPTION_MISSING,
        CAPTION_TOO_SHORT,
        CAPTION_TOO_LONG,
        CAPTION_FILENAME,
        CAPTION_URL,
        CAPTION_GENERIC,
        CAPTION_LANGUAGE_NOT_ALLOWED,
        CAPTION_LOW_LANGUAGE_SCORE,
        PAIR_DUPLICATE_IMAGE,
        PAIR_IMAGE_NOT_RETRIEVED,
        SAFETY_FLAGGED_WORDS,
        SAFETY_NSFW_IMAGES,
        IMAGE_NSFW,
        IMAGE_BLOCKLISTED_DOMAIN,
        IMAGE_BLOCKLISTED_SUBSTRING,
        URL_BLOCKLISTED_PREFIX,
        IMAGE_BLOCKLISTED_PREFIX,
    }
)
