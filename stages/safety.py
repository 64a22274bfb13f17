"""Safety steps that belong to no single filtering stage (config section ``safety``).

- ``RejectUnsafePages`` (stage ``extract``, before parsing): a page whose URL is on
  the adult lists (``safety.urls``: by default the UT1 adult list mmcurate ships) is
  rejected with ``url.blocklisted_domain``, ``url.blocklisted_prefix`` or
  ``url.blocklisted_substring`` and never parsed. Its rows carry stage ``extract``
  and its counters sit in the ``extract`` namespace, so the extract stage's funnel
  (``in = kept + rejected + errors``) counts it.
- ``DropUnsafeImages`` (stage ``extract``, right after parsing): image nodes whose
  URL is listed are removed from the document, one image decision row each
  (``image.blocklisted_domain``, ``image.blocklisted_prefix``,
  ``image.blocklisted_substring``), counted in the
  document's ``safety.images_blocklisted`` signal. The page goes on: whether a
  page left with too few images is kept is the later stages' rule.
- ``RedactPersonalData`` (just before write): e-mail addresses, IP addresses and
  phone numbers in kept documents are replaced by placeholders (``filters/pii.py``);
  counts go to the document's ``pii.*`` signals and to counters (namespace
  ``write``: ``pii.email``, ``pii.ip``, ``pii.phone``, ``pii.documents``). It runs
  after every stage has decided, so no rule ever sees redacted text and no page's
  fate depends on it; the decision rows and the WARC records (the HTML-level
  evidence) are untouched.

The lists are loaded once per worker process, in ``DoFn.setup``, and held once by
both URL steps (Beam's ``apache_beam.utils.shared.Shared``, one handle per
``safety.urls`` setting): the shipped list costs 35 MB of memory
(``benchmarks/bench_safety.py --lookup`` measures it).
"""

from __future__ import annotations

import dataclasses
import gzip
import logging
import threading
import time
from typing import Iterable, NamedTuple, Optional

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.utils.shared import Shared

from mmcurate.filters import pii, unsafe_urls
from mmcurate.filters.urls import read_entries
from mmcurate.stages.config import PiiConfig, UnsafeUrlsConfig
from mmcurate.schemas import KIND_REJECTED, SUBJECT_PAGE, Decision, Document, ImageNode, Page
from mmcurate.stages.results import KEPT, REJECTED, StageCounters, rejection_decision

log = logging.getLogger(__name__)

URL_STAGE = "extract"
PII_STAGE = "write"
IMAGES_BLOCKLISTED = "safety.images_blocklisted"
PII_DOCUMENTS = "pii.documents"  # counter: kept documents with at least one replacement
PII_MICROS = "pii.micros"  # counter: time spent redacting, summed over workers
PII_FAILED = "pii.failed"  # signal: the redactor failed on this document (text as it was)


def read_list_files(paths) -> list[str]:
    """Entries of every list file, through Beam's filesystems (local, gs://, s3://)."""
    entries: list[str] = []
    for path in paths:
        with FileSystems.open(path) as fh:
            entries += read_entries(fh.read().decode("utf-8", "replace").splitlines())
    return entries


def load_shipped_domains() -> unsafe_urls.DomainIndex:
    """The shipped UT1 adult list's domains (``filters/data/adult_urls_ut1/domains.dawg``)."""
    import dawg

    path = unsafe_urls.shipped_list_dir() / unsafe_urls.SHIPPED_DOMAINS
    if not path.is_file():
        raise FileNotFoundError(
            f"{path}: the UT1 adult list is missing from this mmcurate installation "
            "(the package data was not installed); reinstall mmcurate or set safety.urls.shipped_list=false"
        )
    return unsafe_urls.DomainIndex(dawg.CompletionDAWG().load(str(path)))


def shipped_url_prefixes() -> list[str]:
    """The shipped UT1 adult list's URL prefixes (``filters/data/adult_urls_ut1/urls.gz``)."""
    path = unsafe_urls.shipped_list_dir() / unsafe_urls.SHIPPED_URLS
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return fh.read().splitlines()


def load_blocklist(config: UnsafeUrlsConfig) -> unsafe_urls.UrlBlocklist:
    """Every list of ``config``, read and parsed (once per worker: ``shared_blocklist``)."""
    indexes = [load_shipped_domains()] if config.shipped_list else []
    return unsafe_urls.UrlBlocklist.parse(
        read_list_files(config.domain_blocklists),
        read_list_files(config.substring_blocklists),
        prefix_entries=shipped_url_prefixes() if config.shipped_list else (),
        allowed_domains=config.allowed_domains,
        indexes=indexes,
    )


# One Shared handle per distinct ``safety.urls`` setting in this process, so the page
# and image steps (and every DoFn instance of each on the worker's threads) hold one
# copy of the lists.
_HANDLES: dict[str, Shared] = {}
_HANDLES_LOCK = threading.Lock()


def shared_blocklist(config: UnsafeUrlsConfig) -> unsafe_urls.UrlBlocklist:
    """``load_blocklist(config)``, loaded once per process and shared while any step holds it."""
    key = config.model_dump_json()
    with _HANDLES_LOCK:
        handle = _HANDLES.setdefault(key, Shared())
    return handle.acquire(lambda: load_blocklist(config))


def check_lists(config: UnsafeUrlsConfig) -> None:
    """Fail at pipeline construction, naming the key, when a list file is missing."""
    if config.shipped_list:
        for name in (unsafe_urls.SHIPPED_DOMAINS, unsafe_urls.SHIPPED_URLS):
            if not (unsafe_urls.shipped_list_dir() / name).is_file():
                raise FileNotFoundError(
                    f"safety.urls.shipped_list: {unsafe_urls.shipped_list_dir() / name} is missing from this "
                    "mmcurate installation; reinstall mmcurate or set safety.urls.shipped_list=false"
                )
    for key, paths in (("domain_blocklists", config.domain_blocklists), ("substring_blocklists", config.substring_blocklists)):
        for path in paths:
            if not FileSystems.exists(path):
                raise FileNotFoundError(f"safety.urls.{key}: file not found: {path}")


def has_lists(config: UnsafeUrlsConfig) -> bool:
    return bool(config.shipped_list or config.domain_blocklists or config.substring_blocklists)


class SafetyResult(NamedTuple):
    kept: beam.PCollection
    rejected: beam.PCollection


# ---------------------------------------------------------------------------------
# Adult URL lists
# ---------------------------------------------------------------------------------


class _ListedUrlsFn(beam.DoFn):
    """Base of the two URL-list DoFns: the lists, read once per worker, and the
    ``extract`` stage's counters."""

    def __init__(self, config: UnsafeUrlsConfig):
        self._config = config

    def setup(self) -> None:
        self._counters = StageCounters(URL_STAGE)
        self._blocklist = shared_blocklist(self._config)


class RejectUnsafePagesFn(_ListedUrlsFn):
    def process(self, page: Page) -> Iterable:
        started = time.perf_counter()
        verdict = unsafe_urls.page_url(page.url, blocklist=self._blocklist)
        if verdict.keep:
            yield page
        else:
            self._counters.rejected(verdict.reason)
            yield beam.pvalue.TaggedOutput(
                REJECTED,
                Decision(
                    doc_id=page.doc_id,
                    url=page.url,
                    stage=URL_STAGE,
                    kind=KIND_REJECTED,
                    reason=verdict.reason,
                    provenance=page.provenance,
                    detail=verdict.detail,
                    subject=SUBJECT_PAGE,
                ),
            )
        self._counters.micros(started)


def drop_unsafe_images(doc: Document, blocklist: unsafe_urls.UrlBlocklist) -> tuple[Document, list[tuple[ImageNode, object]]]:
    """``doc`` without the image nodes whose URL is listed, and the dropped nodes with
    their verdicts (a named document edit)."""
    kept, dropped = [], []
    for node in doc.nodes:
        if isinstance(node, ImageNode):
            verdict = unsafe_urls.image_url(node.src, blocklist=blocklist)
            if not verdict.keep:
                dropped.append((node, verdict))
                continue
        kept.append(node)
    out = dataclasses.replace(doc, nodes=tuple(kept)) if dropped else doc
    return out.with_signals({IMAGES_BLOCKLISTED: float(len(dropped))}), dropped


class DropUnsafeImagesFn(_ListedUrlsFn):
    def process(self, doc: Document) -> Iterable:
        started = time.perf_counter()
        out, dropped = drop_unsafe_images(doc, self._blocklist)
        for node, verdict in dropped:
            self._counters.inc(f"image.reason.{verdict.reason}")
            rejection = rejection_decision(URL_STAGE, doc, verdict, node, note=f"listed {verdict.detail}")
            yield beam.pvalue.TaggedOutput(REJECTED, rejection)
        yield out
        self._counters.micros(started)


class _CheckListedUrls(beam.PTransform):
    """Base of the two URL-list transforms: the list files are checked at
    construction; one ParDo (``fn``, labelled ``step``) splits kept from rejected."""

    fn: type[_ListedUrlsFn]
    step: str

    def __init__(self, config: UnsafeUrlsConfig, label: Optional[str] = None):
        super().__init__(label)
        check_lists(config)
        self._config = config

    def expand(self, elements: beam.PCollection) -> SafetyResult:
        out = elements | self.step >> beam.ParDo(self.fn(self._config)).with_outputs(REJECTED, main=KEPT)
        return SafetyResult(out[KEPT], out[REJECTED])


class RejectUnsafePages(_CheckListedUrls):
    """``pages | RejectUnsafePages(config.safety.urls)`` -> (pages kept, rejection rows)."""

    fn = RejectUnsafePagesFn
    step = "CheckPageUrls"


class DropUnsafeImages(_CheckListedUrls):
    """``docs | DropUnsafeImages(config.safety.urls)`` -> (documents, image rows)."""

    fn = DropUnsafeImagesFn
    step = "CheckImageUrls"


# ---------------------------------------------------------------------------------
# Personal data
# ---------------------------------------------------------------------------------


def redactor(config: PiiConfig) -> pii.Redactor:
    return pii.Redactor(
        email=config.email_placeholder if config.email else None,
        ip=config.ip_placeholder if config.ip else None,
        phone=config.phone_placeholder if config.phone else None,
        public_only=config.ip_public_only,
    )


class RedactPersonalDataFn(beam.DoFn):
    """Kept documents in, the same documents with personal data replaced out. If the
    redactor fails on a document (a bug, not bad input), the document is still
    written, as an error row would change its fate: its text stays as it was, its
    ``pii.failed`` signal is 1 and the counter ``pii.errors.<type>`` counts it."""

    def __init__(self, config: PiiConfig):
        self._config = config

    def setup(self) -> None:
        self._counters = StageCounters(PII_STAGE)
        self._redactor = redactor(self._config)

    def process(self, doc: Document) -> Iterable[Document]:
        started = time.perf_counter()
        cfg = self._config
        try:
            out = pii.redact_document(doc, self._redactor, default_region=cfg.phone_region, image_text=cfg.image_text)
        except Exception as exc:
            log.warning("personal-data redaction failed on %s: %s: %s", doc.doc_id, type(exc).__name__, exc)
            self._counters.inc(f"pii.errors.{type(exc).__name__}")
            out = doc.with_signals({PII_FAILED: 1.0})
        replaced = int(out.signals.get(pii.REPLACED, 0))
        if replaced:
            self._counters.inc(PII_DOCUMENTS)
            for kind in pii.KINDS:
                n = int(out.signals.get(pii.signal(kind), 0))
                if n:
                    self._counters.inc(pii.signal(kind), n)
        self._counters.inc(PII_MICROS, int((time.perf_counter() - started) * 1e6))
        yield out


class RedactPersonalData(beam.PTransform):
    """``kept_docs | RedactPersonalData(config.safety.pii)`` -> redacted documents."""

    def __init__(self, config: PiiConfig, label: Optional[str] = None):
        super().__init__(label)
        self._config = config

    def expand(self, docs: beam.PCollection) -> beam.PCollection:
        return docs | "Redact" >> beam.ParDo(RedactPersonalDataFn(self._config))



class RedactCaptionsFn(beam.DoFn):
    """Recycled pairs (stage recycle) with personal data in their captions replaced,
    counted in the ``recycle`` namespace (``pii.pairs``, ``pii.<kind>``)."""

    def __init__(self, config: PiiConfig):
        self._config = config

    def setup(self) -> None:
        self._counters = StageCounters("recycle")
        self._redactor = redactor(self._config)

    def process(self, pair) -> Iterable:
        caption, counts = self._redactor.redact(pair.caption, pii.region_for_url(pair.doc_url, self._config.phone_region))
        if counts:
            self._counters.inc("pii.pairs")
            for kind, n in counts.items():
                self._counters.inc(pii.signal(kind), n)
            pair = dataclasses.replace(pair, caption=caption)
        yield pair
