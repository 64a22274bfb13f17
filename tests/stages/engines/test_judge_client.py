"""The VLM judge's HTTP client on its own, against a server on 127.0.0.1: the
retry policy (tenacity) waits for the server's Retry-After (seconds or an HTTP date) when it is longer than
the backoff, retries 5xx until the attempts run out, and fails a 4xx at once."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime, timezone
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler

import pytest

from localnet import send_json, start_server, stop_server
from mmcurate.stages.config import JudgeConfig
from mmcurate.stages.engines.judge_client import JudgeClient, JudgeRequestError
from mmcurate.stages.engines.judge_prompt import JudgeAnswerError


class Server:
    """Answers each request with the next (status, headers, body) of ``script``,
    repeating the last one."""

    def __init__(self, script):
        self.script = list(script)
        self.requests = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers["Content-Length"]))
                status, headers, body = server.script[min(server.requests, len(server.script) - 1)]
                server.requests += 1
                send_json(self, status, body, headers)

        self.httpd = start_server(Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self):
        stop_server(self.httpd)


ANSWER = (200, {}, {"choices": [{"message": {"role": "assistant", "content": '{"score": 4}'}}]})


def ask(script, retries: int = 2, backoff: float = 0.01):
    """(answer or the exception raised, client, server, seconds taken)."""
    server = Server(script)
    config = JudgeConfig(enabled=True, endpoint=server.url, model="m", retries=retries, backoff_seconds=backoff, timeout_seconds=5)
    client = JudgeClient(config)

    async def go():
        try:
            return await client.complete([{"role": "user", "content": "hi"}])
        except Exception as exc:
            return exc
        finally:
            await client.close()

    started = time.perf_counter()
    try:
        outcome = asyncio.run(go())
    finally:
        server.close()
    return outcome, client, server, time.perf_counter() - started


def test_retry_after_longer_than_the_backoff_is_waited_for():
    outcome, client, server, seconds = ask([(429, {"Retry-After": "0.4"}, {"error": "slow down"}), ANSWER])
    assert outcome == '{"score": 4}'
    assert (server.requests, client.requests, client.retries) == (2, 2, 1)
    assert seconds >= 0.4  # the backoff alone is 0.01 s


def test_retry_after_as_an_http_date_is_waited_for():
    later = format_datetime(datetime.fromtimestamp(int(time.time()) + 2, timezone.utc), usegmt=True)
    outcome, client, _, seconds = ask([(503, {"Retry-After": later}, {"error": "maintenance"}), ANSWER])
    assert outcome == '{"score": 4}' and client.retries == 1
    assert seconds >= 1.0  # the date is 1-2 s ahead (whole seconds); the backoff alone is 0.01 s


def test_server_errors_are_retried_until_the_attempts_run_out():
    outcome, client, server, _ = ask([(503, {}, {"error": "busy"})], retries=2)
    assert isinstance(outcome, JudgeRequestError) and "HTTP 503" in str(outcome) and "after 3 attempts" in str(outcome)
    assert (server.requests, client.retries) == (3, 2)


def test_a_client_error_fails_at_once():
    outcome, client, server, _ = ask([(400, {}, {"error": "bad request"}), ANSWER])
    assert isinstance(outcome, JudgeRequestError) and "HTTP 400" in str(outcome)
    assert (server.requests, client.retries) == (1, 0)


def test_an_answer_that_is_not_a_chat_completion_is_not_retried():
    outcome, _, server, _ = ask([(200, {}, {"unexpected": True}), ANSWER])
    assert isinstance(outcome, JudgeAnswerError) and server.requests == 1


@pytest.mark.parametrize("value", ["", "soon", "Wed, 21 Oct 2015 07:28:00 GMT"])
def test_retry_after_that_is_not_seconds_leaves_the_backoff(value):
    outcome, client, _, seconds = ask([(429, {"Retry-After": value}, {}), ANSWER])
    assert outcome == '{"score": 4}' and client.retries == 1 and seconds < 2
