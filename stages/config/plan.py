"""Settings of `mmcurate plan`: source rebalancing.

Part of the one typed config tree (``pipeline.config.Config`` assembles it); the
stage receives this section only.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from mmcurate.stages.config.base import Section as _Section


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
