"""``mmcurate config --defaults`` and the example configs in examples/."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel, Field

from mmcurate.pipeline import config_doc
from mmcurate.pipeline.cli import main
from mmcurate.pipeline.config import Config, load_config

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_defaults_yaml_loads_back_to_the_default_config(capsys):
    assert main(["config", "--defaults"]) == 0
    text = capsys.readouterr().out
    assert yaml.safe_load(text) == Config().model_dump(mode="json")
    assert load_config(None, []).digest() == Config.model_validate(yaml.safe_load(text)).digest()


def test_every_key_has_a_comment_and_it_sits_above_the_key():
    missing = config_doc.undocumented()
    assert missing == [], f"add a comment above each of these fields in stages/config/<stage>.py: {missing}"
    lines = config_doc.defaults_yaml().splitlines()
    # heuristics.language.min_score: unset by default (each identifier's own threshold)
    at = lines.index("    min_score: null")
    above = " ".join(line.strip().lstrip("# ") for line in lines[at - 4 : at])
    assert above.startswith("Minimum score of the top language group. Unset: the identifier's own default, 0.65")
    assert "FineWeb, Penedo et al. 2024" in above
    # A section's comment is its model's docstring.
    assert "  # Gopher quality rules; defaults from Rae et al. 2021, appendix A.1.1." in lines
    # Every key line is preceded by a comment line (or by its section's comment).
    for i, line in enumerate(lines):
        if line.strip() and not line.lstrip().startswith("#") and ":" in line and line.startswith("  "):
            assert lines[i - 1].lstrip().startswith("#"), line


def test_a_field_description_wins_over_the_comment():
    class Section(BaseModel):
        # the comment
        described: int = Field(default=1, description="the description")
        # only a comment
        commented: int = 2
        trailing: int = 3  # at the end of the line
        bare: int = 4
        enabled: bool = True

    assert config_doc.describe(Section, "described") == "the description"
    assert config_doc.describe(Section, "commented") == "only a comment"
    assert config_doc.describe(Section, "trailing") == "at the end of the line"
    assert config_doc.describe(Section, "bare") == ""
    assert config_doc.describe(Section, "enabled") == config_doc.ENABLED  # a section's switch


def test_resolve_prints_a_file_with_overrides(capsys):
    assert main(["config", "--resolve", str(EXAMPLES / "obelics-exact.yaml"), "--set", "write.num_shards=4"]) == 0
    resolved = yaml.safe_load(capsys.readouterr().out)
    assert resolved["write"]["num_shards"] == 4 and resolved["heuristics"]["gopher_quality"]["enabled"] is False
    assert main(["config", "--resolve", "--set", "heuristics.nope=1"]) == 2
    assert "heuristics.nope: unknown key" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["local-quick-look.yaml", "dataflow-crawl.yaml", "obelics-exact.yaml"])
def test_example_configs_load(name):
    config = load_config(EXAMPLES / name, [])
    assert config.run.stages  # each names its stages


def test_example_configs_say_what_they_promise():
    quick = load_config(EXAMPLES / "local-quick-look.yaml", [])
    assert not quick.images.http and "images" in quick.run.stages and quick.recycle.store_bytes
    crawl = load_config(EXAMPLES / "dataflow-crawl.yaml", [])
    assert crawl.images.http and crawl.images.store == "path" and crawl.images.image_dir.startswith("gs://")
    assert crawl.scoring.device == "cuda" and "scoring" in crawl.run.stages
    obelics = load_config(EXAMPLES / "obelics-exact.yaml", [])
    h = obelics.heuristics
    assert not (h.gopher_quality.enabled or h.gopher_repetition.enabled or h.fineweb.enabled or h.c4.enabled)
    assert (h.obelics.min_words, h.obelics.max_words, h.obelics.max_images) == (10, 2000, 30)
    assert (h.language.allowed, h.language.min_score) == (("en",), 0.8)
    assert obelics.images.formats == ("JPEG", "PNG", "WEBP") and obelics.images.max_aspect_ratio == 2.0


def test_run_help_states_the_real_default_stages(capsys):
    assert main(["run", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert f"(default: run.stages of the config, {','.join(Config().run.stages)};" in text
    assert "mmcurate config --defaults" in text
