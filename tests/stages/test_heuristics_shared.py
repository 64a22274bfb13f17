"""The language identifier is loaded once per worker process (Beam's ``Shared``): every
DoFn instance of the heuristics stage on a worker's threads holds the same copy."""

from __future__ import annotations

import threading

from mmcurate.stages import heuristics
from mmcurate.stages.config import HeuristicsConfig


def test_steps_built_on_several_threads_share_one_identifier():
    config = HeuristicsConfig()
    held = []

    def build() -> None:
        steps = heuristics.build_steps(config)
        held.append((steps, heuristics.shared_identifier(config.language.identifier, config.language.model_path)))

    threads = [threading.Thread(target=build) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    identifiers = {id(identifier) for _, identifier in held}
    assert len(held) == 4 and len(identifiers) == 1


def test_another_setting_gets_its_own_copy():
    first = heuristics.shared_identifier("lid176")
    assert heuristics.shared_identifier("lid176") is first
    assert heuristics.shared_identifier("cld2") is not first
