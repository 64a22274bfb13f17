from pathlib import Path

import pytest

from mmcurate.pipeline.cli import main


def test_help_documents_every_flag(capsys):
    assert main(["run", "--help"]) == 0
    text = capsys.readouterr().out
    for flag in ("--output", "--config", "--set", "--stages", "--runner-preset", "--quiet", "--verbose", "Beam flags"):
        assert flag in text


def test_help_states_the_default_stages_the_run_uses(capsys):
    from mmcurate.pipeline.config import RunConfig

    assert main(["run", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert RunConfig().stages == ("heuristics", "dedup")
    assert "stages to run (default: run.stages of the config, heuristics,dedup;" in out


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
    from mmcurate.pipeline.cli import _run_parser
    from mmcurate.pipeline.command_start import split_beam_args

    mine, beam_args = split_beam_args(
        ["a.warc", "--runner", "DirectRunner", "--output", "o", "--direct_num_workers=2", "b.warc"], _run_parser()
    )
    assert mine == ["a.warc", "--output", "o", "b.warc"]
    assert beam_args == ["--runner", "DirectRunner", "--direct_num_workers=2"]


# -- what the run was given is checked before the pipeline starts: exit 2, one line ----------


def _bad_inputs(tmp: "Path") -> dict[str, tuple[list[str], str]]:
    """name -> (extra arguments, the line stderr must hold), all built here."""
    (tmp / "binary.yaml").write_bytes(bytes(range(256)) * 4)
    (tmp / "nul.toml").write_bytes(b"[read]\x00\n")
    (tmp / "not-a-model.bin").write_bytes(b"this is a text file, not fastText\n")
    (tmp / "not-a-checkpoint.pt").write_bytes(b"<html>404 Not Found</html>")
    (tmp / "half.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00[not json")
    (tmp / "blocklists").mkdir()
    (tmp / "a-file").write_text("x")
    missing = tmp / "missing"
    cases = {
        "binary config": (["--config", str(tmp / "binary.yaml")], f"config file {tmp / 'binary.yaml'}: not a text file"),
        "config with NUL": (["--config", str(tmp / "nul.toml")], "not a text file (it holds NUL bytes)"),
        "config that is a directory": (["--config", str(tmp)], f"config file {tmp}: not a file"),
        "missing extractor module": (
            ["--set", "extract.extractor=no_such_package.module:extract"],
            "extract.extractor: 'no_such_package.module:extract' cannot be loaded: ModuleNotFoundError",
        ),
        "missing blocklist": (
            ["--set", f"heuristics.urls.domain_blocklists=[{missing / 'domains.txt'}]"],
            f"heuristics.urls.domain_blocklists: file not found: {missing / 'domains.txt'}",
        ),
        "blocklist that is a directory": (
            ["--set", f"heuristics.urls.substring_blocklists=[{tmp / 'blocklists'}]"],
            f"heuristics.urls.substring_blocklists: {tmp / 'blocklists'} is a directory, not a file",
        ),
        "missing language model": (
            ["--set", f"heuristics.language.model_path={missing / 'lid.176.bin'}"],
            f"heuristics.language.model_path: file not found: {missing / 'lid.176.bin'}",
        ),
        "language model of the wrong format": (
            ["--set", f"heuristics.language.model_path={tmp / 'not-a-model.bin'}"],
            "heuristics.language.model_path: " + str(tmp / "not-a-model.bin") + " is not a fastText model",
        ),
        "missing quality model": (
            ["--stages", "heuristics,quality", "--set", f"quality.model_path={missing / 'q.bin'}"],
            f"quality.model_path: file not found: {missing / 'q.bin'}",
        ),
        "quality model of the wrong format": (
            ["--stages", "heuristics,quality", "--set", f"quality.model_path={tmp / 'not-a-model.bin'}"],
            "quality.model_path: " + str(tmp / "not-a-model.bin") + " is not a fastText model",
        ),
        "missing CLIP checkpoint": (
            ["--stages", "images,scoring", "--set", f"scoring.checkpoint={missing / 'clip.pt'}"],
            f"scoring.checkpoint: file not found: {missing / 'clip.pt'}",
        ),
        "CLIP checkpoint of the wrong format": (
            ["--stages", "images,scoring", "--set", f"scoring.checkpoint={tmp / 'not-a-checkpoint.pt'}"],
            "scoring.checkpoint: " + str(tmp / "not-a-checkpoint.pt") + " is not a torch checkpoint",
        ),
        "broken safetensors": (
            ["--stages", "images,scoring", "--set", f"scoring.checkpoint={tmp / 'half.safetensors'}"],
            "is not a safetensors file",
        ),
        "output that is a file": (["--output", str(tmp / "a-file")], f"--output {tmp / 'a-file'}: exists and is not a directory"),
        "output under a file": (
            ["--output", str(tmp / "a-file" / "out")],
            f"--output {tmp / 'a-file' / 'out'}: cannot be created: {tmp / 'a-file'} is not a directory",
        ),
        "unknown runner": (["--runner", "NoSuchRunner"], "--runner NoSuchRunner: not a Beam runner (known: "),
        "runner class that does not exist": (["--runner=no_such_pkg.runners.FastRunner"], "--runner no_such_pkg.runners.FastRunner: module no_such_pkg.runners is not installed"),
        "bad Beam flag value": (["--direct_num_workers", "many"], "Beam flag: argument --direct_num_workers: invalid int value: 'many'"),
        "Beam flag value not among its choices": (
            ["--direct_running_mode=sideways"],
            "Beam flag: argument --direct_running_mode: invalid choice: 'sideways'",
        ),
    }
    if Path("/proc/self/mem").is_file():  # a file even root cannot read() from the start
        cases["unreadable config"] = (["--config", "/proc/self/mem"], "config file /proc/self/mem: cannot be read")
    if Path("/proc").is_dir():  # no file can be created there, not even by root
        cases["output not writable"] = (["--output", "/proc/mmcurate-out"], "--output /proc/mmcurate-out: not writable (cannot create it under /proc)")
    return cases


_CASES = [
    "binary config", "config with NUL", "config that is a directory", "unreadable config", "missing extractor module",
    "missing blocklist", "blocklist that is a directory", "missing language model", "language model of the wrong format",
    "missing quality model", "quality model of the wrong format", "missing CLIP checkpoint",
    "CLIP checkpoint of the wrong format", "broken safetensors", "output that is a file", "output under a file",
    "output not writable", "unknown runner", "runner class that does not exist", "bad Beam flag value",
    "Beam flag value not among its choices",
]


@pytest.mark.parametrize("case", _CASES)
def test_bad_run_input_is_one_line_and_exit_2_before_the_pipeline_starts(case, tmp_path, capsys, monkeypatch):
    import mmcurate.pipeline.run as run_module

    cases = _bad_inputs(tmp_path)
    if case not in cases:
        pytest.skip(f"{case}: needs Linux /proc")
    extra, expected = cases[case]
    warc = tmp_path / "in.warc"
    warc.write_bytes(b"")

    def never(*args, **kwargs):
        raise AssertionError("the pipeline must not start")

    monkeypatch.setattr(run_module, "run_curation", never)
    args = ["run", str(warc), "--quiet"]
    if "--output" not in extra:
        args += ["--output", str(tmp_path / "out")]
    assert main(args + extra) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("mmcurate: ") and expected in lines[0], lines[0]
    assert not (tmp_path / "out").exists()


def test_good_inputs_pass_the_checks(tmp_path):
    """The shipped models, a real blocklist and a fresh output directory pass."""
    from mmcurate.pipeline.command_start import beam_option_parser
    from mmcurate.pipeline.config import load_config
    from mmcurate.pipeline.preflight import check_run

    blocklist = tmp_path / "domains.txt"
    blocklist.write_text("# domains\nspam.example\n")
    config = load_config(None, [f"heuristics.urls.domain_blocklists=[{blocklist}]", "run.stages=heuristics,quality"])
    check_run(config, str(tmp_path / "new" / "out"), ["--runner=DirectRunner", "--direct_num_workers", "2"], beam_option_parser)
    assert not (tmp_path / "new").exists()  # checking creates nothing
