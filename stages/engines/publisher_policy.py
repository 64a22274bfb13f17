"""What a publisher allows us to fetch: ``X-Robots-Tag`` opt-out directives and
robots.txt rules, cached once per host.

robots.txt is parsed with protego, Scrapy's RFC 9309 parser: urllib.robotparser
implements the 1996 draft only (no ``*``/``$`` wildcards, first match instead of
longest match), which misreads many real files. As RFC 9309 sec. 2.3.1 says: 4xx
means no rules, 5xx or no answer means complete disallow.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Awaitable, Callable, Iterable, Optional
from urllib.parse import urlsplit

from protego import Protego

log = logging.getLogger(__name__)

ROBOTS_MAX_BYTES = 500 * 1024  # RFC 9309 sec. 2.5: parse at least 500 KiB
_DISALLOW_ALL = "User-agent: *\nDisallow: /\n"


def host_key(url: str) -> str:
    """scheme://host[:port] of a URL: the unit of robots.txt and politeness."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"


def opted_out(header_values: Iterable[str], token: str, directives: Iterable[str]) -> str:
    """The first disallowed directive that ``X-Robots-Tag`` values apply to us ("" if none).

    A value is a comma-separated list of directives, optionally led by ``name:``
    (then it applies only to that user agent); e.g. ``noai, noimageai`` or
    ``otherbot: noindex``."""
    wanted = {d.lower() for d in directives}
    token = token.lower()
    for value in header_values:
        agent = ""
        for part in value.split(","):
            part = part.strip().lower()
            if ":" in part:
                name, _, rest = part.partition(":")
                if name.strip() not in ("unavailable_after",):
                    agent, part = name.strip(), rest.strip()
            if agent and agent != token:
                continue
            if part in wanted:
                return part
    return ""


class RobotsCache:
    """robots.txt rules per host (``host_key``), each loaded once by ``load(key)``
    (parsed rules, or None when there are none) within ``deadline`` seconds; use it
    on one event loop. A host whose robots.txt is unreachable is disallowed, and
    ``refusal`` says why."""

    def __init__(self, load: Callable[[str], Awaitable[Optional[Protego]]], token: str, deadline: float):
        self._load_rules = load
        self._token = token
        self._deadline = deadline
        self._rules: dict[str, asyncio.Future] = {}
        self._faults: dict[str, str] = {}  # host key -> why its robots.txt counts as disallow-all

    async def allowed(self, url: str) -> bool:
        key = host_key(url)
        future = self._rules.get(key)
        if future is None:
            future = self._rules[key] = asyncio.ensure_future(self._load(key))
        rules = await asyncio.shield(future)
        return True if rules is None else rules.can_fetch(url, self._token)

    def refusal(self, url: str) -> str:
        """The detail of a disallowed URL's decision row."""
        key = host_key(url)
        fault = self._faults.get(key)
        if fault:
            return f"robots.txt of {key} unreachable ({fault}): complete disallow, RFC 9309 2.3.1.4"
        return f"robots.txt of {key} disallows {url}"

    def unreachable(self, key: str, why: str) -> Protego:
        """The rules of a host whose robots.txt could not be read: disallow all."""
        self._faults[key] = why[:200]
        log.debug("robots.txt of %s unreachable: %s", key, self._faults[key])
        return Protego.parse(_DISALLOW_ALL)

    async def _load(self, key: str) -> Optional[Protego]:
        try:
            return await asyncio.wait_for(self._load_rules(key), self._deadline)
        except asyncio.TimeoutError:
            return self.unreachable(key, f"no answer within {self._deadline}s")
        except Exception as exc:  # a robots.txt must not end the run either
            log.warning("robots.txt of %s failed unexpectedly: %s: %s", key, type(exc).__name__, exc)
            return self.unreachable(key, f"{type(exc).__name__}: {exc}")
