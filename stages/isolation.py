"""A child process that runs the extractor, so a page that takes too long can be
stopped for real (a thread cannot be interrupted inside lxml or trafilatura).

Kept free of Beam imports: the child is started with "spawn" and imports only this
module and the extractor, never the pipeline.
"""

from __future__ import annotations

import logging
import multiprocessing
from multiprocessing.connection import Connection
from typing import Optional

from mmcurate.pipeline.config import ExtractConfig
from mmcurate.stages.extractors import Extraction, load_extractor
from mmcurate.stages.failures import error_detail

log = logging.getLogger(__name__)

# "spawn" starts from a clean interpreter: safe from the threads of a Beam worker,
# and it sees the parent's sys.path, so dotted-path extractors import in the child.
START_METHOD = "spawn"
# A child gets this long to import the extractor before the stage gives up on it.
STARTUP_SECONDS = 120.0
# A child asked to stop gets this long before it is killed.
SHUTDOWN_SECONDS = 5.0


class ExtractionTimeout(Exception):
    """Extraction ran past ``timeout_seconds``; the extractor process was killed."""


class ExtractorCrashed(Exception):
    """The extractor process died while extracting a document."""


class ExtractorFailed(Exception):
    """The extractor raised in the child process.

    ``type_name`` is the type of the original exception (the error row's reason),
    ``detail`` its message and innermost frames.
    """

    def __init__(self, type_name: str, detail: str):
        super().__init__(f"{type_name}: {detail}")
        self.type_name = type_name
        self.detail = detail


def _serve(conn: Connection, extractor_name: str, config: ExtractConfig) -> None:
    """The child process: loads the extractor, then extracts one (html, url) per message."""
    try:
        extractor = load_extractor(extractor_name)
    except Exception as exc:
        conn.send(("error", type(exc).__name__, error_detail(exc)))
        return
    conn.send(("ready",))
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        html, url = message
        try:
            result = extractor(html, url, config)
            if not isinstance(result, Extraction):
                raise TypeError(f"extractor {extractor_name!r} returned {type(result).__name__}, not Extraction")
            conn.send(("ok", result))
        except Exception as exc:  # one document's failure; the child keeps serving
            conn.send(("error", type(exc).__name__, error_detail(exc)))


class ExtractorProcess:
    """One child process running the extractor, restarted after a timeout or a crash."""

    def __init__(self, extractor_name: str, config: ExtractConfig, timeout: float):
        self._extractor_name = extractor_name
        self._config = config
        self._timeout = timeout
        self._process: Optional[multiprocessing.process.BaseProcess] = None
        self._conn: Optional[Connection] = None
        self.starts = 0

    def _start(self) -> None:
        context = multiprocessing.get_context(START_METHOD)
        parent_conn, child_conn = context.Pipe()
        process = context.Process(
            target=_serve,
            args=(child_conn, self._extractor_name, self._config),
            name="mmcurate-extract",
            daemon=True,
        )
        process.start()
        child_conn.close()
        self._process, self._conn = process, parent_conn
        self.starts += 1
        if not parent_conn.poll(STARTUP_SECONDS):
            self.stop(kill=True)
            raise ExtractionTimeout(f"extractor process did not start within {STARTUP_SECONDS:.0f}s")
        try:
            message = parent_conn.recv()
        except EOFError:
            self.stop(kill=True)
            raise ExtractorCrashed("extractor process died while starting") from None
        if message[0] != "ready":
            self.stop(kill=True)
            raise ExtractorFailed(message[1], message[2])
        log.debug("extractor process %s started (%s)", process.pid, self._extractor_name)

    def extract(self, html: str, url: str) -> Extraction:
        if self._process is None or not self._process.is_alive():
            self.stop(kill=True)
            self._start()
        conn = self._conn
        try:
            conn.send((html, url))
        except (BrokenPipeError, OSError) as exc:
            self.stop(kill=True)
            raise ExtractorCrashed(f"extractor process went away: {exc}") from None
        if not conn.poll(self._timeout):
            log.debug("extraction of %s passed %.1fs; killing the extractor process", url, self._timeout)
            self.stop(kill=True)
            raise ExtractionTimeout(f"extraction took longer than {self._timeout:g}s; the extractor process was killed")
        try:
            message = conn.recv()
        except (EOFError, OSError):
            exitcode = self._process.exitcode if self._process is not None else None
            self.stop(kill=True)
            raise ExtractorCrashed(f"extractor process died (exit code {exitcode})") from None
        if message[0] == "ok":
            return message[1]
        raise ExtractorFailed(message[1], message[2])

    def stop(self, kill: bool = False) -> None:
        process, conn = self._process, self._conn
        self._process = self._conn = None
        if process is None:
            return
        if not kill and process.is_alive():
            try:
                conn.send(None)
            except (BrokenPipeError, OSError):
                pass
            process.join(SHUTDOWN_SECONDS)
        if process.is_alive():
            process.kill()
            process.join(SHUTDOWN_SECONDS)
        if conn is not None:
            conn.close()
        process.close()
