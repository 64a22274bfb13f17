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

# dedup (stage: dedup; stages/dedup.py). Each row's detail names the survivor.
DEDUP_EXACT_TEXT = "dedup.exact_text"
DEDUP_SAME_URL = "dedup.same_url"  # same normalised URL, a later capture survives
DEDUP_NEAR_DUPLICATE = "dedup.near_duplicate"  # MinHash-LSH cluster; value = Jaccard to the survivor

ALL_REASONS = frozenset(
    {
        HTTP_STATUS_NOT_OK,
        CONTENT_NO_TEXT,
        CONTENT_TOO_FEW_WORDS,
        CONTENT_TOO_FEW_IMAGES,
        DEDUP_EXACT_TEXT,
        DEDUP_SAME_URL,
        DEDUP_NEAR_DUPLICATE,
    }
)
