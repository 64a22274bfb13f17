"""``mmcurate config --defaults``: the whole default config as YAML, a comment per key.

Each key's comment is its pydantic field ``description`` when it has one, otherwise
the comment block written above the field in ``stages/config/<stage>.py`` (the form the
config is documented in), read from the class source. A section's comment is its
model's docstring. The printed YAML loads back into exactly the default config.
"""

from __future__ import annotations

import ast
import inspect
import io
import sys
import textwrap
import tokenize
from functools import lru_cache
from typing import Any, Optional, Sequence, TextIO

import yaml
from pydantic import BaseModel

from mmcurate.pipeline.config import Config

WIDTH = 88


@lru_cache(maxsize=None)
def field_comments(model: type[BaseModel]) -> dict[str, str]:
    """{field: the comment lines right above it (or at the end of its line)} for
    the fields ``model`` itself declares."""
    try:
        source = textwrap.dedent(inspect.getsource(model))
    except (OSError, TypeError):
        return {}
    comments: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.string.lstrip("#").strip()
    lines = source.splitlines()
    found: dict[str, str] = {}
    for node in ast.parse(source).body[0].body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        block: list[str] = []
        line = node.lineno - 1
        while line >= 1 and line in comments and lines[line - 1].lstrip().startswith("#"):
            block.insert(0, comments[line])
            line -= 1
        inline = comments.get(node.lineno) if not lines[node.lineno - 1].lstrip().startswith("#") else None
        text = " ".join(part for part in (" ".join(block), inline) if part)
        if text:
            found[node.target.id] = text
    return found


# A section's on/off switch means the same everywhere; it needs no comment of its own.
ENABLED = "Run this section's rules (false turns them off)."


def describe(model: type[BaseModel], name: str) -> str:
    """A field's description: pydantic's, or the comment above it in the source
    (``enabled`` without one: ``ENABLED``)."""
    for cls in model.__mro__:
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)) or name not in getattr(cls, "__annotations__", {}):
            continue
        field = cls.model_fields.get(name)
        if field is not None and field.description:
            return field.description
        comment = field_comments(cls).get(name)
        if comment:
            return comment
    return ENABLED if name == "enabled" else ""


def _section_model(model: type[BaseModel], name: str) -> Optional[type[BaseModel]]:
    annotation = model.model_fields[name].annotation
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def _scalar(value: Any) -> str:
    text = yaml.safe_dump(value, default_flow_style=True, allow_unicode=True, width=10_000, sort_keys=False).strip()
    return text.removesuffix("\n...").removesuffix("...").strip()


def _comment(text: str, indent: str) -> list[str]:
    return [f"{indent}# {line}" for line in textwrap.wrap(text, WIDTH - len(indent) - 2)]


def _emit(model: type[BaseModel], values: dict[str, Any], indent: str, out: list[str]) -> None:
    for name in model.model_fields:
        sub = _section_model(model, name)
        if sub is not None:
            doc = describe(model, name) or inspect.cleandoc(sub.__doc__ or "")
            if doc:
                out.extend(_comment(" ".join(doc.split()), indent))
            out.append(f"{indent}{name}:")
            _emit(sub, values[name], indent + "  ", out)
            continue
        doc = describe(model, name)
        if doc:
            out.extend(_comment(doc, indent))
        out.append(f"{indent}{name}: {_scalar(values[name])}")


def defaults_yaml() -> str:
    """The default config as commented YAML."""
    values = Config().model_dump(mode="json")
    out = [
        "# mmcurate's default configuration (mmcurate config --defaults).",
        "# Copy what you change into a file for --config, or override one key with",
        "# --set section.key=value. Unknown keys and bad values fail at load time.",
        "",
    ]
    for name in Config.model_fields:
        sub = _section_model(Config, name)
        doc = inspect.cleandoc(sub.__doc__ or "") if sub is not None and sub.__doc__ else describe(Config, name)
        doc = doc or (f"Stage {name}." if name != "run" else "What runs.")
        if doc:
            out.extend(_comment(" ".join(doc.split()), ""))
        out.append(f"{name}:")
        _emit(sub, values[name], "  ", out)
        out.append("")
    return "\n".join(out)


def undocumented() -> list[str]:
    """Dotted keys of the config that have no description (a test keeps this empty)."""
    missing: list[str] = []

    def walk(model: type[BaseModel], prefix: str) -> None:
        for name in model.model_fields:
            sub = _section_model(model, name)
            if sub is not None:
                walk(sub, f"{prefix}{name}.")
            elif not describe(model, name):
                missing.append(prefix + name)

    walk(Config, "")
    return missing


def cmd_config(argv: Sequence[str], out: Optional[TextIO] = None) -> int:
    import argparse

    out = out or sys.stdout
    parser = argparse.ArgumentParser(
        prog="mmcurate config",
        description="Print mmcurate's configuration: the defaults, or a file with --set overrides resolved.",
    )
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--defaults", action="store_true", help="the full default config as YAML, a comment per key")
    what.add_argument("--resolve", metavar="FILE", nargs="?", const="",
                      help="the config a run would use: FILE (optional) plus --set overrides, as YAML")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="override one value (with --resolve)")
    args = parser.parse_args(list(argv))
    if args.defaults:
        out.write(defaults_yaml())
        return 0
    from mmcurate.pipeline.config import ConfigError, load_config

    try:
        config = load_config(args.resolve or None, args.overrides)
    except ConfigError as exc:
        print(f"mmcurate config: {exc}", file=sys.stderr)
        return 2
    out.write(yaml.safe_dump(config.to_dict(), sort_keys=False, allow_unicode=True))
    return 0
