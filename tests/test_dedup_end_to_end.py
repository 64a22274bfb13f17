"""Dedup through the CLI: URL, exact and near duplicates across two WARC files, and
the 29 near-identical Japanese pages of the ClueWeb fixture, extraction + dedup only."""

import json
from pathlib import Path

import pyarrow.dataset as ds

from mmcurate.filters import reasons
from mmcurate.pipeline.cli import main
from mmcurate.schemas import make_doc_id
from warcbuild import WarcBuilder

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "warc"

ORCHARD = (
    "Every autumn the orchard on the south slope gives more apples than the family can sell at the weekly "
    "market, so the rest is pressed into juice and cider in the old barn. The oldest trees were planted by a "
    "great-grandfather who brought the grafts from a monastery garden across the border. Some varieties exist "
    "nowhere else now, and a seed bank in the capital keeps cuttings of them in case the trees are lost to "
    "frost or disease. Visitors can walk between the rows in October and taste each variety from the "
    "wooden crates at the end of the path, where the family also sells honey from their own hives."
)
RAILWAY = (
    "The mountain railway climbs nine hundred metres in eleven kilometres, through four tunnels and over a "
    "viaduct that the engineers of the time thought could not be built. Trains run every hour in summer and "
    "every two hours in winter, when snow closes the upper station for a few days each year. The line still "
    "carries the post and the bread for the villages above the tree line, as it has done since it opened."
)
HARBOUR_OLD = "The harbour page as it was first captured, before the new quay was built and the market moved."
HARBOUR_NEW = "The harbour page as captured later: the new quay is open and the fish market sits beside it."


def page(text: str) -> str:
    return f"<html><head><title>t</title></head><body><article><p>{text}</p></article></body></html>"


def _run(tmp_path: Path, inputs, *extra) -> tuple[dict, list[dict], set]:
    out = tmp_path / "out"
    args = ["run", *map(str, inputs), "--output", str(out), "--stages", "dedup", "--quiet",
            "--set", "extract.timeout_seconds=0", *extra]
    assert main(args) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    decisions = ds.dataset(out / "decisions").to_table().to_pylist()
    kept = set(ds.dataset(out / "documents").to_table().column("doc_id").to_pylist())
    return manifest, decisions, kept


def test_duplicates_across_two_files_name_their_survivors(tmp_path):
    ids = {}
    with WarcBuilder.open(tmp_path / "a.warc.gz") as warc:
        ids["harbour-old"] = warc.html("https://news.example.org/harbour?utm_source=rss", page(HARBOUR_OLD),
                                       date="2024-01-01T00:00:00Z")
        ids["railway"] = warc.html("https://news.example.org/railway", page(RAILWAY), date="2024-01-02T00:00:00Z")
        ids["orchard"] = warc.html("https://farm.example.com/orchard", page(ORCHARD), date="2024-01-03T00:00:00Z")
    with WarcBuilder.open(tmp_path / "b.warc.gz") as warc:
        ids["harbour-new"] = warc.html("http://NEWS.example.org/harbour#top", page(HARBOUR_NEW),
                                       date="2024-06-01T00:00:00Z")
        ids["railway-copy"] = warc.html("https://mirror.example.net/railway", page(RAILWAY.upper()),
                                        date="2024-06-02T00:00:00Z")
        ids["orchard-edit"] = warc.html("https://copies.example.net/orchard",
                                        page(ORCHARD.replace("October", "September and October")),
                                        date="2024-06-03T00:00:00Z")
    doc = {name: make_doc_id(record_id) for name, record_id in ids.items()}
    manifest, decisions, kept = _run(tmp_path, [tmp_path / "a.warc.gz", tmp_path / "b.warc.gz"])
    assert kept == {doc["harbour-new"], doc["railway"], doc["orchard"]}
    rows = {(r["doc_id"], r["stage"], r["reason"], r["detail"].split(" ")[0]) for r in decisions}
    assert rows == {
        (doc["harbour-old"], "dedup", reasons.DEDUP_SAME_URL, f"survivor={doc['harbour-new']}"),
        (doc["railway-copy"], "dedup", reasons.DEDUP_EXACT_TEXT, f"survivor={doc['railway']}"),
        (doc["orchard-edit"], "dedup", reasons.DEDUP_NEAR_DUPLICATE, f"survivor={doc['orchard']}"),
    }
    near = next(r for r in decisions if r["reason"] == reasons.DEDUP_NEAR_DUPLICATE)
    # verified by default: the value is the true Jaccard, the threshold verify_threshold
    assert 0.8 < near["value"] < 1.0 and near["threshold"] == 0.8 and near["detail"].endswith("jaccard=true")
    assert manifest["totals"] == {"pages": 6, "kept": 3, "rejected": 3, "errors": 0, "conserved": True}
    assert manifest["counter_mismatches"] == []
    assert manifest["stages"]["dedup"]["rejected_by_reason"] == {
        reasons.DEDUP_EXACT_TEXT: 1, reasons.DEDUP_NEAR_DUPLICATE: 1, reasons.DEDUP_SAME_URL: 1,
    }


def test_clueweb_japanese_shop_pages_end_as_one_document(tmp_path):
    manifest, decisions, kept = _run(tmp_path, [FIXTURES / "clueweb-quirk.warc.gz"])
    assert len(kept) == 1
    assert manifest["totals"]["pages"] == 29 and manifest["totals"]["conserved"]
    survivor = kept.pop()
    assert {r["detail"].split(" ")[0] for r in decisions if r["stage"] == "dedup"} == {f"survivor={survivor}"}
    assert len([r for r in decisions if r["stage"] == "dedup"]) == 28
