"""The VLM judge against a small OpenAI-compatible server on 127.0.0.1: scores,
images as data URLs, malformed answers, 429 with retry, timeouts, and the response
cache (a second run sends no request)."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import time
from http.server import BaseHTTPRequestHandler

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to
from PIL import Image

from imagegen import jpeg
from localnet import send_json, start_server, stop_server
from mmcurate.filters import reasons
from mmcurate.pipeline.config import JudgeConfig, ScoringConfig
from mmcurate.schemas import Document, ImageNode, Provenance, TextNode
from mmcurate.schemas.rows import STATUS_OK, ImageRow
from mmcurate.stages.engines.judge_prompt import JudgeAnswerError, load_prompt, parse_answer
from mmcurate.stages.scoring.score_image_text import ScoreImageText

PICTURE = jpeg(3, (800, 600))
PICTURE_ID = hashlib.sha256(PICTURE).hexdigest()


class Server:
    """Answers by what the document text asks for: "score=N", "MALFORMED",
    "RATE" (429 on the first attempt), "SLOW" (answers after 2 s)."""

    def __init__(self):
        self.requests: list[dict] = []
        self.attempts: dict[str, int] = {}
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                text = body["messages"][1]["content"][0]["text"].removeprefix("Document text:\n")
                server.attempts[text] = server.attempts.get(text, 0) + 1
                if self.path != "/v1/chat/completions":
                    return send_json(self, 404, {"error": "not found"})
                if "RATE" in text and server.attempts[text] == 1:
                    return send_json(self, 429, {"error": "slow down"}, {"Retry-After": "0"})
                if "SLOW" in text:
                    time.sleep(2)
                if "MALFORMED" in text:
                    content = "This page looks fine to me, maybe a four."
                else:
                    score = int(text.split("score=")[1][0])
                    content = json.dumps({"score": score, "reason": "as asked"})
                send_json(self, 200, {"choices": [{"message": {"role": "assistant", "content": content}}]})

        self.httpd = start_server(Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self):
        stop_server(self.httpd)


@pytest.fixture
def server():
    s = Server()
    yield s
    s.close()


def doc(doc_id: str, text: str, image: bool = False) -> Document:
    nodes = [TextNode(text)] + ([ImageNode("https://img.example/p.jpg", alt="a picture", image_id=PICTURE_ID)] if image else [])
    return Document(doc_id=doc_id, url=f"https://site.example/{doc_id}", provenance=Provenance("t.warc", doc_id), nodes=tuple(nodes))


DOCS = [
    doc("good", "A fine article. score=5", image=True),
    doc("poor", "Buy now buy now. score=2"),
    doc("malformed", "MALFORMED page"),
    doc("rate", "RATE limited page. score=4"),
    doc("slow", "SLOW page. score=3"),
]
ROWS = [ImageRow(PICTURE_ID, ("https://img.example/p.jpg",), STATUS_OK, bytes=PICTURE)]


def run(config: ScoringConfig):
    p = TestPipeline()
    result = p | beam.Create(DOCS) | ScoreImageText(config, p | "Rows" >> beam.Create(ROWS))
    assert_that(
        result.kept | beam.Map(lambda d: (d.doc_id, d.signals["judge.score"], json.loads(d.metadata["judge.answer"])["score"])),
        equal_to([("good", 5.0, 5), ("rate", 4.0, 4)]),
        label="kept",
    )
    assert_that(result.rejected | beam.Map(lambda r: (r.doc_id, r.reason, r.value)), equal_to([("poor", reasons.JUDGE_LOW_SCORE, 2.0)]), label="rejected")
    assert_that(
        result.errors | beam.Map(lambda r: (r.doc_id, r.kind, r.reason)),
        equal_to([("malformed", "error", "JudgeAnswerError"), ("slow", "error", "JudgeRequestError")]),
        label="errors",
    )
    p.run().wait_until_finish()


def test_judge_scores_retries_fails_clearly_and_caches(server, tmp_path):
    judge = JudgeConfig(
        enabled=True, endpoint=server.url, model="tiny-vlm", min_score=3, timeout_seconds=0.5, retries=1,
        backoff_seconds=0.01, image_max_side=64, cache_dir=str(tmp_path / "cache"),
    )
    config = ScoringConfig(judge=judge)  # no checkpoint: the judge alone
    run(config)
    # 5 documents: rate needed 2 attempts, slow timed out twice.
    assert len(server.requests) == 7 and server.attempts["RATE limited page. score=4"] == 2
    first = next(r for r in server.requests if "score=5" in r["messages"][1]["content"][0]["text"])
    assert first["model"] == "tiny-vlm" and first["messages"][0]["content"] == load_prompt("judge_rubric_v1.txt").text
    image_url = first["messages"][1]["content"][1]["image_url"]["url"]
    assert image_url.startswith("data:image/jpeg;base64,")
    sent = Image.open(io.BytesIO(base64.b64decode(image_url.split(",", 1)[1])))
    assert max(sent.size) == 64  # downscaled from 800x600
    # Second run: every answered document comes from the cache; failures are retried.
    before = len(server.requests)
    run(config)
    texts = [r["messages"][1]["content"][0]["text"] for r in server.requests[before:]]
    assert sorted(set(texts)) == ["Document text:\nSLOW page. score=3"]


def test_second_run_makes_zero_requests_when_everything_was_answered(server, tmp_path):
    judge = JudgeConfig(enabled=True, endpoint=server.url, model="m", cache_dir=str(tmp_path / "cache"), backoff_seconds=0.01)
    docs = [doc("a", "One. score=4"), doc("b", "Two. score=5")]
    for _ in range(2):
        p = TestPipeline()
        result = p | beam.Create(docs) | ScoreImageText(ScoringConfig(judge=judge))
        assert_that(result.kept | beam.Map(lambda d: d.doc_id), equal_to(["a", "b"]))
        p.run().wait_until_finish()
        if _ == 0:
            assert len(server.requests) == 2
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    "content",
    ["no json here", '{"score": "five"}', '{"score": 9}', '{"score": 3.5}', '{"score": true}', "{not json}"],
)
def test_malformed_answers_are_clear_errors(content):
    with pytest.raises(JudgeAnswerError):
        parse_answer(content)


def test_answers_in_fences_parse():
    assert parse_answer('```json\n{"score": 2, "reason": "thin"}\n```') == (2.0, "thin")
