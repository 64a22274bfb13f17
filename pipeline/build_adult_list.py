"""Rebuilds the shipped UT1 adult list (``filters/data/adult_urls_ut1/``) from UT1's files.

    .venv/bin/python -m mmcurate.pipeline.build_adult_list [--data ../shared/data/adult-urls-ut1] [--output filters/data/adult_urls_ut1]

Input: UT1's ``adult`` category as ``domains.gz`` and ``urls.gz`` (the project's
shared data folder; its README gives the source and the licence, CC BY-SA 4.0).
Output, what ``safety.urls.shipped_list`` loads (``stages/safety.py``):

- ``domains.dawg``: every domain of ``domains.gz`` as ``filters.unsafe_urls.domain_key``
  writes it (normalised, backwards, closed by a dot), in one DAWG (``dawg2``),
  except the entries that are suffixes of the Public Suffix List's private section
  (hosting platforms and dynamic-DNS providers such as ``dynu.net``: listing one
  refuses every customer's site). The PSL is the snapshot the ``tld`` package ships;
  nothing is downloaded.
- ``urls.gz``: UT1's ``urls`` file, copied byte for byte (``filters.unsafe_urls.PrefixIndex``
  parses it when it loads).

The keys are sorted before the DAWG is built, so a rebuild from the same files is
the shipped file byte for byte (``tests/filters/test_unsafe_urls.py`` checks it,
marked slow). It prints what it left out and the sha256 of each file, which the
README beside the files records.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import shutil
from pathlib import Path
from typing import Iterable

from mmcurate.filters import unsafe_urls
from mmcurate.pipeline.build_models import shared_data

HERE = Path(__file__).resolve().parent
OUTPUT = HERE.parent / "filters" / "data" / "adult_urls_ut1"


def private_suffixes() -> frozenset[str]:
    """The suffixes of the Public Suffix List's private section, from the snapshot
    the ``tld`` package ships (its trie of reversed labels)."""
    from tld.utils import get_tld_names

    found: set[str] = set()
    for trie in get_tld_names().values():
        stack = [(trie.root, ())]
        while stack:
            node, labels = stack.pop()
            if node.leaf and node.private and labels:
                found.add(".".join(reversed(labels)))
            for label, child in (node.children or {}).items():
                stack.append((child, labels + (label,)))
    return frozenset(found)


def domain_keys(lines: Iterable[str], left_out: frozenset[str]) -> tuple[list[str], list[str]]:
    """The sorted DAWG keys of UT1 ``domains`` lines, and the entries left out."""
    keys, dropped = set(), []
    for line in lines:
        key = unsafe_urls.domain_key(line)
        if not key:
            continue
        if key[-2::-1] in left_out:
            dropped.append(key[-2::-1])
            continue
        keys.add(key)
    return sorted(keys), sorted(dropped)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def build(data: Path, output: Path) -> dict[str, object]:
    """Write ``domains.dawg`` and ``urls.gz`` into ``output``; what was built."""
    import dawg

    output.mkdir(parents=True, exist_ok=True)
    with gzip.open(data / "domains.gz", "rt", encoding="utf-8") as fh:
        keys, dropped = domain_keys(fh, private_suffixes())
    dawg.CompletionDAWG(keys, input_is_sorted=True).save(str(output / unsafe_urls.SHIPPED_DOMAINS))
    shutil.copyfile(data / "urls.gz", output / unsafe_urls.SHIPPED_URLS)
    return {"domains": len(keys), "left_out": dropped}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=None, help="UT1's adult files (domains.gz, urls.gz)")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    data = args.data or shared_data() / "adult-urls-ut1"
    built = build(data, args.output)
    print(f"domains: {built['domains']:,} in {unsafe_urls.SHIPPED_DOMAINS}")
    print(f"left out (private-section public suffixes): {', '.join(built['left_out']) or 'none'}")
    for name in (unsafe_urls.SHIPPED_DOMAINS, unsafe_urls.SHIPPED_URLS):
        print(f"sha256 {name}: {sha256(args.output / name)}")


if __name__ == "__main__":
    main()
