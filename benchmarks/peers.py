"""Shared helpers of the side-by-side benchmarks (bench_vs_datatrove.py,
bench_vs_img2dataset.py): peers in their own virtualenvs, one measured subprocess
per side, and the tables they print.

Each side runs in its own child process and is measured by ``os.wait4``: wall
seconds, CPU seconds (user + system, the child and the descendants it waited for)
and peak RSS (``ru_maxrss``: the largest resident set of that process tree's
processes, not their sum).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional, Sequence

ROOT = Path(__file__).resolve().parents[1]
BENCH_DIR = Path(os.environ.get("MMCURATE_BENCH_DIR", "/tmp/mmcurate-bench"))
MMCURATE_PYTHON = str(ROOT / ".venv" / "bin" / "python")
FIXTURE_WARCS = sorted((ROOT / "tests" / "fixtures" / "warc").glob("*.warc*"))


def ensure_venv(name: str, requirements: Sequence[str]) -> str:
    """A virtualenv under BENCH_DIR with exactly these pinned requirements
    (installed from PyPI once; reinstalled when the pins change). Returns its python."""
    venv = BENCH_DIR / name
    python = venv / "bin" / "python"
    stamp = venv / ".requirements"
    wanted = "\n".join(requirements)
    if python.exists() and stamp.exists() and stamp.read_text() == wanted:
        return str(python)
    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    print(f"installing {' '.join(requirements)} into {venv} ...", flush=True)
    result = subprocess.run([str(python), "-m", "pip", "install", "--quiet", *requirements], capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"could not install {requirements} into {venv}:\n{result.stderr[-3000:]}")
    stamp.write_text(wanted)
    return str(python)


def installed_versions(python: str, packages: Sequence[str]) -> dict[str, str]:
    code = (
        "import sys, importlib.metadata as m\n"
        "for p in sys.argv[1:]:\n"
        "    try: print(p, m.version(p))\n"
        "    except m.PackageNotFoundError: print(p, 'not-installed')\n"
    )
    out = subprocess.run([python, "-c", code, *packages], capture_output=True, text=True, check=True).stdout
    return dict(line.split(" ", 1) for line in out.splitlines())


@dataclass
class Measured:
    wall: float
    cpu: float
    rss_mib: float
    returncode: int
    stdout: str
    stderr: str


def measure(cmd: Sequence[str], env: Optional[Mapping[str, str]] = None, cwd: Optional[str] = None) -> Measured:
    """Runs cmd as a child process; its wall, CPU and peak RSS from wait4."""
    out_path = BENCH_DIR / f".stdout-{os.getpid()}"
    err_path = BENCH_DIR / f".stderr-{os.getpid()}"
    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    with open(out_path, "w") as out, open(err_path, "w") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(list(cmd), stdout=out, stderr=err, env={**os.environ, **(env or {})}, cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    result = Measured(
        wall=wall,
        cpu=usage.ru_utime + usage.ru_stime,
        rss_mib=usage.ru_maxrss / 1024,
        returncode=proc.returncode,
        stdout=out_path.read_text(),
        stderr=err_path.read_text(),
    )
    out_path.unlink()
    err_path.unlink()
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:3])} ... failed ({result.returncode}):\n{result.stderr[-4000:]}")
    return result


def table(title: str, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cells = [[f"{c:.3g}" if isinstance(c, float) and abs(c) < 1000 else (f"{c:,.0f}" if isinstance(c, float) else str(c)) for c in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    lines = [title, "  ".join(h.ljust(w) for h, w in zip(headers, widths)), "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))) for row in cells]
    return "\n".join(lines)


def html_pages(warcs: Sequence[Path] = FIXTURE_WARCS) -> list[tuple[str, bytes, str]]:
    """(url, payload, content type) of every 200 HTML response in the fixture WARCs."""
    sys.path.insert(0, str(ROOT / "tests"))
    from warcbuild import html_responses

    return [(url, payload, ctype) for path in warcs for url, payload, ctype, status in html_responses(path) if status == 200]


def build_repeated_warc(path: Path, n_pages: int) -> int:
    """A WARC of n_pages responses: the fixtures' real HTML pages repeated under
    distinct URLs (tests/warcbuild.py). Returns the HTML bytes written."""
    sys.path.insert(0, str(ROOT / "tests"))
    from warcbuild import WarcBuilder

    pages = html_pages()
    total = 0
    with WarcBuilder.open(path) as warc:
        for i in range(n_pages):
            url, payload, ctype = pages[i % len(pages)]
            sep = "&" if "?" in url else "?"
            warc.response(f"{url}{sep}copy={i}", payload, ctype)
            total += len(payload)
    return total
