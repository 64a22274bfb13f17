"""`make models` rebuilds what ships: each model, trained again from the shared data
as pipeline/build_models.py trains it, is the shipped file byte for byte."""

import hashlib
import subprocess

import pytest

from mmcurate.pipeline import build_models
from mmcurate.stages.engines.text_classifiers import shipped_models_dir

DATA = build_models.shared_data()


def _sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.slow
@pytest.mark.skipif(not DATA.is_dir(), reason=f"no shared data at {DATA}")
@pytest.mark.parametrize("name", ["llm.bin", "quality.bin", "mt/de.npz"])
def test_a_rebuild_is_the_shipped_model_byte_for_byte(tmp_path, name):
    argv = build_models.training_runs(DATA)[name]
    output = tmp_path / name
    subprocess.run(build_models.train_command(argv, output), check=True, capture_output=True)
    assert _sha256(output) == _sha256(shipped_models_dir() / name)
