"""A run's first phase in a process of its own, when the runner would run it in this one.

Beam's DirectRunner, unless it runs in ``multi_processing`` mode, executes a pipeline
inside the process that calls ``run()``, and what the first phase loads stays there
for the rest of the run: heliport, the heuristics stage's language identifier, holds
about 830 MB in its Rust library for the life of the process (deleting the
identifier frees none of it), and the later phases, which grow with the corpus,
would run on top of it. ``call_in_child`` runs one function, the first phase, in a
fresh interpreter and returns what it returned; the later phases run in the
launching process, which never loads heliport.

The child is ``python -c`` importing this module (``subprocess``, two pipes passed
by descriptor), not multiprocessing's "spawn": spawn runs the launching script's top
level again in the child, so a script calling ``run_curation`` without an ``if
__name__ == "__main__":`` guard would start its own run there (or repeat whatever
else it does first); here the child imports only the launcher's ``sys.path`` and the
modules the pickled call names. A call that names something of the launching
script (``__main__``) cannot be run there: ``portable`` says so, and the caller runs
it in this process instead. POSIX only (descriptors passed to a child): elsewhere
``SUPPORTED`` is false.

What the user sees is the same as when the phase ran in the launching process:

- The child's log records are sent to the launcher and handled there by the logger
  of their name (its handlers, filters and format); the child's loggers have the
  launcher's levels. Anything written straight to stderr goes to the same stderr.
- Its result comes back pickled (the call and its arguments go there pickled too); an exception it raised is raised here, the same
  class with the same message (one that cannot be pickled becomes a RuntimeError
  naming its class), with the child's traceback as its cause.
- Ctrl-C: the child ignores SIGINT itself (it reaches the whole process group); when
  the launcher is interrupted it tells the child, which gets SIGINT in its main
  thread, ends its pipeline as the launcher would have, and exits; the launcher
  waits for that (so staging is left as the interrupted phase leaves it) and raises
  KeyboardInterrupt. A second Ctrl-C while it waits kills the child. An interrupt
  that comes while the child's main thread is sending a message is held until the
  message is whole, and none is taken once the call has returned.
- Kill safety: the child watches the pipe the launcher sends on; when the launcher
  dies (SIGKILL included) the pipe ends and the child exits as soon as that thread
  runs (within a second or so: it waits for the interpreter's lock while the main
  thread is in one long C call), so a rerun does not race an orphan still writing
  staging. A terminal's Ctrl-C or a ``kill`` of the process group reaches both.
- The live progress line's side channel is named in the environment
  (``pipeline/progress.py``), which the child inherits.

``call_many`` runs several calls at once, each in a child of its own (the first
phase of a ``local`` run as tasks: ``pipeline/phase_tasks.py``), with the same
behaviour for each; when one raises or dies, the others are stopped as on Ctrl-C
before its error is raised. Its children may ``ask`` the launcher something (the
next input range): the question goes up the results pipe, the launcher's answer
comes down the control pipe, where the child's watching thread hands it over.
"""

from __future__ import annotations

import io
import logging
import logging.handlers
import os
import pickle
import pickletools
import queue
import signal
import subprocess
import sys
import threading
import time
import traceback
from multiprocessing.connection import Connection, wait
from typing import Any, Callable, Optional, Sequence

# Nothing here imports Beam at import time: the child imports this module before its
# logging is forwarded, and Beam logs as it is imported.
from mmcurate.pipeline import interrupts, start_up_gc

log = logging.getLogger(__name__)

# Descriptors passed to a child process (subprocess's pass_fds) exist on POSIX only,
# and an embedded interpreter may have no executable to start.
SUPPORTED = os.name == "posix" and bool(sys.executable)
# What the child runs: this module's _child_main, the pipes' descriptors as arguments.
_CHILD_CODE = "from mmcurate.pipeline.phase_process import _child_main; _child_main()"
# Names Beam's create_runner accepts for the runners that execute in the calling
# process (lower case, with or without "runner").
_IN_PROCESS_RUNNERS = {"direct", "directrunner", "bundlebaseddirectrunner", "switchingdirectrunner"}
# How long an interrupted child gets to end its pipeline and exit before it is killed
# (ours: the interrupt ends a transform at its next Python instruction, so this only
# bounds a child stuck in one long C call).
INTERRUPT_GRACE_SECONDS = 60.0


class ChildDied(RuntimeError):
    """The child process ended without a result (killed, out of memory, crashed):
    ``child``, its index among ``call_many``'s calls; ``how``, how it ended."""

    def __init__(self, exitcode: int | None, child: int = 0):
        how = f"was killed by signal {-exitcode}" if exitcode is not None and exitcode < 0 else f"exited with {exitcode}"
        super().__init__(f"its process {how} before it finished")
        self.exitcode, self.child, self.how = exitcode, child, how


class ChildTraceback(Exception):
    """The traceback of an exception raised in the child, as its cause here."""

    def __init__(self, text: str):
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return f'\n"""\n{self.text}"""'


def runs_in_this_process(options) -> bool:
    """Whether the runner of ``options`` executes pipelines in the calling process:
    the DirectRunner, except in ``multi_processing`` mode (whose workers are child
    processes already). A runner given as an object (not a name) counts as remote."""
    from apache_beam.options.pipeline_options import DirectOptions, StandardOptions

    runner = options.view_as(StandardOptions).runner
    if not isinstance(runner, str) or runner.lower() not in _IN_PROCESS_RUNNERS:
        return False
    return options.view_as(DirectOptions).direct_running_mode != "multi_processing"


def payload(function: Callable[..., Any], *args: Any) -> bytes:
    """``(function, args)`` pickled, as ``call_pickled`` takes them."""
    return pickle.dumps((function, args), protocol=pickle.HIGHEST_PROTOCOL)


def portable_payload(otherwise: str, function: Callable[..., Any], *args: Any) -> Optional[bytes]:
    """``payload(function, *args)`` when a fresh child can run it, else None, and why
    is logged at INFO with ``otherwise`` (what the caller does instead): something
    given does not pickle, or names the launching script (``portable``)."""
    try:
        pickled = payload(function, *args)
    except Exception:  # pickle raises several kinds (PicklingError, TypeError, AttributeError)
        log.info("%s: what it is given does not pickle", otherwise, exc_info=True)
        return None
    if not portable(pickled):
        log.info("%s: it uses something defined in __main__", otherwise)
        return None
    return pickled


def portable(pickled: bytes) -> bool:
    """Whether a pickled call can be loaded in a fresh interpreter: it names nothing
    of the launching script's own module (``__main__``), which the child does not run."""
    names = [arg for op, arg, _ in pickletools.genops(io.BytesIO(pickled)) if isinstance(arg, str)]
    return "__main__" not in names and not any(name.startswith("__main__ ") for name in names)


def call_in_child(function: Callable[..., Any], *args: Any) -> Any:
    """``function(*args)``, run in a fresh child process: ``call_pickled`` of their
    ``payload``."""
    return call_pickled(payload(function, *args))


def call_pickled(pickled: bytes) -> Any:
    """The call ``pickled`` (``payload``: a module-level function and its arguments,
    naming nothing of ``__main__``: ``portable``), run in a fresh child process; see
    the module docstring. Raises what the function raised, KeyboardInterrupt on
    Ctrl-C, ChildDied if the child ended without a result.
    """
    return call_many([pickled])[0]


def call_many(calls: Sequence[bytes], answer: Optional[Callable[[int, Any], Any]] = None) -> list[Any]:
    """Each pickled call of ``calls`` (as ``call_pickled`` takes one) in a fresh child
    process of its own, all at once: their results, in order. A child may ``ask``
    this process something: ``answer(i, request)`` (called in this thread, between the
    children's log records) is the reply child ``i`` gets. When a child raises, or
    ends without a result (``ChildDied``), the others are stopped as on Ctrl-C and
    that is raised; on Ctrl-C, all are stopped and KeyboardInterrupt is raised.
    """
    children: list[_Child] = []
    try:
        for pickled in calls:
            child = _Child(*_start())
            children.append(child)
            try:
                child.control.send((list(sys.path), _log_levels(), pickled))
            except OSError:
                pass  # it died at once: _relay finds no result
        return _relay(children, answer)
    except BaseException:  # Ctrl-C here, a child's error, anything else: the others stop first
        _stop([c for c in children if not c.finished])
        raise
    finally:
        for child in children:
            child.results.close()


# -- the launcher's side --------------------------------------------------------------


class _Child:
    """A child process of ``call_many``, this side's ends of its pipes, and whether it
    has ended (its outcome received, or its results pipe closed)."""

    def __init__(self, process: subprocess.Popen, results: Connection, control: Connection):
        self.process, self.results, self.control = process, results, control
        self.finished = False

    def end(self) -> None:
        try:
            self.process.wait()
        finally:
            self.control.close()
            self.finished = True


def _start() -> tuple[subprocess.Popen, Connection, Connection]:
    """The child process, and this side's ends of its results and control pipes."""
    results_read, results_write = os.pipe()
    control_read, control_write = os.pipe()
    try:
        with _sigint_ignored():  # inherited: the child starts deaf to Ctrl-C (see _child)
            process = subprocess.Popen(
                # The launcher's interpreter options too (-O, -W, -X ...), as multiprocessing passes them.
                [sys.executable, *subprocess._args_from_interpreter_flags(), "-c", _CHILD_CODE,
                 str(results_write), str(control_read)],
                pass_fds=(results_write, control_read),
            )
    except BaseException:
        for fd in (results_read, control_write):
            os.close(fd)
        raise
    finally:
        for fd in (results_write, control_read):
            os.close(fd)  # the child's ends: the child holds its own copies
    return process, Connection(results_read, writable=False), Connection(control_write, readable=False)


def _log_levels() -> dict[str, Any]:
    """The levels of this process's loggers that are set, and logging's ``disable``."""
    manager = logging.root.manager
    levels = {name: logger.level for name, logger in manager.loggerDict.items()
              if isinstance(logger, logging.Logger) and logger.level != logging.NOTSET}
    return {"root": logging.root.level, "loggers": levels, "disable": manager.disable}


class _sigint_ignored:
    """SIGINT ignored while a child is started (only the main thread may change it).
    A handler installed outside Python (``signal.signal`` returns None for it) cannot
    be put back: it is left alone, and the child starts with it."""

    def __enter__(self) -> None:
        self.changed = False
        if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is not None:
            self.previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
            self.changed = True

    def __exit__(self, *exc: object) -> None:
        if self.changed:
            signal.signal(signal.SIGINT, self.previous)


def _relog(record: logging.LogRecord) -> None:
    logging.getLogger(record.name).handle(record)


def _relay(children: Sequence[_Child], answer: Optional[Callable[[int, Any], Any]]) -> list[Any]:
    """Handles the children's log records and questions until each has sent its
    outcome: their results; raises the first error (or ChildDied) as it comes."""
    waiting = {child.results: i for i, child in enumerate(children)}
    results: list[Any] = [None] * len(children)
    while waiting:
        for conn in wait(list(waiting)):
            i = waiting[conn]
            child = children[i]
            try:
                message = conn.recv()
            except (EOFError, OSError, pickle.UnpicklingError):  # it ended, maybe in the middle of a message
                child.end()
                raise ChildDied(child.process.returncode, i) from None
            kind = message[0]
            if kind == "log":
                _relog(message[1])
            elif kind == "ask":
                if answer is None:
                    raise RuntimeError("a child process asked this process, which has no answers for it")
                reply = answer(i, message[1])
                try:
                    child.control.send(("reply", reply))
                except OSError:
                    pass  # it died: its results pipe ends next
            else:
                del waiting[conn]
                child.end()
                kind, value, text = message
                if kind == "error":
                    raise value from ChildTraceback(text)
                results[i] = value
    return results


def _stop(children: Sequence[_Child]) -> None:
    """Tells the children to stop as Ctrl-C would and waits for them to exit, relaying
    their logging meanwhile; kills those left after ``INTERRUPT_GRACE_SECONDS`` or a
    second Ctrl-C."""
    running = {child.results: child for child in children}
    try:
        for child in children:
            try:
                child.control.send("interrupt")
            except OSError:
                pass  # it has exited already
        deadline = time.monotonic() + INTERRUPT_GRACE_SECONDS
        while running and time.monotonic() < deadline:
            for conn in wait(list(running), timeout=0.1):
                try:
                    message = conn.recv()
                except (EOFError, OSError, pickle.UnpicklingError):
                    del running[conn]  # exited (or about to: waited for below)
                    continue
                if message[0] == "log":
                    _relog(message[1])
            for conn, child in list(running.items()):
                if child.process.poll() is not None and not conn.poll():
                    del running[conn]
    except KeyboardInterrupt:
        pass  # pressed again: no more waiting
    finally:
        for child in children:
            if child.process.poll() is None:
                child.process.kill()
            child.process.wait()
            child.control.close()
            child.finished = True


# -- the child's side -----------------------------------------------------------------


class _Sender:
    """The child's end of the results pipe, shared by its threads. While the main
    thread sends, an interrupt (``on_sigint``) is held (``held``) and raised once the
    message is whole: a message cut short would leave the launcher a broken pipe."""

    def __init__(self, conn: Connection):
        self.conn = conn
        self.lock = threading.Lock()
        self.main_sending = False
        self.held = False

    def put_nowait(self, message: tuple) -> None:
        self.send(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))

    def send(self, data: bytes) -> None:
        """A message already pickled (what the launcher's ``recv`` unpickles)."""
        main = threading.current_thread() is threading.main_thread()
        with self.lock:
            self.main_sending = main
            try:
                self.conn.send_bytes(data)
            finally:
                self.main_sending = False
        if main and self.held:
            self.held = False
            raise KeyboardInterrupt


class _ForwardHandler(logging.handlers.QueueHandler):
    """Sends each record, its message formatted (QueueHandler.prepare), to the launcher."""

    def enqueue(self, record: logging.LogRecord) -> None:
        try:
            data = pickle.dumps(("log", record), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # an unpicklable attribute added by ``extra``: the essentials only
            record = logging.makeLogRecord({k: getattr(record, k) for k in (
                "name", "levelno", "levelname", "msg", "created", "msecs", "relativeCreated",
                "pathname", "filename", "module", "lineno", "funcName", "thread", "threadName",
                "process", "processName")})
            data = pickle.dumps(("log", record), protocol=pickle.HIGHEST_PROTOCOL)
        self.queue.send(data)


def _set_logging(sender: _Sender, levels: dict[str, Any]) -> None:
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    root.addHandler(_ForwardHandler(sender))
    root.setLevel(levels["root"])
    for name, level in levels["loggers"].items():
        logging.getLogger(name).setLevel(level)
    logging.disable(levels["disable"])


def _child_main() -> None:
    """The child process (``_CHILD_CODE``): its pipes from its arguments, then the
    launcher's ``sys.path``, logging levels and pickled call from the control pipe."""
    results = Connection(int(sys.argv[1]), readable=False)
    control = Connection(int(sys.argv[2]), writable=False)
    try:
        path, levels, pickled = control.recv()
    except Exception:  # the launcher is gone, or was interrupted while it sent: it waits for no result
        os._exit(1)
    sys.path[:] = path
    _child(pickled, results, control, levels)


class _Asker:
    """The child's questions to the launcher (``ask``): one at a time, each answered
    by a reply the watching thread (``_watch``) puts in ``replies``."""

    def __init__(self, sender: _Sender):
        self.sender = sender
        self.replies: queue.Queue = queue.Queue()
        self.lock = threading.Lock()

    def ask(self, request: Any) -> Any:
        with self.lock:
            self.sender.put_nowait(("ask", request))
            return self.replies.get()


_ASKER: Optional[_Asker] = None


def ask(request: Any) -> Any:
    """In a child process of ``call_many``: the launcher's answer to ``request`` (what
    its ``answer`` returns). RuntimeError in any other process."""
    if _ASKER is None:
        raise RuntimeError("phase_process.ask: this process is not a child of call_many")
    return _ASKER.ask(request)


def _child(pickled: bytes, results: Connection, control: Connection, levels: dict[str, Any]) -> None:
    """Runs the pickled call, sends its outcome and exits."""
    global _ASKER
    stop = threading.Event()
    sender = _Sender(results)
    _ASKER = asker = _Asker(sender)

    def on_sigint(signum, frame) -> None:
        # Ctrl-C reaches the whole process group; the launcher decides (see _watch).
        if stop.is_set():
            if sender.main_sending:
                sender.held = True
            else:
                raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_sigint)
    _set_logging(sender, levels)
    threading.Thread(target=_watch, args=(control, stop, asker), name="mmcurate-launcher-watch", daemon=True).start()
    try:
        # As in the launcher: an interrupt lost in a __del__ comes again, and the
        # collector skips what the start-up (the imports the unpickling makes) leaves.
        with interrupts.noted(), start_up_gc.paused() as settle:
            function, args = pickle.loads(pickled)
            settle()
            outcome = ("done", function(*args), "")
    except BaseException as exc:  # after Ctrl-C too: the launcher, stopping this process, ignores it
        outcome = ("error", _picklable(exc), traceback.format_exc())
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the call is over: a late interrupt changes nothing
    try:
        sender.put_nowait(outcome)
    finally:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        # Beam's threads and atexit hooks have nothing left to do for a finished pipeline.
        os._exit(0)


def _watch(control: Connection, stop: threading.Event, asker: _Asker) -> None:
    """Exits the process when the launcher is gone; interrupts it when told to; hands
    the launcher's replies to the question asked (``ask``)."""
    while True:
        try:
            message = control.recv()
        except (EOFError, OSError):
            os._exit(1)  # the launcher died: nobody waits for this phase any more
        if isinstance(message, tuple) and message[0] == "reply":
            asker.replies.put(message[1])
        elif message == "interrupt":
            stop.set()
            # A real signal to the main thread: it also ends a blocking system call.
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)


def _picklable(exc: BaseException) -> BaseException:
    """``exc`` if it survives pickling, else a RuntimeError with its class and message."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        return RuntimeError(f"{type(exc).__module__}.{type(exc).__qualname__}: {exc}")
