"""The safety funnel of a run: what the adult URL lists, the flagged-word rules, the
NSFW image check and personal-data redaction did, with their thresholds, from the
run's counters and config. ``build_manifest`` stores it under ``safety``; the funnel
printout and ``mmcurate report`` show it."""

from __future__ import annotations

import html
from typing import Any, Mapping

from mmcurate.filters import reasons
from mmcurate.pipeline.config import Config

_PAGE_URL_REASONS = (reasons.URL_BLOCKLISTED_DOMAIN, reasons.URL_BLOCKLISTED_PREFIX, reasons.URL_BLOCKLISTED_SUBSTRING)
_IMAGE_URL_REASONS = (reasons.IMAGE_BLOCKLISTED_DOMAIN, reasons.IMAGE_BLOCKLISTED_PREFIX, reasons.IMAGE_BLOCKLISTED_SUBSTRING)


def nsfw_state(config: Config) -> tuple[bool, str]:
    """Whether the NSFW image check ran, and why not when it did not."""
    if not config.scoring.nsfw.enabled:
        return False, "scoring.nsfw.enabled is false"
    if "scoring" not in config.run.stages:
        return False, "stage scoring is not in run.stages; it needs a CLIP checkpoint and stage images"
    if not config.scoring.clip_on:
        return False, "scoring.checkpoint is not set: there is no CLIP embedding to score"
    return True, ""


def safety_summary(config: Config, counters: Mapping[tuple[str, str], int]) -> dict[str, Any]:
    def count(namespace: str, name: str) -> int:
        return int(counters.get((namespace, name), 0))

    fw = config.heuristics.flagged_words
    urls = config.safety.urls
    pii = config.safety.pii
    nsfw = config.scoring.nsfw
    nsfw_on, why = nsfw_state(config)
    out: dict[str, Any] = {
        "urls": {
            "enabled": bool(urls.shipped_list or urls.domain_blocklists or urls.substring_blocklists),
            "shipped_list": urls.shipped_list,
            "allowed_domains": list(urls.allowed_domains),
            "domain_blocklists": list(urls.domain_blocklists),
            "substring_blocklists": list(urls.substring_blocklists),
            "images": urls.images,
            "pages_rejected": {r: count("extract", f"rejected.{r}") for r in _PAGE_URL_REASONS},
            "images_dropped": {r: count("extract", f"image.reason.{r}") for r in _IMAGE_URL_REASONS},
        },
        "flagged_words": {
            "enabled": fw.enabled and "heuristics" in config.run.stages,
            "lists": fw.lists_dir or "shipped LDNOOBW lists (mmcurate/filters/data/flagged_words)",
            "max_document_ratio": fw.max_document_ratio,
            "max_document_ratio_by_language": dict(fw.max_document_ratio_by_language),
            "max_node_ratio": fw.max_node_ratio,
            "documents_rejected": count("heuristics", f"rejected.{reasons.SAFETY_FLAGGED_WORDS}"),
            "nodes_removed": count("heuristics", "nodes.removed.flagged_words"),
        },
        "nsfw": {
            "enabled": nsfw_on,
            "threshold": nsfw.threshold,
            "reject_document_min_images": nsfw.reject_document_min_images,
            "images_dropped": count("scoring", f"image.reason.{reasons.IMAGE_NSFW}"),
            "documents_rejected": count("scoring", f"rejected.{reasons.SAFETY_NSFW_IMAGES}"),
            "pairs_dropped": count("recycle", f"pair.rejected.{reasons.IMAGE_NSFW}"),
        },
        "pii": {
            "enabled": pii.enabled,
            "documents": count("write", "pii.documents"),
            "email": count("write", "pii.email"),
            "ip": count("write", "pii.ip"),
            "phone": count("write", "pii.phone"),
            "placeholders": {
                "email": pii.email_placeholder if pii.email else None,
                "ip": pii.ip_placeholder if pii.ip else None,
                "phone": pii.phone_placeholder if pii.phone else None,
            },
            "pairs": count("recycle", "pii.pairs"),
            "seconds": round(count("write", "pii.micros") / 1e6, 3),
        },
    }
    if nsfw_on:
        from mmcurate.stages.engines.nsfw_scorer import method

        out["nsfw"]["method"] = method(nsfw)
    else:
        out["nsfw"]["why"] = why
    return out


def _rows(summary: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(check, setting, effect) rows of the safety funnel."""
    urls, fw, nsfw, pii = summary["urls"], summary["flagged_words"], summary["nsfw"], summary["pii"]
    rows = []
    if urls["enabled"]:
        pages = sum(urls["pages_rejected"].values())
        images = sum(urls["images_dropped"].values())
        lists = len(urls["domain_blocklists"]) + len(urls["substring_blocklists"])
        setting = ", ".join(
            part
            for part in (
                "shipped UT1 adult list" if urls.get("shipped_list") else "",
                f"{lists} list file(s)" if lists else "",
                f"{len(urls.get('allowed_domains', ()))} allowed domain(s)" if urls.get("allowed_domains") else "",
            )
            if part
        )
        rows.append(("adult URLs", setting, f"{pages} pages rejected before extraction, {images} images dropped"))
    else:
        rows.append(("adult URLs", "off", "safety.urls.shipped_list is false and safety.urls names no list"))
    if fw["enabled"]:
        rows.append(
            (
                "flagged words",
                f"document > {fw['max_document_ratio']}, node > {fw['max_node_ratio']}",
                f"{fw['documents_rejected']} documents rejected, {fw['nodes_removed']} text nodes removed",
            )
        )
    else:
        rows.append(("flagged words", "off", ""))
    if nsfw["enabled"]:
        rows.append(
            (
                "NSFW images",
                f"{nsfw.get('method', '')}; score > {nsfw['threshold']}",
                f"{nsfw['images_dropped']} images dropped, {nsfw['documents_rejected']} documents rejected"
                f" (at {nsfw['reject_document_min_images']}+ NSFW images), {nsfw['pairs_dropped']} pairs dropped",
            )
        )
    else:
        rows.append(("NSFW images", "off", nsfw.get("why", "")))
    if pii["enabled"]:
        rows.append(
            (
                "personal data",
                ", ".join(f"{k} -> {v}" for k, v in pii["placeholders"].items() if v),
                f"{pii['email']} e-mail, {pii['ip']} IP, {pii['phone']} phone replaced in {pii['documents']} kept documents",
            )
        )
    else:
        rows.append(("personal data", "off", ""))
    return rows


def format_safety(manifest: Mapping[str, Any]) -> list[str]:
    """The safety funnel as plain-text lines (empty for a manifest without it)."""
    summary = manifest.get("safety")
    if not summary:
        return []
    lines = ["safety:"]
    for check, setting, effect in _rows(summary):
        if setting == "off":
            lines.append(f"  {check:<14} off" + (f" ({effect})" if effect else ""))
        else:
            lines.append(f"  {check:<14} {effect}  [{setting}]")
    return lines


def safety_html(manifest: Mapping[str, Any]) -> str:
    """The safety funnel as an HTML table for the report."""
    summary = manifest.get("safety")
    if not summary:
        return "<p>This run's manifest has no safety section.</p>"
    esc = html.escape
    body = "".join(
        f"<tr><td>{esc(check)}</td><td><code>{esc(setting)}</code></td><td>{esc(effect)}</td></tr>"
        for check, setting, effect in _rows(summary)
    )
    return f'<table id="safety-table"><thead><tr><th>check</th><th>setting</th><th>effect</th></tr></thead><tbody>{body}</tbody></table>'
