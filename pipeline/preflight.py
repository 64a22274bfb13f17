"""Checks ``mmcurate run`` makes before the pipeline starts, so that a mistake in
what the run was given ends with exit 2 and one line naming the key, flag or path,
instead of a traceback from inside Beam or a worker.

Checked, for the stages that are on: the extractor (``extract.extractor`` imports
and is callable); every file a stage reads (URL blocklists, the language-ID model,
the quality-stage fastText models, the CLIP checkpoint and architecture config)
exists, is a file, can be read, and starts like its format (fastText's magic
number; a torch zip or pickle, or a safetensors header; text for blocklists); the
output directory is a directory, or can be created, and can be written (a local
path: a temporary file is created and removed there; an object store path is left
to the run); ``--runner`` names a runner Beam knows and can import; every Beam flag
value parses (Beam's own parser, its error in one line instead of its usage).
"""

from __future__ import annotations

import argparse
import importlib.util
import struct
import tempfile
from pathlib import Path
from typing import Callable, Optional, Sequence

from mmcurate.pipeline.beam_files import exists, is_local, open_read
from mmcurate.pipeline.config import Config


class PreflightError(ValueError):
    """A problem with what the run was given, in one line naming the key, flag or path."""


# fastText's model files (.bin and quantized .ftz) start with this int32 (little-endian).
FASTTEXT_MAGIC = struct.pack("<i", 793712314)
_HEAD = 16


def _head(key: str, path: str) -> bytes:
    """The first bytes of the file at ``path``; PreflightError naming ``key`` when it
    is missing, a directory or unreadable."""
    if is_local(path):
        target = Path(path)
        if not target.exists():
            raise PreflightError(f"{key}: file not found: {path}")
        if target.is_dir():
            raise PreflightError(f"{key}: {path} is a directory, not a file")
        try:
            with open(target, "rb") as fh:
                return fh.read(_HEAD)
        except OSError as exc:
            raise PreflightError(f"{key}: {path} cannot be read: {exc.strerror or exc}") from None
    try:
        if not exists(path):
            raise PreflightError(f"{key}: file not found: {path}")
        with open_read(path) as fh:
            return fh.read(_HEAD)
    except PreflightError:
        raise
    except Exception as exc:  # credentials, a bucket that does not exist, ...
        raise PreflightError(f"{key}: {path} cannot be read: {type(exc).__name__}: {exc}") from None


def _fasttext(key: str, path: str) -> None:
    head = _head(key, path)
    if not head.startswith(FASTTEXT_MAGIC):
        raise PreflightError(f"{key}: {path} is not a fastText model (.bin/.ftz): it starts with {head[:8]!r}")


def _text(key: str, path: str) -> None:
    head = _head(key, path)
    if b"\x00" in head:
        raise PreflightError(f"{key}: {path} is not a text file (one entry a line): it holds NUL bytes")


def _torch_checkpoint(key: str, path: str) -> None:
    head = _head(key, path)
    if path.endswith(".safetensors"):
        # safetensors: an 8-byte little-endian header size, then the JSON header.
        if len(head) < 9 or head[8:9] != b"{":
            raise PreflightError(f"{key}: {path} is not a safetensors file: it starts with {head[:9]!r}")
        return
    # torch.save: a zip archive (since torch 1.6) or a pickle (protocol 2+).
    if not (head.startswith(b"PK\x03\x04") or (len(head) > 1 and head[0] == 0x80 and 2 <= head[1] <= 5)):
        raise PreflightError(
            f"{key}: {path} is not a torch checkpoint (zip or pickle) or .safetensors file: it starts with {head[:8]!r}"
        )


def check_files(config: Config) -> None:
    """Every file an enabled stage reads: there, a file, readable, the right format."""
    if config.enabled("extract"):
        from mmcurate.stages.engines.extraction.registry import load_extractor

        try:
            load_extractor(config.extract.extractor)
        except Exception as exc:
            raise PreflightError(f"extract.extractor: {config.extract.extractor!r} cannot be loaded: {type(exc).__name__}: {exc}") from None
    if config.enabled("heuristics"):
        urls = config.heuristics.urls
        for key, paths in (("domain_blocklists", urls.domain_blocklists), ("substring_blocklists", urls.substring_blocklists)):
            for path in paths:
                _text(f"heuristics.urls.{key}", path)
    if config.enabled("heuristics") or config.enabled("recycle"):
        if config.heuristics.language.model_path:
            _fasttext("heuristics.language.model_path", config.heuristics.language.model_path)
        else:
            from mmcurate.filters import language

            try:
                shipped = str(language.shipped_model_path())
            except FileNotFoundError as exc:
                raise PreflightError(f"heuristics.language.model_path: {exc}") from None
            _fasttext("heuristics.language.model_path (shipped lid.176.ftz)", shipped)
    if config.enabled("quality"):
        from mmcurate.stages.engines.text_classifiers import default_model_path, mt_model_paths

        quality = config.quality
        chosen = {"quality.model_path": ("quality", quality.model_path)}
        if quality.llm.enabled:
            chosen["quality.llm.model_path"] = ("llm", quality.llm.model_path)
        for key, (kind, path) in chosen.items():
            _fasttext(key if path else f"{key} (shipped)", path or str(default_model_path(kind)))
        if quality.mt.enabled:
            # one model per language: LANG.npz (a linear model, a zip) or fastText LANG.bin
            key = "quality.mt.model_path" if quality.mt.model_path else "quality.mt.model_dir"
            try:
                paths = mt_model_paths(quality.mt)
            except FileNotFoundError as exc:
                raise PreflightError(f"{key}: {exc}") from None
            for language, path in paths.items():
                if path.endswith(".npz"):
                    head = _head(f"{key} ({language})", path)
                    if not head.startswith(b"PK\x03\x04"):
                        raise PreflightError(f"{key} ({language}): {path} is not a .npz model: it starts with {head[:8]!r}")
                else:
                    _fasttext(f"{key} ({language})", path)
    if config.enabled("scoring") and config.scoring.clip_on:
        _torch_checkpoint("scoring.checkpoint", config.scoring.checkpoint)
        if config.scoring.architecture_config:
            _text("scoring.architecture_config", config.scoring.architecture_config)


def check_output(output: str) -> None:
    """A local ``--output`` must be a directory that can be written, or be creatable."""
    if not is_local(output):
        return
    target = Path(output).absolute()
    if target.exists() and not target.is_dir():
        raise PreflightError(f"--output {output}: exists and is not a directory")
    existing = target
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise PreflightError(f"--output {output}: cannot be created: {existing} is not a directory")
    try:
        with tempfile.TemporaryFile(dir=existing, prefix=".mmcurate-preflight-"):
            pass
    except OSError as exc:
        where = "" if existing == target else f" (cannot create it under {existing})"
        raise PreflightError(f"--output {output}: not writable{where}: {exc.strerror or exc}") from None


def _flag_value(args: Sequence[str], flag: str) -> Optional[str]:
    value = None
    for i, token in enumerate(args):
        if token == flag and i + 1 < len(args):
            value = args[i + 1]
        elif token.startswith(flag + "="):
            value = token.split("=", 1)[1]
    return value


def check_runner(beam_args: Sequence[str]) -> None:
    """``--runner`` resolved as Beam's ``create_runner`` does (a known name, with or
    without ``Runner``, or a dotted class path), without starting it."""
    from apache_beam.options.pipeline_options import StandardOptions

    name = _flag_value(beam_args, "--runner")
    if name is None:
        return
    known = {path.rsplit(".", 1)[1].lower(): path for path in StandardOptions.ALL_KNOWN_RUNNERS}
    path = known.get(name.lower(), known.get(name.lower() + "runner", name))
    if "." not in path:
        names = ", ".join(StandardOptions.KNOWN_RUNNER_NAMES)
        raise PreflightError(f"--runner {name}: not a Beam runner (known: {names}, or a dotted class path)")
    module = path.rsplit(".", 1)[0]
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        hint = " (pip install 'mmcurate[gcp]')" if "dataflow" in module else ""
        raise PreflightError(f"--runner {name}: module {module} is not installed{hint}")


def check_beam_flags(beam_args: Sequence[str], parser_factory: Callable[[], argparse.ArgumentParser]) -> None:
    """Every Beam flag value parses; Beam's parser error in one line, not its usage."""
    if not beam_args:
        return
    parser = parser_factory()

    def fail(message: str) -> None:
        raise PreflightError(f"Beam flag: {message}")

    parser.error = fail  # argparse calls error() for a bad value; it would print the usage and exit
    parser.parse_known_args(list(beam_args))


def check_run(config: Config, output: str, beam_args: Sequence[str], parser_factory: Callable[[], argparse.ArgumentParser]) -> None:
    """All of the above, cheapest first; raises PreflightError."""
    check_beam_flags(beam_args, parser_factory)
    check_runner(beam_args)
    check_files(config)
    check_output(output)
