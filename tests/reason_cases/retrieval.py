"""Reason codes of fetching an image over HTTP (``stages.engines.image_fetch.ImageFetcher``,
what the images stage uses with ``images.http``), against a server of this module
on 127.0.0.1. All URLs are fetched together, once per test session."""

from __future__ import annotations

import asyncio
import socket
from functools import lru_cache
from http.server import BaseHTTPRequestHandler

from imagegen import jpeg
from localnet import drip, local_images_config, send_body, start_server
from mmcurate.filters import reasons
from mmcurate.stages.config import ImagesConfig
from mmcurate.stages.engines.image_fetch import ImageFetcher
from reason_cases import ReasonCase

GOOD = jpeg(1)

CONFIG = local_images_config(retries=0, respect_robots=True)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def _send(self, status: int, body: bytes = b"", content_type: str = "image/jpeg", headers: dict | None = None) -> None:
        send_body(self, status, body, content_type, headers)

    def do_GET(self) -> None:
        path = self.path
        if path == "/robots.txt":
            return self._send(200, b"User-agent: *\nDisallow: /private/\n", "text/plain")
        if path == "/noai.jpg":
            return self._send(200, GOOD, headers={"X-Robots-Tag": "noai, noimageai"})
        if path == "/page.html":
            return self._send(200, b"<html></html>", "text/html")
        if path == "/huge.jpg":
            return self._send(200, b"\xff\xd8\xff" + b"\x00" * 200_000)
        if path == "/slow.jpg":  # drips one byte at a time, past the deadline
            return drip(self, GOOD)
        if path in ("/loop-a", "/loop-b"):
            return self._send(302, headers={"Location": "/loop-b" if path == "/loop-a" else "/loop-a"})
        if path.startswith("/hop"):
            return self._send(302, headers={"Location": f"/hop{int(path[4:]) + 1}"})
        return self._send(404, b"not here", "text/plain")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens there once the block ends


PATHS = {
    reasons.IMAGE_HTTP_STATUS: "/missing.jpg",
    reasons.IMAGE_WRONG_CONTENT_TYPE: "/page.html",
    reasons.IMAGE_TOO_MANY_BYTES: "/huge.jpg",
    reasons.IMAGE_TIMEOUT: "/slow.jpg",
    reasons.IMAGE_REDIRECT_LOOP: "/loop-a",
    reasons.IMAGE_TOO_MANY_REDIRECTS: "/hop0",
    reasons.IMAGE_ROBOTS_DISALLOWED: "/private/x.jpg",
    reasons.IMAGE_OPTED_OUT: "/noai.jpg",
}
# URLs refused before any connection, and the one that finds nobody listening.
ELSEWHERE = {
    reasons.IMAGE_UNSUPPORTED_SCHEME: "ftp://127.0.0.1/x.jpg",
    reasons.IMAGE_REFUSED_ADDRESS: "http://169.254.169.254/latest/meta-data/x.jpg",
    reasons.IMAGE_INVALID_URL: "http://[::1/x.png",
}


@lru_cache(maxsize=None)
def fetched() -> dict[str, list[str]]:
    """Code -> the codes the fetcher gave that code's URL (robots.txt is not asked
    for the closed port: ``respect_robots`` off there, as an unreachable robots.txt
    disallows everything)."""
    httpd = start_server(Handler)
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    urls = {code: base + path for code, path in PATHS.items()} | ELSEWHERE

    async def run(config: ImagesConfig, wanted: list[str]):
        fetcher = ImageFetcher(config)
        try:
            return await fetcher.fetch_all(wanted)
        finally:
            await fetcher.close()

    try:
        results = asyncio.run(run(CONFIG, list(urls.values())))
        (refused,) = asyncio.run(
            run(CONFIG.model_copy(update={"respect_robots": False}), [f"http://127.0.0.1:{_closed_port()}/x.jpg"])
        )
    finally:
        httpd.shutdown()
        httpd.server_close()
    out = {code: ([] if r.ok else [r.reason]) for code, r in zip(urls, results)}
    out[reasons.IMAGE_CONNECTION_FAILED] = [] if refused.ok else [refused.reason]
    return out


@lru_cache(maxsize=None)
def given_up() -> list[str]:
    """The codes of the 4th URL on a host that refused the first three connections
    (the host's URLs through ``engines.host_fetch.HostScheduler``, one at a time)."""
    from mmcurate.stages.engines.host_fetch import HostScheduler

    config = CONFIG.model_copy(update={"respect_robots": False, "per_host_concurrency": 1, "host_give_up_after": 3})
    port = _closed_port()

    async def run() -> dict[str, str]:
        fetcher = ImageFetcher(config)
        done: dict[str, str] = {}
        all_done = asyncio.Event()

        def on_done(tag, want, item) -> None:
            done[want[0]] = item.reason
            if len(done) == 4:
                all_done.set()

        scheduler = HostScheduler(fetcher, 4, 1, config.host_give_up_after, on_done)
        scheduler.submit("127.0.0.1", [(f"http://127.0.0.1:{port}/{i}.jpg", ()) for i in range(4)])
        try:
            await asyncio.wait_for(all_done.wait(), 10)
        finally:
            await scheduler.close()
            await fetcher.close()
        return done

    return [asyncio.run(run())[f"http://127.0.0.1:{port}/3.jpg"]]


CASES = [
    ReasonCase(code, f"image URL {url}", lambda code=code: fetched()[code])
    for code, url in (PATHS | ELSEWHERE | {reasons.IMAGE_CONNECTION_FAILED: "http://127.0.0.1:<closed port>/x.jpg"}).items()
] + [ReasonCase(reasons.IMAGE_HOST_GIVEN_UP, "the 4th URL of a host that refused 3 connections in a row", given_up)]
