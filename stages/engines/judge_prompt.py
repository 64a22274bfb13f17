"""What the VLM judge is asked and how its answer is read: the rubric prompt (a
versioned file shipped as package data, ``filters/data/judge_rubric_v1.txt``), the
chat messages (the document's text plus its first images as downscaled JPEG
``data:`` URLs), the answer parser (one JSON object ``{"score": 1-5, "reason":
"..."}``, else ``JudgeAnswerError``) and the cache key of an answer.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
from dataclasses import dataclass
from typing import Sequence

from mmcurate.schemas import Document
from mmcurate.stages.engines.files import data_file

SCORE_RANGE = (1, 5)
_JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$")


class JudgeAnswerError(ValueError):
    """The endpoint answered, but not with the JSON object the rubric asks for."""


@dataclass(frozen=True)
class Prompt:
    version: str
    text: str


def load_prompt(name: str) -> Prompt:
    """The rubric file ``name`` (under filters/data/, or a path); its first line
    ``version: N`` names the version that keys the cache."""
    path = data_file(name)
    if not path.is_file():
        raise FileNotFoundError(f"scoring.judge.prompt: file not found: {name}")
    text = path.read_text(encoding="utf-8")
    first, _, rest = text.partition("\n")
    if not first.startswith("version:"):
        raise ValueError(f"scoring.judge.prompt: {path} must start with a 'version: N' line")
    return Prompt(version=first.removeprefix("version:").strip(), text=rest.strip())


def parse_answer(content: str) -> tuple[float, str]:
    """(score, reason) from the model's answer; JudgeAnswerError when it is not one
    JSON object with an integer score within the rubric's range."""
    stripped = _FENCE.sub("", content.strip())
    match = _JSON_OBJECT.search(stripped)
    if not match:
        raise JudgeAnswerError(f"no JSON object in the answer: {content[:200]!r}")
    try:
        data = json.loads(match.group(0))
    except json.JSONDecodeError as exc:
        raise JudgeAnswerError(f"invalid JSON ({exc.msg}): {content[:200]!r}") from None
    score = data.get("score") if isinstance(data, dict) else None
    if isinstance(score, bool) or not isinstance(score, (int, float)) or score != int(score):
        raise JudgeAnswerError(f"'score' is not an integer: {content[:200]!r}")
    if not SCORE_RANGE[0] <= score <= SCORE_RANGE[1]:
        raise JudgeAnswerError(f"'score' {score} is outside {SCORE_RANGE[0]}-{SCORE_RANGE[1]}: {content[:200]!r}")
    return float(score), str(data.get("reason", ""))


def document_hash(doc: Document, image_ids: Sequence[str]) -> str:
    """What the judge sees: the text and the images sent, hashed."""
    digest = hashlib.sha256(doc.text.encode("utf-8", "surrogatepass"))
    for image_id in image_ids:
        digest.update(b"\x00" + image_id.encode())
    return digest.hexdigest()


def cache_key(doc_hash: str, prompt_version: str, model: str) -> str:
    return hashlib.sha256(f"{doc_hash}\x00{prompt_version}\x00{model}".encode()).hexdigest()


def data_url(payload: bytes, max_side: int) -> str:
    """The image downscaled to ``max_side`` (longer side), as a JPEG data URL."""
    from PIL import Image

    with Image.open(io.BytesIO(payload)) as image:
        image.seek(0)
        rgb = image.convert("RGB")
        rgb.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)
        buffer = io.BytesIO()
        rgb.save(buffer, format="JPEG", quality=85)
    return "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def build_messages(prompt: Prompt, text: str, images: Sequence[str]) -> list[dict]:
    content: list[dict] = [{"type": "text", "text": f"Document text:\n{text}"}]
    content += [{"type": "image_url", "image_url": {"url": url}} for url in images]
    return [{"role": "system", "content": prompt.text}, {"role": "user", "content": content}]
