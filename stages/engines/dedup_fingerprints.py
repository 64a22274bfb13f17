"""What the `dedup` stage shuffles instead of documents: fingerprints and notes.

A ``Fingerprint`` is the light record of one document (ids, its URL and text keys,
a MinHash signature); a ``Note`` is a dedup step's word on one document (a rejection
or signals), keyed by a key unique to each record. Every node id is
``<rank>|<doc_id>`` (then NUL and the record key) where the rank string sorts in the
configured survivor order (``DedupConfig.survivor``, then the smallest doc_id, then
the record's file and offset), so the smallest id of a group or component is its
survivor and the result depends on the set of documents only. Plain Python; the
stage modules (``stages/dedup.py``, ``stages/near_duplicates.py``) shuffle these.
"""

from __future__ import annotations

import hashlib
import math
import re
import struct
from typing import NamedTuple, Optional, Sequence

import numpy as np

from mmcurate.filters import minhash
from mmcurate.filters.text import count_words, fold_for_hash
from mmcurate.filters.url_forms import dedup_key
from mmcurate.schemas import Document
from mmcurate.stages.config import DedupConfig

# Signals: on survivors, the size of their group (absent when the document had no
# duplicate); on every fingerprinted document, the number of distinct shingles.
URL_GROUP_SIZE = "dedup.url_group_size"
EXACT_GROUP_SIZE = "dedup.exact_group_size"
NEAR_CLUSTER_SIZE = "dedup.near_cluster_size"
SHINGLES = "dedup.shingles"

_SEP = "|"
_KEY_SEP = "\x00"


class Fingerprint(NamedTuple):
    """What the dedup shuffles carry for one document: every field is held once per
    document by a runner that keeps shuffles in memory, so none repeats another (the
    doc_id and the join key of its notes are read from ``node``: ``node_doc_id``,
    ``node_key``)."""

    node: str  # <content rank>|doc_id NUL key: sorts in survivor order
    url_rank: str  # the latest-first rank: url_node() sorts captures of one URL
    url_key: str  # normalised URL, "" when there is none
    text_key: str  # sha256 of the folded text, "" when there is no text
    sig: Optional[bytes]  # MinHash signature (uint32 little-endian), None without shingles
    hashes: Optional[bytes]  # distinct shingle hashes, only when verifying


class Note(NamedTuple):
    """A dedup step's word on one document: a rejection (``reason`` set) or signals."""

    reason: str = ""
    value: Optional[float] = None
    threshold: Optional[float] = None
    detail: str = ""
    signals: tuple[tuple[str, float], ...] = ()


# The note of a document whose fingerprint failed: the staged pass skips it (its
# error row is out already).
FAILED = "\x00failed"


def make_node(rank: str, doc_id: str, key: str) -> str:
    # NUL before the key sorts below every character, so the order of
    # <rank>|<doc_id> is kept and the key only breaks ties between equal doc_ids.
    return f"{rank}{_SEP}{doc_id}{_KEY_SEP}{key}"


def node_doc_id(node: str) -> str:
    return node.split(_SEP, 1)[1].split(_KEY_SEP, 1)[0]


def node_key(node: str) -> str:
    return node.split(_KEY_SEP, 1)[1]


def unit_token(unit: str) -> str:
    """A short stand-in for a staged unit (``"<row group>:<path>"``) in join keys and
    node ids, which every dedup shuffle carries: 12 hex digits of its BLAKE2b digest.
    Units whose tokens collided would only share one join group, where each record
    still finds its own notes by its record key."""
    return hashlib.blake2b(unit.encode("utf-8"), digest_size=6).hexdigest()


def url_node(p: Fingerprint) -> str:
    """``<latest-first rank>|doc_id NUL key``: the URL step's survivor order (the
    content rank of ``node`` swapped for the URL rank; ranks hold no ``|``)."""
    return p.url_rank + p.node[p.node.index(_SEP) :]


# -- survivor ranks ------------------------------------------------------------------

_DIGITS = re.compile(r"\D")
_MISSING = "1"
_PRESENT = "0"


def _date_digits(date: str) -> Optional[str]:
    """YYYYMMDDhhmmss of an ISO 8601 WARC date (UTC), None when it is not one."""
    if len(date) < 10 or not date[:4].isdigit() or date[4] != "-":
        return None
    digits = _DIGITS.sub("", date[:19])
    if len(digits) < 8:
        return None
    return digits.ljust(14, "0")[:14]


def _descending_float(x: float) -> str:
    """A fixed-width string that sorts the larger float first."""
    (bits,) = struct.unpack(">Q", struct.pack(">d", x))
    ascending = bits ^ 0xFFFFFFFFFFFFFFFF if bits >> 63 else bits | (1 << 63)
    return f"{0xFFFFFFFFFFFFFFFF - ascending:016x}"


def rank_string(doc: Document, criteria: Sequence[str], quality_signal: str = "") -> str:
    """A fixed-width string whose order is the survivor order of ``criteria``; a
    document without the figure a criterion needs comes after those with it."""
    parts = []
    for criterion in criteria:
        if criterion == "quality":
            q = doc.signals.get(quality_signal)
            ok = q is not None and not math.isnan(q)
            parts.append(_PRESENT + _descending_float(q) if ok else _MISSING + "0" * 16)
        elif criterion in ("earliest", "latest"):
            d = _date_digits(doc.provenance.date)
            if d is None:
                parts.append(_MISSING + "0" * 14)
            else:
                parts.append(_PRESENT + (d if criterion == "earliest" else f"{99999999999999 - int(d):014d}"))
        elif criterion == "longest":
            parts.append(f"{999999999999 - min(count_words(doc.text), 999999999999):012d}")
        else:
            raise ValueError(f"unknown survivor criterion {criterion!r}")
    return "".join(parts)


def text_key(doc: Document) -> str:
    """sha256 of the folded main text; "" for a document without text."""
    folded = fold_for_hash(doc.text)
    if not folded:
        return ""
    return hashlib.sha256(folded.encode("utf-8")).hexdigest()


def describe_lsh(config: DedupConfig) -> str:
    return (
        f"MinHash {config.num_perm} permutations, {config.bands} bands x {config.rows} rows: "
        f"pairs become candidates with probability 1/2 at Jaccard "
        f"{minhash.lsh_threshold(config.bands, config.rows):.3f}"
        f" ((1/b)^(1/r) = {(1 / config.bands) ** (1 / config.rows):.3f})"
        + (f"; verified at true Jaccard >= {config.verify_threshold}" if config.verify else "")
    )


# -- fingerprints ---------------------------------------------------------------------


def fingerprint_document(
    doc: Document, key: str, config: DedupConfig, hasher: minhash.MinHasher
) -> tuple[Document, Fingerprint]:
    """The document (with ``dedup.shingles`` when near-dedup is on) and its Fingerprint."""
    c = config
    rank = rank_string(doc, c.survivor, c.quality_signal)
    sig = hashes = None
    if c.near:
        shingles = minhash.shingles(doc.text, c.word_ngram, c.char_ngram, c.unspaced_cutoff)
        doc = doc.with_signals({SHINGLES: float(len(shingles))})
        if shingles:
            hv = minhash.shingle_hashes(shingles, c.shingle_hash)
            sig = minhash.to_bytes(hasher.signature(hv))
            if c.verify:
                hashes = minhash.to_bytes(np.unique(hv))
    url_key = dedup_key(doc.url, c.url_strip_params, c.url_fold_scheme) if c.url else ""
    return doc, Fingerprint(
        node=make_node(rank, doc.doc_id, key),
        url_rank=rank_string(doc, ("latest",)),
        url_key=url_key,
        text_key=text_key(doc) if c.exact_text else "",
        sig=sig,
        hashes=hashes,
    )


# -- verdicts ----------------------------------------------------------------------------


def sorted_notes(notes) -> list[Note]:
    """A document's notes in a fixed order (rejections by reason first in that order)."""
    return sorted(notes, key=lambda n: (n.reason, n.detail, n.signals))


def apply_notes(doc: Document, notes: list[Note]) -> tuple[Document, Optional[Note]]:
    """The document with every note's signals, and the first rejection among the
    (sorted) notes, None when it survives every step."""
    doc = doc.with_signals({name: value for note in notes for name, value in note.signals})
    rejections = [n for n in notes if n.reason]
    return doc, rejections[0] if rejections else None
