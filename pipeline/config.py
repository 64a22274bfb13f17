"""One typed configuration tree, a section per stage, assembled from the stages' own
config models (``stages.config``).

Loaded from a YAML or TOML file, then overridden by ``--set section.key=value``.
Unknown keys and bad values fail at load time with a message that names the key.
Each stage receives only its own section.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from pathlib import Path
from typing import Any, Mapping, Optional

import yaml
from pydantic import ValidationError, field_validator

from mmcurate.stages.config import (  # noqa: F401  (re-exported: the sections are part of the tree's API)
    C4Config,
    DedupConfig,
    ExtractConfig,
    FineWebConfig,
    FlaggedWordsConfig,
    GopherQualityConfig,
    GopherRepetitionConfig,
    HeuristicsConfig,
    ImagesConfig,
    JudgeConfig,
    LanguageConfig,
    NodesConfig,
    NsfwConfig,
    ObelicsConfig,
    PiiConfig,
    PlanConfig,
    QualityConfig,
    QualityLlmConfig,
    QualityMtConfig,
    QualityRewriteConfig,
    ReadConfig,
    RecycleConfig,
    SafetyConfig,
    ScoringConfig,
    SurvivorCriterion,
    UnsafeUrlsConfig,
    UrlConfig,
    WriteConfig,
)
from mmcurate.stages.config.base import Section as _Section

# The stage names are a contract: config sections, CLI flags, manifest keys, metric
# namespaces and the `stage` column of decision rows all use them.
STAGE_NAMES = ("read", "extract", "heuristics", "dedup", "quality", "images", "scoring", "recycle", "write")
ALWAYS_ON = ("read", "extract", "write")
FILTER_STAGES = tuple(s for s in STAGE_NAMES if s not in ALWAYS_ON)
# Filtering stages this version implements; the others are named by the contract
# but not built yet, and asking for them is an error rather than a silent no-op.
IMPLEMENTED_FILTER_STAGES = ("heuristics", "dedup", "quality", "images", "scoring", "recycle")
# Implemented stages that run only when --stages (or run.stages) names them.
# `images` is opt-in: it fetches and decodes every image a document references,
# the costliest step of the funnel (and over HTTP when images.http is on).
# `quality` is opt-in: its shipped classifiers are small stand-ins trained on
# news, stories and Wikipedia text (docs/stages.md); a corpus deserves models trained on it.
# `scoring` and `recycle` work on retrieved images, so they are opt-in with `images`
# and need it (STAGE_REQUIRES); scoring stays off until scoring.checkpoint is set.
OPT_IN_STAGES = ("quality", "images", "scoring", "recycle")
STAGE_REQUIRES = {"scoring": ("images",), "recycle": ("images",)}


class ConfigError(ValueError):
    """A configuration problem, with a message that names the offending key or path."""



class RunConfig(_Section):
    # Filtering stages to run; read, extract and write always run.
    stages: tuple[str, ...] = tuple(s for s in IMPLEMENTED_FILTER_STAGES if s not in OPT_IN_STAGES)

    @field_validator("stages", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = [s.strip() for s in value.split(",") if s.strip()]
        return value

    @field_validator("stages")
    @classmethod
    def _known(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            if name in ALWAYS_ON:
                continue
            if name not in STAGE_NAMES:
                raise ValueError(f"unknown stage {name!r}; stages are {', '.join(STAGE_NAMES)}")
            if name not in IMPLEMENTED_FILTER_STAGES:
                raise ValueError(
                    f"stage {name!r} is not implemented in this version; "
                    f"available filtering stages: {', '.join(IMPLEMENTED_FILTER_STAGES)}"
                )
        for name, needed in STAGE_REQUIRES.items():
            missing = [n for n in needed if name in value and n not in value]
            if missing:
                raise ValueError(f"stage {name!r} needs stage {missing[0]!r}: add it to run.stages (--stages)")
        # Keep funnel order whatever order was given.
        return tuple(s for s in FILTER_STAGES if s in value)


class Config(_Section):
    run: RunConfig = RunConfig()
    read: ReadConfig = ReadConfig()
    extract: ExtractConfig = ExtractConfig()
    heuristics: HeuristicsConfig = HeuristicsConfig()
    dedup: DedupConfig = DedupConfig()
    quality: QualityConfig = QualityConfig()
    images: ImagesConfig = ImagesConfig()
    scoring: ScoringConfig = ScoringConfig()
    recycle: RecycleConfig = RecycleConfig()
    safety: SafetyConfig = SafetyConfig()
    write: WriteConfig = WriteConfig()
    plan: PlanConfig = PlanConfig()

    def enabled(self, stage: str) -> bool:
        return stage in ALWAYS_ON or stage in self.run.stages

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def digest(self) -> str:
        """sha256 of the resolved config, stamped on the run manifest."""
        canonical = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()


def _read_file(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise ConfigError(f"config file not found: {path}")
    if not path.is_file():
        raise ConfigError(f"config file {path}: not a file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config file {path}: not a text file (byte {exc.start} is not UTF-8)") from None
    except OSError as exc:
        raise ConfigError(f"config file {path}: cannot be read: {exc.strerror or exc}") from None
    if "\x00" in text:
        raise ConfigError(f"config file {path}: not a text file (it holds NUL bytes)")
    try:
        if path.suffix == ".toml":
            data = tomllib.loads(text)
        else:
            data = yaml.safe_load(text)
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: not valid {'TOML' if path.suffix == '.toml' else 'YAML'}: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of sections")
    return data


def _apply_override(data: dict[str, Any], assignment: str) -> None:
    key, sep, raw = assignment.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"--set {assignment!r}: expected section.key=value")
    parts = key.split(".")
    if len(parts) < 2 or not all(parts):
        raise ConfigError(f"--set {assignment!r}: expected section.key=value or section.sub.key=value, got key {key!r}")
    section, *subs, name = parts
    if section not in Config.model_fields:
        raise ConfigError(f"--set {key}: unknown section {section!r}; sections are {', '.join(Config.model_fields)}")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    target = data.setdefault(section, {})
    path = section
    for sub in subs:
        if not isinstance(target, dict):
            raise ConfigError(f"--set {key}: {path!r} is not a mapping")
        target = target.setdefault(sub, {})
        path += f".{sub}"
    if not isinstance(target, dict):
        raise ConfigError(f"--set {key}: {path!r} is not a mapping")
    target[name] = value


def _format_errors(exc: ValidationError, source: str) -> str:
    lines = [f"invalid configuration ({source}):"]
    for err in exc.errors():
        key = ".".join(str(p) for p in err["loc"])
        if err["type"] == "extra_forbidden":
            lines.append(f"  {key}: unknown key")
        else:
            lines.append(f"  {key}: {err['msg']} (got {err.get('input')!r})")
    return "\n".join(lines)


def load_config(path: Optional[str | Path] = None, overrides: tuple[str, ...] | list[str] = ()) -> Config:
    """The resolved config: defaults, then the file, then each ``--set`` in order."""
    data: dict[str, Any] = _read_file(Path(path)) if path else {}
    for assignment in overrides:
        _apply_override(data, assignment)
    source = f"{path}" if path else "defaults"
    if overrides:
        source += " + --set"
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_format_errors(exc, source)) from None


def config_from_mapping(data: Mapping[str, Any]) -> Config:
    try:
        return Config.model_validate(dict(data))
    except ValidationError as exc:
        raise ConfigError(_format_errors(exc, "mapping")) from None
