"""The config models of the stages, one module per stage (``read``, ``extract``, ...).

Each stage imports its own section from here; ``pipeline.config`` assembles the
sections into the one ``Config`` tree and loads it from files and ``--set``.
"""

from mmcurate.stages.config.dedup import DedupConfig, SurvivorCriterion
from mmcurate.stages.config.extract import ExtractConfig
from mmcurate.stages.config.heuristics import (
    LanguageConfig,
    UrlConfig,
    NodesConfig,
    GopherQualityConfig,
    GopherRepetitionConfig,
    C4Config,
    FineWebConfig,
    ObelicsConfig,
    FlaggedWordsConfig,
    HeuristicsConfig,
)
from mmcurate.stages.config.images import ImagesConfig
from mmcurate.stages.config.plan import PlanConfig
from mmcurate.stages.config.quality import QualityMtConfig, QualityLlmConfig, QualityRewriteConfig, QualityConfig
from mmcurate.stages.config.read import ReadConfig
from mmcurate.stages.config.recycle import RecycleConfig
from mmcurate.stages.config.safety import UnsafeUrlsConfig, PiiConfig, SafetyConfig
from mmcurate.stages.config.scoring import JudgeConfig, NsfwConfig, ScoringConfig
from mmcurate.stages.config.write import WriteConfig
from mmcurate.stages.config.base import Section

__all__ = [
    "C4Config",
    "DedupConfig",
    "ExtractConfig",
    "FineWebConfig",
    "FlaggedWordsConfig",
    "GopherQualityConfig",
    "GopherRepetitionConfig",
    "HeuristicsConfig",
    "ImagesConfig",
    "JudgeConfig",
    "LanguageConfig",
    "NodesConfig",
    "NsfwConfig",
    "ObelicsConfig",
    "PiiConfig",
    "PlanConfig",
    "QualityConfig",
    "QualityLlmConfig",
    "QualityMtConfig",
    "QualityRewriteConfig",
    "ReadConfig",
    "RecycleConfig",
    "SafetyConfig",
    "ScoringConfig",
    "Section",
    "SurvivorCriterion",
    "UnsafeUrlsConfig",
    "UrlConfig",
    "WriteConfig",
]
