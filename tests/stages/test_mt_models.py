"""The shipped MT models decide as they should on real text: a passage translated by
machine scores above the same passage translated by people, in every language."""

from pathlib import Path

import pytest

from mmcurate.filters.quality import normalize_text
from mmcurate.stages.engines.text_classifiers import default_mt_dir, load_text_model

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "mt"
LANGUAGES = ["cs", "de", "en", "he", "ja", "ru", "uk", "zh"]


@pytest.mark.parametrize("language", LANGUAGES)
def test_machine_translation_scores_above_the_human_one(language):
    model = load_text_model(str(default_mt_dir() / f"{language}.npz"))
    texts = {kind: normalize_text((FIXTURES / f"{language}.{kind}.txt").read_text(encoding="utf-8"))
             for kind in ("human", "nllb-greedy", "online-b")}
    scores = dict(zip(texts, model.probabilities(list(texts.values()))))
    assert scores["nllb-greedy"] > scores["human"] and scores["online-b"] > scores["human"], scores
    # scored one at a time or in a batch, a text gets the same score
    assert model.probabilities([texts["human"]]) == pytest.approx([scores["human"]], abs=1e-12)

