"""The run manifest: what went in, what came out, and the funnel between them."""

from __future__ import annotations

import platform
from collections import defaultdict
from importlib import metadata
from typing import Any, Mapping

from mmcurate.filters.reasons import IMAGE_NOT_CAPTURED
from mmcurate.pipeline.config import ALWAYS_ON, STAGE_NAMES, Config
from mmcurate.pipeline.safety_summary import format_safety, safety_summary
from mmcurate.schemas import KIND_ERROR, KIND_REJECTED, SUBJECT_PAGE
from mmcurate.schemas.tables import SCHEMA_VERSION, TABLES
from mmcurate.stages.results import COUNTER_KEPT, COUNTER_MICROS, counters_by_namespace, outcome_counts

PACKAGES = ("mmcurate", "apache-beam", "pyarrow", "warcio", "trafilatura", "lxml", "charset-normalizer", "datasketch")


def package_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def stage_funnel(config: Config, counters: Mapping[tuple[str, str], int], written: Mapping[str, Any]) -> dict[str, Any]:
    """Per stage, in funnel order: whether it ran, in, kept, rejected, errors, seconds."""
    by_ns = counters_by_namespace(counters)
    funnel: dict[str, Any] = {}
    for stage in STAGE_NAMES:
        if not config.enabled(stage):
            funnel[stage] = {"enabled": False}
            continue
        names = by_ns.get(stage, {})
        kept = names.get(COUNTER_KEPT, 0)
        rejected, errors = outcome_counts(names)
        entry = {
            "enabled": True,
            "in": kept + sum(rejected.values()) + sum(errors.values()),
            "kept": kept,
            "rejected": sum(rejected.values()),
            "errors": sum(errors.values()),
            "seconds": round(names.get(COUNTER_MICROS, 0) / 1e6, 3),
            "rejected_by_reason": dict(sorted(rejected.items())),
            "errors_by_type": dict(sorted(errors.items())),
        }
        if stage == "read":
            entry["in"] = names.get("pages", 0)
        if stage == "write":
            entry["in"] = entry["kept"] = written["kept"]
        if stage == "recycle":
            entry = recycle_entry(names, written)
        if stage == "quality":
            from mmcurate.stages.engines.text_classifiers import mt_languages

            # Documents in these languages get an mt_score; others get none.
            entry["mt_languages"] = mt_languages(config.quality)
        if stage == "scoring" and not config.scoring.active:
            entry = {"enabled": False, "why": "scoring.checkpoint is not set (and scoring.judge is off)"}
        funnel[stage] = entry
    return funnel


def recycle_entry(names: Mapping[str, int], written: Mapping[str, Any]) -> dict[str, Any]:
    """Stage `recycle` changes no page's fate: it reports pairs, not a page funnel."""
    sources = written.get("pair_sources", {})
    rejected = {n.removeprefix("pair.rejected."): v for n, v in names.items() if n.startswith("pair.rejected.")}
    return {
        "enabled": True,
        "documents_in": names.get("documents", 0),
        "candidates": names.get("candidates", 0),
        "pairs": written.get("pairs", {}).get("rows", 0),
        "recycled_documents": sources.get("recycled_documents", 0),
        "kept_documents": sources.get("kept_documents", 0),
        "candidates_rejected_by_reason": dict(sorted(rejected.items())),
    }


def check_counters(funnel: Mapping[str, Any], decision_counts: Mapping[tuple[str, str, str, str], int]) -> list[str]:
    """Counters must equal the decision rows: list every (stage, reason) where they differ."""
    rows: dict[tuple[str, str, str], int] = defaultdict(int)
    for (subject, stage, kind, reason), n in decision_counts.items():
        if subject == SUBJECT_PAGE:
            rows[(stage, kind, reason)] += n
    counted: dict[tuple[str, str, str], int] = {}
    for stage, entry in funnel.items():
        if not entry.get("enabled"):
            continue
        for reason, n in entry.get("rejected_by_reason", {}).items():
            counted[(stage, KIND_REJECTED, reason)] = n
        for exc_type, n in entry.get("errors_by_type", {}).items():
            counted[(stage, KIND_ERROR, exc_type)] = n
    problems = []
    for key in sorted(set(rows) | set(counted)):
        if rows.get(key, 0) != counted.get(key, 0):
            stage, kind, reason = key
            problems.append(f"{stage} {kind} {reason}: counter {counted.get(key, 0)} != rows {rows.get(key, 0)}")
    return problems


def build_manifest(
    *,
    run_id: str,
    inputs: list[str],
    output: str,
    runner: str,
    config: Config,
    counters: Mapping[tuple[str, str], int],
    written: Mapping[str, Any],
    started: str,
    finished: str,
    wall_seconds: float,
) -> dict[str, Any]:
    funnel = stage_funnel(config, counters, written)
    decision_counts = written["decision_counts"]
    page_rows = {KIND_REJECTED: 0, KIND_ERROR: 0}
    # Image rows (subject "image") are not pages: counted apart, by stage, kind and reason.
    image_rows: dict[str, int] = defaultdict(int)
    for (subject, stage, kind, reason), n in decision_counts.items():
        if subject == SUBJECT_PAGE:
            page_rows[kind] += n
        else:
            image_rows[f"{stage}.{kind}.{reason}"] += n
    pages = funnel["read"]["in"]
    totals = {
        "pages": pages,
        "kept": written["kept"],
        "rejected": page_rows[KIND_REJECTED],
        "errors": page_rows[KIND_ERROR],
    }
    totals["conserved"] = totals["pages"] == totals["kept"] + totals["rejected"] + totals["errors"]
    read_counters = counters_by_namespace(counters).get("read", {})
    return {
        "run_id": run_id,
        "started": started,
        "finished": finished,
        "wall_seconds": round(wall_seconds, 3),
        "inputs": inputs,
        "output": output,
        "runner": runner,
        "stages_run": [s for s in STAGE_NAMES if funnel.get(s, {"enabled": True})["enabled"]],
        "stages_off": [s for s in STAGE_NAMES if not funnel.get(s, {"enabled": True})["enabled"]],
        "always_on": list(ALWAYS_ON),
        "totals": totals,
        "stages": funnel,
        "records": {
            "by_type": {k.removeprefix("records."): v for k, v in sorted(read_counters.items()) if k.startswith("records.")},
            "by_mime": {k.removeprefix("mime."): v for k, v in sorted(read_counters.items()) if k.startswith("mime.")},
            "images_captured": read_counters.get("images", 0),
        },
        "tables": {name: written[name] for name in TABLES},
        "image_decisions": dict(sorted(image_rows.items())),
        "counter_mismatches": check_counters(funnel, decision_counts),
        "safety": safety_summary(config, counters),
        "schema_version": SCHEMA_VERSION,
        "config": config.to_dict(),
        "config_sha256": config.digest(),
        "versions": package_versions(),
    }


def format_funnel(manifest: Mapping[str, Any]) -> str:
    """The funnel as a plain-text table, with the reasons each stage removed by."""
    header = f"{'stage':<11} {'in':>8} {'kept':>8} {'rejected':>9} {'errors':>7} {'ms/doc':>8}"
    lines = [header, "-" * len(header)]
    for stage, entry in manifest["stages"].items():
        if not entry.get("enabled"):
            lines.append(f"{stage:<11} {'(off)':>8}")
            continue
        if stage == "recycle":
            lines.append(
                f"{stage:<11} {entry['pairs']:>8} pairs from {entry['recycled_documents']} rejected"
                f" (+{entry['kept_documents']} kept) documents; {entry['candidates']} images considered"
            )
            for reason, n in entry["candidates_rejected_by_reason"].items():
                lines.append(f"{'':<11}   dropped {reason}: {n}")
            continue
        per_doc = 1000 * entry["seconds"] / entry["in"] if entry.get("in") and "seconds" in entry else 0.0
        lines.append(
            f"{stage:<11} {entry['in']:>8} {entry['kept']:>8} {entry['rejected']:>9} {entry['errors']:>7} {per_doc:>8.2f}"
        )
        for reason, n in entry.get("rejected_by_reason", {}).items():
            lines.append(f"{'':<11}   rejected {reason}: {n}")
        for exc_type, n in entry.get("errors_by_type", {}).items():
            lines.append(f"{'':<11}   error {exc_type}: {n}")
    t = manifest["totals"]
    status = "holds" if t["conserved"] else "VIOLATED"
    lines.append("-" * len(header))
    lines.append(
        f"pages {t['pages']} = kept {t['kept']} + rejected {t['rejected']} + errors {t['errors']}  (conservation {status})"
    )
    records = manifest["records"]
    if records["by_type"]:
        lines.append("WARC records: " + ", ".join(f"{k} {v}" for k, v in records["by_type"].items()))
    lines.append(f"images captured in the WARCs: {records['images_captured']}")
    uncaptured = sum(n for key, n in manifest.get("image_decisions", {}).items() if key.endswith(f".{IMAGE_NOT_CAPTURED}"))
    if uncaptured:
        lines.append(
            f"images neither in the WARCs nor fetched: {uncaptured} ({IMAGE_NOT_CAPTURED});"
            " --set images.http=true fetches them over HTTP"
        )
    lines += format_safety(manifest)
    return "\n".join(lines)
