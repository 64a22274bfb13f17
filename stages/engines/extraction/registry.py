"""The extractor named in ``ExtractConfig.extractor``: ``"trafilatura"``, or a dotted
path ``"package.module:callable"`` with the signature of
``mmcurate.stages.engines.extraction.trafilatura_adapter.extract_trafilatura``
(``(html, url, config) -> Extraction``), so a faster extractor can replace this
one without touching the stage."""

from __future__ import annotations

import importlib

from mmcurate.stages.engines.extraction.result import Extractor
from mmcurate.stages.engines.extraction.trafilatura_adapter import extract_trafilatura


TRAFILATURA = "trafilatura"


def load_extractor(name: str) -> Extractor:
    """The extractor named ``"trafilatura"`` or by a dotted path ``"pkg.module:callable"``."""
    if name == TRAFILATURA:
        return extract_trafilatura
    module_name, sep, attr = name.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"extractor {name!r}: expected {TRAFILATURA!r} or a dotted path 'package.module:callable'")
    module = importlib.import_module(module_name)
    target: object = module
    for part in attr.split("."):
        target = getattr(target, part)
    if not callable(target):
        raise TypeError(f"extractor {name!r} is not callable")
    return target
