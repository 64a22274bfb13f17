"""What the report reads from a run's ``manifest.json``: config values, whether a
stage ran, the thresholds a signal was judged by, and the funnel's rows."""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional


def config_value(manifest: Mapping[str, Any], path: str) -> Any:
    """The value at dotted ``path`` of the config stamped in the manifest (None when absent)."""
    node: Any = manifest.get("config", {})
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def stage_ran(manifest: Mapping[str, Any], stage: str) -> bool:
    return bool(manifest.get("stages", {}).get(stage, {}).get("enabled"))


def thresholds(manifest: Mapping[str, Any], specs: Iterable[tuple[str, str, Optional[str]]]) -> list[tuple[float, str]]:
    """(value, label) of each numeric threshold in ``specs`` -- (config path, label,
    the stage or sub-section whose ``enabled`` gates it) -- that applied in this run."""
    out = []
    for path, label, gate in specs:
        if gate is not None:
            if gate in manifest.get("stages", {}):
                if not stage_ran(manifest, gate):
                    continue
            elif config_value(manifest, gate) is False:
                continue
        value = config_value(manifest, path)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out.append((float(value), label or path))
    return out


def funnel_rows(manifest: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per stage in funnel order: in, kept, each reason's count, errors."""
    rows = []
    for stage, entry in manifest.get("stages", {}).items():
        if not entry.get("enabled"):
            rows.append({"stage": stage, "enabled": False})
            continue
        rows.append(
            {
                "stage": stage,
                "enabled": True,
                "in": entry.get("in", 0),
                "kept": entry.get("kept", 0),
                "reasons": sorted(entry.get("rejected_by_reason", {}).items(), key=lambda kv: (-kv[1], kv[0])),
                "errors": sorted(entry.get("errors_by_type", {}).items(), key=lambda kv: (-kv[1], kv[0])),
                "seconds": entry.get("seconds"),
            }
        )
    return rows
