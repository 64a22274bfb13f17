"""A generated WARC (plus a truncated one) through the whole pipeline on the
DirectRunner, to Parquet in tmp_path, read back with pyarrow and DuckDB."""

import json

import duckdb
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from mmcurate.filters import reasons
from mmcurate.pipeline.cli import main
from mmcurate.schemas import make_doc_id
from mmcurate.schemas.tables import DECISIONS_SCHEMA, DOCUMENTS_SCHEMA
from shared_runs import copy_run
from warcbuild import WarcBuilder, truncate_record

ARTICLES = {
    "harbour": (
        "The harbour at the end of the valley was built in the eighteenth century, when the town still "
        "traded salt and timber with the cities along the coast.",
        "Fishing boats leave before dawn and return in the early afternoon, and the market on the quay "
        "sells what they bring back until the last crates are empty. Visitors who walk up the old road "
        "to the lighthouse can see the whole bay and the islands to the north.",
    ),
    "railway": (
        "The mountain railway climbs nine hundred metres in eleven kilometres, through four tunnels and "
        "over a viaduct that the engineers of the time thought could not be built.",
        "Trains run every hour in summer and every two hours in winter, when snow closes the upper "
        "station for a few days each year. The line still carries the post and the bread for the "
        "villages above the tree line, as it has done since it opened.",
    ),
    "orchard": (
        "Every autumn the orchard on the south slope gives more apples than the family can sell at the "
        "weekly market, so the rest is pressed into juice and cider in the old barn.",
        "The oldest trees were planted by a great-grandfather who brought the grafts from a monastery "
        "garden across the border. Some varieties exist nowhere else now, and a seed bank in the capital "
        "keeps cuttings of them in case the trees are lost to frost or disease.",
    ),
}


def article_html(name: str, base: str = "") -> str:
    first, second = ARTICLES[name]
    base_tag = f'<base href="{base}">' if base else ""
    return f"""<!doctype html><html><head><title>{name.title()}</title>{base_tag}</head><body>
<nav><a href="/">Home</a> <a href="/about">About</a></nav>
<article><h1>The {name}</h1>
<p>{first}</p>
<figure><img src="img/{name}-1.jpg" alt="The {name} in spring" width="640" height="480">
<figcaption>The {name}, photographed in spring.</figcaption></figure>
<p>{second}</p>
<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" data-src="/media/{name}-2.jpg" alt="The {name} at night">
</article>
<footer>Contact us</footer></body></html>"""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    ids = {}
    with WarcBuilder.open(root / "a.warc.gz") as warc:
        warc.warcinfo({"software": "mmcurate tests"})
        warc.request("https://news.example.org/harbour")
        ids["harbour"] = warc.html("https://news.example.org/harbour", article_html("harbour"))
        ids["railway"] = warc.html("https://news.example.org/railway", article_html("railway"))
        ids["harbour-copy"] = warc.html("https://mirror.example.net/harbour", article_html("harbour"))
        ids["short"] = warc.html(
            "https://news.example.org/short", '<html><body><p>Back soon.</p><img src="/a.jpg"></body></html>'
        )
        ids["noimg"] = warc.html(
            "https://news.example.org/noimg", f"<html><body><p>{' '.join(ARTICLES['railway'])}</p></body></html>"
        )
        ids["missing"] = warc.html("https://news.example.org/gone", "<html><body>Not found</body></html>", status=404)
        warc.image("https://news.example.org/img/harbour-1.jpg", b"\xff\xd8\xff\xe0fakejpeg")
        warc.revisit("https://news.example.org/harbour", refers_to_date="2024-05-01T12:00:01Z")
    with WarcBuilder.open(root / "b.warc.gz") as warc:
        ids["orchard"] = warc.html("https://blog.example.com/posts/orchard", article_html("orchard", base="https://cdn.example.com/blog/"))
        ids["cut"] = warc.html("https://blog.example.com/posts/cut", article_html("railway"))
    truncate_record(root / "b.warc.gz", root / "b-truncated.warc.gz", index=1)
    (root / "b.warc.gz").unlink()
    doc_ids = {name: make_doc_id(record_id) for name, record_id in ids.items()}
    return root, doc_ids


def run_cli(args):
    return main(["run", *map(str, args), "--quiet"])


@pytest.fixture(scope="module")
def output(corpus, tmp_path_factory):
    root, _ = corpus
    out = tmp_path_factory.mktemp("out")
    assert run_cli([root / "a.warc.gz", str(root / "b-*.warc.gz"), "--output", out]) == 0
    return out


def test_kept_ids_and_schema(output, corpus):
    _, ids = corpus
    table = ds.dataset(output / "documents", format="parquet").to_table()
    assert table.schema.equals(DOCUMENTS_SCHEMA, check_metadata=False)
    assert sorted(table.column("doc_id").to_pylist()) == sorted([ids["harbour"], ids["railway"], ids["orchard"]])


def test_every_decision_has_the_expected_reason(output, corpus):
    _, ids = corpus
    table = ds.dataset(output / "decisions", format="parquet").to_table()
    assert table.schema.equals(DECISIONS_SCHEMA, check_metadata=False)
    rows = {(r["doc_id"], r["stage"], r["kind"], r["reason"]) for r in table.to_pylist()}
    fault = [r for r in table.to_pylist() if r["kind"] == "error"]
    assert len(fault) == 1 and fault[0]["stage"] == "read" and fault[0]["warc_file"].endswith("b-truncated.warc.gz")
    assert rows == {
        (ids["harbour-copy"], "dedup", "rejected", reasons.DEDUP_EXACT_TEXT),
        (ids["short"], "heuristics", "rejected", reasons.CONTENT_TOO_FEW_WORDS),
        (ids["noimg"], "heuristics", "rejected", reasons.CONTENT_TOO_FEW_IMAGES),
        (ids["missing"], "read", "rejected", reasons.HTTP_STATUS_NOT_OK),
        (fault[0]["doc_id"], "read", "error", fault[0]["reason"]),
    }


def test_interleaved_order_and_resolved_image_urls(output, corpus):
    _, ids = corpus
    rows = {r["doc_id"]: r for r in pq.read_table(output / "documents").to_pylist()}
    harbour = rows[ids["harbour"]]
    kinds = ["img" if i is not None else "text" for i in harbour["images"]]
    images = [i for i in harbour["images"] if i is not None]
    assert images == ["https://news.example.org/img/harbour-1.jpg", "https://news.example.org/media/harbour-2.jpg"]
    # heading and paragraph, image, paragraph, image: the page's own order
    runs = [k for i, k in enumerate(kinds) if i == 0 or kinds[i - 1] != k]
    assert runs == ["text", "img", "text", "img"]
    first_img = kinds.index("img")
    assert any(t and "eighteenth century" in t for t in harbour["texts"][:first_img])
    assert any(t and "Fishing boats" in t for t in harbour["texts"][first_img:])
    meta = [m for m in harbour["image_meta"] if m is not None][0]
    assert (meta["alt"], meta["caption"], meta["declared_width"]) == (
        "The harbour in spring",
        "The harbour, photographed in spring.",
        640,
    )
    orchard = rows[ids["orchard"]]
    assert [i for i in orchard["images"] if i] == [
        "https://cdn.example.com/blog/img/orchard-1.jpg",
        "https://cdn.example.com/media/orchard-2.jpg",
    ]


def test_manifest_conservation_and_counts(output):
    manifest = json.loads((output / "manifest.json").read_text())
    totals = manifest["totals"]
    # 6 HTML responses in a.warc.gz, 1 before the cut in b, plus 1 row for the fault.
    assert totals == {"pages": 8, "kept": 3, "rejected": 4, "errors": 1, "conserved": True}
    assert manifest["stages_run"] == ["read", "extract", "heuristics", "dedup", "write"]
    assert manifest["stages"]["quality"] == {"enabled": False}
    assert manifest["stages"]["heuristics"]["rejected_by_reason"] == {
        reasons.CONTENT_TOO_FEW_IMAGES: 1,
        reasons.CONTENT_TOO_FEW_WORDS: 1,
    }
    assert manifest["records"]["by_type"]["revisit"] == 1
    assert manifest["records"]["by_type"]["request"] == 1
    assert manifest["records"]["images_captured"] == 1
    assert manifest["counter_mismatches"] == []
    assert len(manifest["config_sha256"]) == 64


def test_duckdb_sees_the_whole_funnel_in_one_query(output):
    con = duckdb.connect()
    by_kind = dict(
        con.sql(f"select kind, count(*) from read_parquet('{output}/decisions/*.parquet') group by kind").fetchall()
    )
    kept = con.sql(f"select count(*) from read_parquet('{output}/documents/*.parquet')").fetchall()[0][0]
    assert by_kind == {"rejected": 4, "error": 1} and kept == 3


def test_rerun_replaces_output_cleanly(corpus, output, tmp_path):
    """A rerun (other inputs, other stages) into a copy of the module's finished run."""
    root, ids = corpus
    out = copy_run(output, tmp_path / "out")
    first = json.loads((out / "manifest.json").read_text())["run_id"]
    assert run_cli([root / "a.warc.gz", "--output", out, "--stages", "heuristics"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["run_id"] != first and manifest["stages_off"][0] == "dedup"
    kept = sorted(pq.read_table(out / "documents").column("doc_id").to_pylist())
    assert kept == sorted([ids["harbour"], ids["railway"], ids["harbour-copy"]])
    names = sorted(p.name for p in out.iterdir())
    # The tables are links into the one current version; nothing of the first run is left.
    assert [n for n in names if not n.startswith(".")] == ["decisions", "documents", "images", "manifest.json", "pairs"]
    assert [n for n in names if n.startswith(".")] == [".current", ".lock", ".versions"]
    assert [p.name for p in (out / ".versions").iterdir()] == [manifest["run_id"]]
    assert len(list((out / "documents").glob("*.parquet"))) >= 1
