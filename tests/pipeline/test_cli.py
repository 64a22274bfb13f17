import pytest

from mmcurate.pipeline.cli import main


def test_help_documents_every_flag(capsys):
    assert main(["run", "--help"]) == 0
    text = capsys.readouterr().out
    for flag in ("--output", "--config", "--set", "--stages", "--runner-preset", "--quiet", "--verbose", "Beam flags"):
        assert flag in text


def test_missing_input_fails_before_running_naming_the_path(tmp_path, capsys):
    missing = tmp_path / "nowhere.warc.gz"
    assert main(["run", str(missing), "--output", str(tmp_path / "out")]) == 2
    assert f"input {missing}: no such file" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_bad_config_fails_naming_the_key(tmp_path, capsys):
    warc = tmp_path / "x.warc"
    warc.write_bytes(b"")
    assert main(["run", str(warc), "--output", str(tmp_path / "o"), "--set", "heuristics.min_wrds=1"]) == 2
    assert "heuristics.min_wrds: unknown key" in capsys.readouterr().err


def test_scoring_without_images_is_a_config_error_naming_the_key(tmp_path, capsys):
    assert main(["run", "x.warc", "--output", str(tmp_path), "--stages", "heuristics,scoring"]) == 2
    assert "run.stages: Value error, stage 'scoring' needs stage 'images'" in capsys.readouterr().err


def test_unknown_flag_is_an_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["run", "x.warc", "--output", str(tmp_path), "--no-such-flag", "3"])
    assert exc.value.code == 2
    assert "unknown option --no-such-flag" in capsys.readouterr().err


def test_beam_flags_pass_through_with_either_spelling():
    from mmcurate.pipeline.cli import _run_parser, split_beam_args

    mine, beam_args = split_beam_args(
        ["a.warc", "--runner", "DirectRunner", "--output", "o", "--direct_num_workers=2", "b.warc"], _run_parser()
    )
    assert mine == ["a.warc", "--output", "o", "b.warc"]
    assert beam_args == ["--runner", "DirectRunner", "--direct_num_workers=2"]
