"""``mmcurate plan``: runs' yields in, the next CC-index pointers out (Beam, DirectRunner
and DaskRunner), and the two-command loop with ``run --index`` on a real WARC."""

import json
from pathlib import Path
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from warcio.archiveiterator import ArchiveIterator

from mmcurate.filters.sources import pointer_key
from mmcurate.pipeline.cli import main
from mmcurate.pipeline.report.page import render
from mmcurate.pipeline.report.sources import source_yields
from mmcurate.pipeline.run_output import connect
from mmcurate.schemas.tables import DECISIONS, DOCUMENTS, to_table
from mmcurate.stages.engines.source_plan import POINTERS_SCHEMA, summary_path

DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "warc" / "demo.warc.gz"


def pages_of(run: Path) -> list[dict]:
    """Every page a run read: (url, pointer key, became a document with images)."""
    cols = ["url", "warc_file", "warc_offset", "warc_length"]
    docs = pq.read_table(run / "documents", columns=cols + ["num_images"]).to_pylist()
    rest = pq.read_table(run / "decisions", columns=cols + ["subject"]).to_pylist()
    return [dict(r, success=r["num_images"] >= 1) for r in docs] + [dict(r, success=False) for r in rest if r["subject"] == "page"]


def cc_row(url, warc_filename, offset, length, language="eng"):
    parts = urlsplit(url)
    host = parts.hostname
    return {
        "url": url, "url_host_name": host, "url_host_registered_domain": ".".join(host.split(".")[-2:]),
        "url_host_tld": host.rsplit(".", 1)[-1], "url_path": parts.path, "content_mime_detected": "text/html",
        "content_languages": language, "fetch_status": 200, "warc_filename": warc_filename,
        "warc_record_offset": offset, "warc_record_length": length,
    }


# -- the loop on a real WARC --------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo_index(tmp_path_factory):
    """A CC-style index of the HTML responses of demo.warc.gz (relative file names),
    listed with warcio as an indexer would, plus two rows plan must never choose."""
    work = tmp_path_factory.mktemp("demo")
    rows = []
    with open(DEMO, "rb") as fh:
        records = ArchiveIterator(fh)
        for record in records:
            if record.rec_type != "response" or record.http_headers is None:
                continue  # the demo holds a deliberately broken response too
            mime = (record.http_headers.get_header("Content-Type") or "").split(";")[0].strip()
            status = int(record.http_headers.get_statuscode())
            url = record.rec_headers.get_header("WARC-Target-URI")
            record.content_stream().read()
            offset, length = records.get_record_offset(), records.get_record_length()
            if mime == "text/html":
                rows.append(dict(cc_row(url, DEMO.name, offset, length), fetch_status=status))
    pages = list(rows)
    # Not HTML, or not fetched: never chosen.
    rows.append(dict(cc_row("https://www.slowkitchen.example/logo.png", DEMO.name, 1, 10), content_mime_detected="image/png"))
    rows.append(dict(cc_row("https://www.slowkitchen.example/gone", DEMO.name, 2, 10), fetch_status=404))
    index = work / "index.parquet"
    pq.write_table(pa.Table.from_pylist(rows), index)
    return work, index, pages


def test_run_index_then_plan_then_run_index_reads_each_page_once(demo_index, tmp_path):
    work, index, pages = demo_index
    first = tmp_path / "first.parquet"
    pq.write_table(pa.Table.from_pylist(pages[::2]), first)
    run1, run2 = tmp_path / "run1", tmp_path / "run2"
    # One phase per run (stage heuristics): which pages are read, and what plan makes
    # of them, does not depend on the later stages.
    prefix = ["--warc-prefix", str(DEMO.parent), "--stages", "heuristics", "--runner-preset", "direct", "--quiet"]
    assert main(["run", "--index", str(first), "-o", str(run1), *prefix]) == 0
    read1 = pages_of(run1)
    assert len(read1) == len(pages[::2])

    plan = tmp_path / "plan" / "next.parquet"
    assert main(["plan", str(run1), "--index", str(index), "--budget", "100", "--output", str(plan),
                 "--set", "plan.max_per_domain=100", "--runner-preset", "direct", "--quiet"]) == 0
    chosen = pq.read_table(plan)
    assert chosen.schema.equals(POINTERS_SCHEMA, check_metadata=False)
    chosen = chosen.to_pylist()
    read_keys = {pointer_key(p["warc_file"], p["warc_offset"]) for p in read1}
    read_urls = {p["url"] for p in read1}
    unread = [
        p for p in pages
        if pointer_key(p["warc_filename"], p["warc_record_offset"]) not in read_keys and p["url"] not in read_urls
        and p["fetch_status"] == 200
    ]
    # Every unread fetched HTML page, none read before (by pointer or URL), nothing else.
    assert len(unread) >= 5
    assert sorted(c["warc_record_offset"] for c in chosen) == sorted(p["warc_record_offset"] for p in unread)
    assert all(c["warc_filename"] == DEMO.name for c in chosen)
    summary = json.loads(Path(summary_path(str(plan))).read_text())
    assert summary["selected"] == len(chosen) and summary["measured"]["pages_read"] == len(read1)
    assert summary["measured"]["successes"] == sum(p["success"] for p in read1)
    assert summary["run_dirs"] == [str(run1)]
    read_domains = {c["url_host_registered_domain"] for c in chosen if c["plan_domain_pages_read"] > 0}
    assert read_domains and read_domains <= {".".join(urlsplit(p["url"]).hostname.split(".")[-2:]) for p in read1}

    assert main(["run", "--index", str(plan), "-o", str(run2), *prefix]) == 0
    read2 = pages_of(run2)
    keys1 = {pointer_key(p["warc_file"], p["warc_offset"]) for p in read1}
    keys2 = {pointer_key(p["warc_file"], p["warc_offset"]) for p in read2}
    assert not keys1 & keys2 and len(keys2) == len(chosen)

    # The report's sources section: languages from the pointer table's content_languages.
    page = render(str(run2))
    languages = page[page.index('id="sources-languages"'):]
    assert f"<td>en</td><td>{len(read2)}</td><td>{sum(p['success'] for p in read2)}</td>" in languages
    assert 'id="sources-top"' in page


def test_plan_rejects_what_it_cannot_use(demo_index, tmp_path, capsys):
    _, index, _ = demo_index
    out = str(tmp_path / "p.parquet")
    assert main(["plan", str(tmp_path / "nope"), "--index", str(index), "--budget", "5", "--output", out]) == 2
    assert "not a finished run (no manifest.json)" in capsys.readouterr().err
    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"warc_filename": ["a"], "warc_record_offset": [1], "warc_record_length": [2]}), bad)
    assert main(["plan", "--index", str(bad), "--budget", "5", "--output", out]) == 2
    assert "no column url" in capsys.readouterr().err
    assert main(["plan", "--index", str(index), "--budget", "0", "--output", out]) == 2
    assert main(["plan", "--index", str(index), "--budget", "5", "--output", out, "--set", "plan.languages=de:0.7,ja:0.6"]) == 2
    assert "more than the whole budget" in capsys.readouterr().err
    assert not Path(out).exists()


# -- learning and steering, on runs with known outcomes -----------------------------------------


def write_run(run: Path, pages: list[tuple[dict, bool]]) -> None:
    """Run tables as `mmcurate run` writes them, for index rows whose outcome is given."""
    docs, decisions = [], []
    for i, (row, success) in enumerate(pages):
        prov = {"warc_file": "/mirror/cc/" + row["warc_filename"], "warc_offset": row["warc_record_offset"],
                "warc_length": row["warc_record_length"], "warc_record_id": f"<urn:{i}>", "warc_date": "2024-05-01"}
        if success:
            docs.append({"doc_id": f"{run.name}-{i}", "url": row["url"], "texts": ["t", None], "images": [None, "i.jpg"],
                         "num_texts": 1, "num_images": 1, **prov,
                         # the images stage: 4 image URLs on the page, 3 of them failed or were refused
                         "signals": [{"key": "images.referenced", "value": 4.0}, {"key": "images.removed", "value": 3.0}]})
        else:
            decisions.append({"doc_id": f"{run.name}-{i}", "url": row["url"], "subject": "page", "stage": "heuristics",
                              "kind": "rejected", "reason": "content.too_few_images", **prov})
    for table, rows in ((DOCUMENTS, docs), (DECISIONS, decisions)):
        (run / table).mkdir(parents=True)
        pq.write_table(to_table(rows, table), run / table / "part-0.parquet")
    (run / "manifest.json").write_text("{}")


@pytest.fixture(scope="module")
def known(tmp_path_factory):
    """12 domains x 20 pages: good* (every page read became a document), bad* (none),
    and never-read ones; 4 of them Japanese. One run read 6 pages of each good and
    bad domain."""
    work = tmp_path_factory.mktemp("known")
    rows, read = [], []
    offset = 0
    for kind, n in (("good", 3), ("bad", 3), ("new", 2), ("jpgood", 2), ("jpbad", 2)):
        for d in range(n):
            language = "jpn" if kind.startswith("jp") else "eng"
            for i in range(20):
                row = cc_row(f"https://www.{kind}{d}.example/gallery/{i}", f"seg/{d % 2}/CC-{d % 2}.warc.gz", offset, 1000, language)
                offset += 1000
                rows.append(row)
                if kind != "new" and i < 6:
                    read.append((row, "good" in kind))
    index = work / "index.parquet"
    pq.write_table(pa.Table.from_pylist(rows), index)
    write_run(work / "run", read)
    return work, index, rows, read


def plan_rows(work, index, out, *extra, runs=None):
    args = ["plan", *(runs if runs is not None else [str(work / "run")]), "--index", str(index), "--budget", "30",
            "--output", str(out), "--runner-preset", "direct", "--quiet", *extra]
    assert main(args) == 0
    return pq.read_table(out).to_pylist()


def test_plan_steers_to_measured_yield_under_caps_and_quotas(known, tmp_path):
    work, index, rows, read = known
    chosen = plan_rows(work, index, tmp_path / "a.parquet", "--set", "plan.max_per_domain=6", "--set", "plan.languages=ja:0.2")
    read_keys = {pointer_key(r["warc_filename"], r["warc_record_offset"]) for r, _ in read}
    assert len(chosen) == 30
    assert not read_keys & {pointer_key(c["warc_filename"], c["warc_record_offset"]) for c in chosen}
    per_domain = {}
    for c in chosen:
        per_domain[c["url_host_registered_domain"]] = per_domain.get(c["url_host_registered_domain"], 0) + 1
    assert max(per_domain.values()) <= 6
    assert sum(c["plan_language"] == "ja" for c in chosen) >= 6
    # Measured good domains take (nearly) all the budget, at their cap; measured bad ones
    # get nothing; a domain never read gets at most probe_pages (5): exploration.
    assert sum(n for d, n in per_domain.items() if "good" in d) >= 24
    assert sum(n == 6 for d, n in per_domain.items() if "good" in d) >= 4
    assert not any(d.startswith("bad") or d.startswith("jpbad") for d in per_domain)
    assert all(n <= 5 for d, n in per_domain.items() if d.startswith("new"))
    summary = json.loads((tmp_path / "a.summary.json").read_text())
    assert summary["languages"]["ja"]["met"] and summary["max_pointers_per_domain"] <= 6
    good = next(e for e in summary["per_domain"] if e["domain"] == "good0.example")
    assert good["pages_read"] == 6 and good["successes_read"] == 6
    assert good["images_per_kept_document"] == 1.0 and good["image_retrieval_success"] == 0.25
    assert summary["measured"] == {"pages_read": 60, "successes": 30, "kept": 30, "yield": 0.5, "domains_read": 10,
                                   "hosts_read": 10, "global_prior": round(31 / 62, 4)}


def test_plan_is_deterministic_for_a_seed_and_reads_csv_too(known, tmp_path):
    work, index, rows, _ = known
    a = plan_rows(work, index, tmp_path / "a.parquet", "--set", "plan.seed=3")
    csv = tmp_path / "index.csv"
    pacsv.write_csv(pq.read_table(index), csv)
    b = plan_rows(work, csv, tmp_path / "b.parquet", "--set", "plan.seed=3")
    assert b == a  # the same plan again, from the same rows as CSV
    other = plan_rows(work, index, tmp_path / "d.parquet", "--set", "plan.seed=4")
    assert [r["url"] for r in other] != [r["url"] for r in a]


def test_plan_without_runs_explores_the_index(known, tmp_path):
    work, index, rows, _ = known
    chosen = plan_rows(work, index, tmp_path / "a.parquet", "--set", "plan.max_per_domain=10", runs=[])
    per_domain = {}
    for c in chosen:
        per_domain[c["url_host_registered_domain"]] = per_domain.get(c["url_host_registered_domain"], 0) + 1
    assert len(chosen) == 30 and max(per_domain.values()) <= 5 and len(per_domain) >= 6
    assert all(c["plan_domain_pages_read"] == 0 for c in chosen)


@pytest.mark.slow  # a Dask cluster of its own; the Dask runner's quick check is tests/runners/test_dask.py
def test_plan_on_a_dask_cluster_gives_the_same_pointers(known, tmp_path):
    distributed = pytest.importorskip("distributed")
    work, index, _, _ = known
    want = plan_rows(work, index, tmp_path / "direct.parquet", "--set", "plan.languages=ja:0.2")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    ) as cluster:
        args = ["plan", str(work / "run"), "--index", str(index), "--budget", "30", "--output", str(tmp_path / "dask.parquet"),
                "--set", "plan.languages=ja:0.2", "--runner-preset", "dask", "--runner-opt", f"address={cluster.scheduler_address}",
                "--quiet"]
        assert main(args) == 0
    assert pq.read_table(tmp_path / "dask.parquet").to_pylist() == want


def test_report_sources_give_yield_per_domain_and_language(known):
    work, index, _, _ = known
    con, views = connect(str(work / "run"))
    found = source_yields(con, views, {"index": {"files": [str(index)]}})
    by_domain = {r["key"]: (r["pages"], r["multimodal"]) for r in found["domains"]}
    # From the URL by the Public Suffix List, where .example is no suffix: the host.
    assert by_domain == {
        **{f"www.good{d}.example": (6, 6) for d in range(3)}, **{f"www.bad{d}.example": (6, 0) for d in range(3)},
        **{f"www.jpgood{d}.example": (6, 6) for d in range(2)}, **{f"www.jpbad{d}.example": (6, 0) for d in range(2)},
    }
    assert found["language_source"] == "index"
    assert [(r["key"], r["pages"], r["multimodal"]) for r in found["languages"]] == [("en", 36, 18), ("ja", 24, 12)]
