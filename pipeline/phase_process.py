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
"""

from __future__ import annotations

import io
import logging
import logging.handlers
import os
import pickle
import pickletools
import signal
import subprocess
import sys
import threading
import time
import traceback
from multiprocessing.connection import Connection
from typing import Any, Callable

# Nothing here imports Beam at import time: the child imports this module before its
# logging is forwarded, and Beam logs as it is imported.
from mmcurate.pipeline import interrupts, start_up_gc

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
    """The child process ended without a result (killed, out of memory, crashed)."""

    def __init__(self, exitcode: int | None):
        how = f"was killed by signal {-exitcode}" if exitcode is not None and exitcode < 0 else f"exited with {exitcode}"
        super().__init__(f"its process {how} before it finished")
        self.exitcode = exitcode


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
    process, results, control = _start()
    try:
        try:
            control.send((list(sys.path), _log_levels(), pickled))
        except OSError:
            pass  # it died at once: _relay finds no result
        message = _relay(results)
    except BaseException:  # Ctrl-C here, or anything else: the child stops first
        _stop(process, results, control)
        raise
    finally:
        results.close()
    process.wait()
    control.close()
    if message is None:
        raise ChildDied(process.returncode)
    kind, value, text = message
    if kind == "error":
        raise value from ChildTraceback(text)
    return value


# -- the launcher's side --------------------------------------------------------------


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


def _relay(results: Connection):
    """Handles the child's log records until its final message, which it returns
    (None if the child ended without one)."""
    while True:
        try:
            message = results.recv()
        except EOFError:
            return None
        if message[0] != "log":
            return message
        _relog(message[1])


def _stop(process, results: Connection, control: Connection) -> None:
    """Tells the child to stop as Ctrl-C would and waits for it to exit, relaying its
    logging meanwhile; kills it after ``INTERRUPT_GRACE_SECONDS`` or a second Ctrl-C."""
    try:
        control.send("interrupt")
    except OSError:
        pass  # it has exited already
    deadline = time.monotonic() + INTERRUPT_GRACE_SECONDS
    try:
        while process.poll() is None and time.monotonic() < deadline:
            if results.poll(0.1):
                try:
                    message = results.recv()
                except EOFError:
                    break
                if message[0] == "log":
                    _relog(message[1])
    except KeyboardInterrupt:
        pass  # pressed again: no more waiting
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        control.close()


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


def _child(pickled: bytes, results: Connection, control: Connection, levels: dict[str, Any]) -> None:
    """Runs the pickled call, sends its outcome and exits."""
    stop = threading.Event()
    sender = _Sender(results)

    def on_sigint(signum, frame) -> None:
        # Ctrl-C reaches the whole process group; the launcher decides (see _watch).
        if stop.is_set():
            if sender.main_sending:
                sender.held = True
            else:
                raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_sigint)
    _set_logging(sender, levels)
    threading.Thread(target=_watch, args=(control, stop), name="mmcurate-launcher-watch", daemon=True).start()
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


def _watch(control: Connection, stop: threading.Event) -> None:
    """Exits the process when the launcher is gone; interrupts it when told to."""
    while True:
        try:
            message = control.recv()
        except (EOFError, OSError):
            os._exit(1)  # the launcher died: nobody waits for this phase any more
        if message == "interrupt":
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
