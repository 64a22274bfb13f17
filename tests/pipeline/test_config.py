import pytest

from mmcurate.pipeline.config import ConfigError, load_config


def test_defaults_and_digest_is_stable():
    a, b = load_config(), load_config()
    assert a.run.stages == ("heuristics", "dedup")
    assert a.heuristics.min_words == 50 and a.heuristics.min_images == 1
    assert a.digest() == b.digest()
    assert load_config(overrides=["heuristics.min_words=10"]).digest() != a.digest()


def test_file_then_overrides(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("heuristics:\n  min_words: 120\n  min_images: 0\nwrite:\n  compression: snappy\n")
    config = load_config(path, ["heuristics.min_words=30"])
    assert (config.heuristics.min_words, config.heuristics.min_images, config.write.compression) == (30, 0, "snappy")


def test_toml_file(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('[run]\nstages = ["dedup"]\n[extract]\ntimeout_seconds = 5\n')
    config = load_config(path)
    assert config.run.stages == ("dedup",) and config.extract.timeout_seconds == 5


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["heuristics.min_wrds=3"], "heuristics.min_wrds: unknown key"),
        (["heuristic.min_words=3"], "unknown section 'heuristic'"),
        (["heuristics.min_words=lots"], "heuristics.min_words: Input should be a valid integer"),
        (["heuristics.min_words=-1"], "heuristics.min_words: Input should be greater than or equal to 0"),
        (["write.compression=lz5"], "write.compression"),
        (["run.stages=heuristics,bogus"], "unknown stage 'bogus'"),
        (["run.stages=recycle"], "stage 'recycle' needs stage 'images'"),
        (["min_words"], "expected section.key=value"),
    ],
)
def test_bad_values_fail_naming_the_key(overrides, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_config(overrides=overrides)


def test_unknown_key_in_file_names_it(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("dedup:\n  exact_text: true\n  fuzzy: 3\n")
    with pytest.raises(ConfigError, match="dedup.fuzzy: unknown key"):
        load_config(path)


def test_missing_config_file_names_the_path(tmp_path):
    with pytest.raises(ConfigError, match="config file not found: .*nope.yaml"):
        load_config(tmp_path / "nope.yaml")


def test_stage_order_follows_the_funnel():
    assert load_config(overrides=["run.stages=dedup,heuristics"]).run.stages == ("heuristics", "dedup")
    assert load_config(overrides=["run.stages="]).run.stages == ()


def test_nested_heuristics_sections_take_dotted_overrides(tmp_path):
    config = load_config(overrides=["heuristics.gopher_quality.min_words=80", "heuristics.language.allowed=[en, de]"])
    assert config.heuristics.gopher_quality.min_words == 80
    assert config.heuristics.language.allowed == ("en", "de")
    path = tmp_path / "c.yaml"
    path.write_text("heuristics:\n  fineweb:\n    enabled: false\n")
    assert load_config(path, ["heuristics.fineweb.short_line_chars=20"]).heuristics.fineweb.enabled is False
    with pytest.raises(ConfigError, match="heuristics.gopher_quality.min_wrds: unknown key"):
        load_config(overrides=["heuristics.gopher_quality.min_wrds=3"])
    with pytest.raises(ConfigError, match="'heuristics.min_words' is not a mapping"):
        load_config(overrides=["heuristics.min_words=3", "heuristics.min_words.x=1"])
