"""The collector while ``mmcurate run`` starts (pipeline/start_up_gc.py): off until
the start-up settles, then on with the start-up's objects frozen; as it was after."""

from __future__ import annotations

import gc

import pytest

from mmcurate.pipeline import start_up_gc


@pytest.fixture(autouse=True)
def collector_as_found():
    enabled = gc.isenabled()
    yield
    gc.unfreeze()
    (gc.enable if enabled else gc.disable)()


def test_off_until_settled_then_on_with_the_start_up_frozen_and_unfrozen_after():
    gc.enable()
    assert gc.get_freeze_count() == 0
    with start_up_gc.paused() as settle:
        assert not gc.isenabled()
        kept = [object() for _ in range(10)]  # noqa: F841 (alive at settle)
        settle()
        assert gc.isenabled()
        frozen = gc.get_freeze_count()
        assert frozen > 0
        fresh = [[] for _ in range(100)]  # noqa: F841 (alive at the second call)
        settle()  # a second call freezes nothing more (frozen objects that die leave the count)
        assert gc.get_freeze_count() <= frozen
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0


def test_on_again_after_a_block_that_never_settled_or_raised():
    gc.enable()
    with pytest.raises(RuntimeError):
        with start_up_gc.paused():
            assert not gc.isenabled()
            raise RuntimeError("the command failed before its pipeline ran")
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0


def test_a_collector_turned_off_by_the_caller_is_left_off():
    gc.disable()
    with start_up_gc.paused() as settle:
        settle()
        assert not gc.isenabled()
        assert gc.get_freeze_count() == 0
    assert not gc.isenabled()


def test_objects_frozen_by_the_caller_stay_frozen():
    gc.enable()
    gc.freeze()
    assert gc.get_freeze_count() > 0
    with start_up_gc.paused() as settle:
        assert gc.isenabled()
        settle()
    # Frozen objects that die leave the count, so it is compared with 0: an unfreeze
    # would have emptied the permanent generation.
    assert gc.isenabled()
    assert gc.get_freeze_count() > 0


def test_mmcurate_run_starts_with_the_collector_off_and_runs_with_it_on(monkeypatch, tmp_path):
    from pathlib import Path

    import mmcurate.pipeline.run as run_module
    from mmcurate.pipeline import cli

    seen = {}
    start_command = cli.start_command

    def starting(*args, **kwargs):
        seen["starting"] = gc.isenabled()
        return start_command(*args, **kwargs)

    def running(*args, **kwargs):
        seen["running"] = gc.isenabled()
        seen["frozen"] = gc.get_freeze_count() > 0
        raise run_module.InputError("stopped before the pipeline")

    monkeypatch.setattr(cli, "start_command", starting)
    monkeypatch.setattr(run_module, "run_curation", running)
    gc.enable()
    warc = Path(__file__).resolve().parents[1] / "fixtures" / "warc" / "whirlwind.warc.gz"
    assert cli.main(["run", str(warc), "--output", str(tmp_path / "out"), "--quiet"]) == 2
    assert seen == {"starting": False, "running": True, "frozen": True}
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0
