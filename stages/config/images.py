"""Settings of the images stage: retrieval, decoding, frequency and perceptual dedup.

Part of the one typed config tree (``pipeline.config.Config`` assembles it); the
stage receives this section only.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from mmcurate.stages.config.base import Section as _Section


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
    # Requests in flight per host: the stage groups URLs by host, so one worker holds
    # all of a host's URLs and the limit holds for the whole run.
    per_host_concurrency: int = Field(default=4, gt=0)
    batch_size: int = Field(default=256, gt=0)  # URLs handed to a worker's fetch loop at once
    # URLs a worker has taken on and not yet finished; above it the stage waits for
    # results before it takes more (memory stays bounded). A host with more URLs than
    # this holds its group's worker until its backlog is below it.
    max_pending_urls: int = Field(default=100_000, gt=0)
    # A host that fails this many times in a row (connection refused, a timeout while
    # a request is out, a TLS error) is given up: its remaining URLs fail at once as
    # image.host_given_up. 0: never.
    host_give_up_after: int = Field(default=3, ge=0)
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
    # How long a failed lookup (NXDOMAIN, no address) is remembered.
    dns_negative_cache_seconds: float = Field(default=60.0, ge=0)
    # Host name lookups running at once per worker (each holds a resolver thread).
    dns_concurrency: int = Field(default=32, gt=0)
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
