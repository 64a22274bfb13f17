"""Per-page time limits for the extractor, without paying for them on every page.

``ThreadedExtractor`` (the default) runs the extractor in the worker's own process,
on a thread of its own: a page costs a hand-over between two threads, nothing is
pickled or copied. Past the time limit a watchdog raises ``ExtractionTimeout``
*inside* the extracting thread (``PyThreadState_SetAsyncExc``), which stops it at
its next Python instruction -- trafilatura is Python calling lxml, so that comes
soon -- and the page becomes an error row while the thread serves the next page.
A thread that does not stop within ``INTERRUPT_GRACE_SECONDS`` (stuck in one C
call) is abandoned, and the rest of the worker's pages go to ``ExtractorProcess``.
One caveat holds for any in-process limit: a C call that never releases the GIL
(a regular expression that backtracks forever) stops the whole process until it
returns; ``extract.isolation: process`` runs every page in the child instead.

``ExtractorProcess`` runs the extractor in a child process, so a page that takes
too long can be stopped for real by killing the child. Kept free of Beam imports:
the child is started with "spawn" and imports only this module and the extractor,
never the pipeline.
"""

from __future__ import annotations

import ctypes
import logging
import multiprocessing
import queue
import threading
from multiprocessing.connection import Connection
from typing import Optional

from mmcurate.stages.config import ExtractConfig
from mmcurate.stages.engines.extraction.registry import load_extractor
from mmcurate.stages.engines.extraction.result import Extraction, checked
from mmcurate.stages.engines.exceptions import error_detail

log = logging.getLogger(__name__)

# "spawn" starts from a clean interpreter: safe from the threads of a Beam worker,
# and it sees the parent's sys.path, so dotted-path extractors import in the child.
START_METHOD = "spawn"
# A child gets this long to import the extractor before the stage gives up on it.
STARTUP_SECONDS = 120.0
# A child asked to stop gets this long before it is killed.
SHUTDOWN_SECONDS = 5.0
# An extracting thread told to stop gets this long before it is abandoned.
INTERRUPT_GRACE_SECONDS = 2.0


class ExtractionTimeout(Exception):
    """Extraction ran past ``timeout_seconds``; the extractor was stopped."""


class _Interrupted(BaseException):
    """Raised inside the extracting thread by the watchdog. A BaseException, so that
    the extractor's own ``except Exception`` blocks do not swallow it."""


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
            conn.send(("ok", checked(extractor(html, url, config), extractor_name)))
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


class _Job:
    __slots__ = ("html", "url", "result", "error", "done")

    def __init__(self, html: str, url: str):
        self.html = html
        self.url = url
        self.result: Optional[Extraction] = None
        self.error: Optional[BaseException] = None
        self.done = threading.Event()


class _ExtractionThread:
    """A daemon thread that extracts one job at a time from its queue."""

    def __init__(self, extractor, extractor_name: str, config: ExtractConfig):
        self._extractor = extractor
        self._name = extractor_name
        self._config = config
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.current: Optional[_Job] = None
        self.thread = threading.Thread(target=self._run, name="mmcurate-extract", daemon=True)
        self.thread.start()

    def submit(self, job: _Job) -> None:
        with self.lock:
            self.current = job
        self._jobs.put(job)

    def stop(self) -> None:
        self._jobs.put(None)

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            try:
                try:
                    job.result = checked(self._extractor(job.html, job.url, self._config), self._name)
                except Exception as exc:  # one page's failure; the thread keeps serving
                    job.error = exc
                with self.lock:
                    self.current = None
                    job.done.set()
            except _Interrupted:
                # The watchdog's exception lands here, in the extractor or while the
                # job was being finished: either way the job is over.
                with self.lock:
                    self.current = None
                    if job.result is None and job.error is None:
                        job.error = _Interrupted()
                    job.done.set()


def _raise_in_thread(thread: threading.Thread, exc_type: type) -> bool:
    """Schedule ``exc_type`` to be raised in ``thread`` at its next instruction."""
    count = ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(exc_type))
    if count > 1:  # never expected: undo rather than hit other threads
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), None)
        return False
    return count == 1


class ThreadedExtractor:
    """The extractor in-process on its own thread, with a per-page time limit (see
    the module docstring); ``ExtractorProcess`` only after a thread would not stop."""

    def __init__(self, extractor_name: str, config: ExtractConfig, timeout: float):
        self._extractor_name = extractor_name
        self._config = config
        self._timeout = timeout
        self._extractor = None
        self._thread: Optional[_ExtractionThread] = None
        self._fallback: Optional[ExtractorProcess] = None
        self.timeouts = 0
        self.abandoned = 0

    @property
    def in_fallback(self) -> bool:
        return self._fallback is not None

    def extract(self, html: str, url: str) -> Extraction:
        if self._fallback is not None:
            return self._fallback.extract(html, url)
        if self._thread is None:
            if self._extractor is None:
                self._extractor = load_extractor(self._extractor_name)
            self._thread = _ExtractionThread(self._extractor, self._extractor_name, self._config)
        worker = self._thread
        job = _Job(html, url)
        worker.submit(job)
        if not job.done.wait(self._timeout):
            self.timeouts += 1
            with worker.lock:
                running = worker.current is job and not job.done.is_set()
                if running:
                    _raise_in_thread(worker.thread, _Interrupted)
            if running and not job.done.wait(INTERRUPT_GRACE_SECONDS):
                # Stuck in a C call: leave the thread to finish on its own (it is a
                # daemon, its result is dropped) and isolate the rest in a child.
                log.warning(
                    "extraction of %s did not stop within %.0fs of its time limit; the extractor now runs in a child process",
                    url,
                    INTERRUPT_GRACE_SECONDS,
                )
                self.abandoned += 1
                worker.stop()
                self._thread = None
                self._fallback = ExtractorProcess(self._extractor_name, self._config, self._timeout)
                raise ExtractionTimeout(f"extraction took longer than {self._timeout:g}s; the extracting thread was abandoned")
            if job.result is not None:
                return job.result  # finished just as the limit passed
            if job.error is not None and not isinstance(job.error, _Interrupted):
                raise job.error
            raise ExtractionTimeout(f"extraction took longer than {self._timeout:g}s; it was stopped")
        if isinstance(job.error, _Interrupted):  # a late interrupt: still this job's
            raise ExtractionTimeout(f"extraction took longer than {self._timeout:g}s; it was stopped")
        if job.error is not None:
            raise job.error
        return job.result

    def stop(self, kill: bool = False) -> None:
        if self._thread is not None:
            self._thread.stop()
            self._thread = None
        if self._fallback is not None:
            self._fallback.stop(kill=kill)
            self._fallback = None
