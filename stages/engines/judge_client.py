"""The VLM judge's HTTP client: OpenAI-compatible chat completions (vLLM, SGLang or
a hosted API) over aiohttp, on one event loop.

At most ``concurrency`` requests are in flight per client; each attempt times out
after ``timeout_seconds``. 429, 5xx, timeouts and connection errors are retried
up to ``retries`` times by ``tenacity``, waiting ``backoff_seconds`` doubled after
each attempt, or longer when the server's ``Retry-After`` asks for it. Any other
HTTP status fails at once. What still fails raises ``JudgeRequestError``; an
answer that is not a chat completion raises ``JudgeAnswerError``.
"""

from __future__ import annotations

import asyncio
import os
from typing import Optional

import aiohttp
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt, wait_exponential

from mmcurate.stages.config import JudgeConfig
from mmcurate.stages.engines.judge_prompt import JudgeAnswerError
from mmcurate.stages.engines.retry_after import retry_after_seconds


class JudgeRequestError(RuntimeError):
    """No usable HTTP answer after every retry (status, timeout or connection)."""


class RetryableFailure(Exception):
    """One attempt that is worth repeating: 429, 5xx, a timeout or a connection error.
    ``retry_after`` is the wait the server asked for (0 when it said nothing)."""

    def __init__(self, message: str, retry_after: float = 0.0):
        super().__init__(message)
        self.retry_after = retry_after


class WaitBackoffOrRetryAfter:
    """tenacity wait: exponential backoff, or the server's Retry-After when longer."""

    def __init__(self, backoff_seconds: float):
        self._backoff = wait_exponential(multiplier=backoff_seconds, exp_base=2)

    def __call__(self, state: RetryCallState) -> float:
        failure = state.outcome.exception() if state.outcome is not None else None
        return max(self._backoff(state), getattr(failure, "retry_after", 0.0))


class JudgeClient:
    """Chat completions over aiohttp, on one event loop; counts what it sends
    (``requests``: attempts, ``retries``: attempts repeated)."""

    def __init__(self, config: JudgeConfig):
        self._config = config
        self._session: Optional[aiohttp.ClientSession] = None
        self._slots: Optional[asyncio.Semaphore] = None
        self.requests = 0
        self.retries = 0

    def _ensure(self) -> aiohttp.ClientSession:
        if self._session is None:
            headers = {"Content-Type": "application/json"}
            key = os.environ.get(self._config.api_key_env, "") if self._config.api_key_env else ""
            if key:
                headers["Authorization"] = f"Bearer {key}"
            self._session = aiohttp.ClientSession(headers=headers)
            self._slots = asyncio.Semaphore(self._config.concurrency)
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _count_retry(self, state: RetryCallState) -> None:
        self.retries += 1

    async def complete(self, messages: list[dict]) -> str:
        """The answer's text; JudgeRequestError when every attempt failed."""
        config = self._config
        body = {"model": config.model, "messages": messages, "temperature": 0, "max_tokens": config.max_tokens}
        attempts = config.retries + 1
        retrying = AsyncRetrying(
            stop=stop_after_attempt(attempts),
            wait=WaitBackoffOrRetryAfter(config.backoff_seconds),
            retry=retry_if_exception_type(RetryableFailure),
            before_sleep=self._count_retry,
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    return await self._attempt(body)
        except RetryableFailure as exc:
            raise JudgeRequestError(f"{exc} (after {attempts} attempts)") from None
        raise AssertionError("unreachable: tenacity returns or raises")

    async def _attempt(self, body: dict) -> str:
        """One request: the answer's text, RetryableFailure, or a final error."""
        config = self._config
        session = self._ensure()
        try:
            async with self._slots:
                self.requests += 1
                timeout = aiohttp.ClientTimeout(total=config.timeout_seconds)
                async with session.post(f"{config.endpoint}/chat/completions", json=body, timeout=timeout) as response:
                    if response.status == 200:
                        data = await response.json(content_type=None)
                        try:
                            return data["choices"][0]["message"]["content"] or ""
                        except (KeyError, IndexError, TypeError):
                            raise JudgeAnswerError(f"not a chat completion: {str(data)[:200]}") from None
                    failure = f"HTTP {response.status}: {(await response.text())[:200]}"
                    if response.status != 429 and response.status < 500:
                        raise JudgeRequestError(failure)
                    raise RetryableFailure(failure, retry_after_seconds(response.headers.get("Retry-After")))
        except asyncio.TimeoutError:
            raise RetryableFailure(f"no answer within {config.timeout_seconds}s") from None
        except aiohttp.ClientError as exc:
            raise RetryableFailure(f"{type(exc).__name__}: {exc}") from None
