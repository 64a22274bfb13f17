"""Reading a WARC cut into ranges of records spread over workers gives exactly what
reading it whole gives; captured images are pointers whose bytes read back."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from warcio.archiveiterator import ArchiveIterator

from mmcurate.pipeline.config import ReadConfig
from mmcurate.schemas import CapturedImage, Provenance
from mmcurate.stages import read
from mmcurate.stages.read import ReadWarc, captured_payload
from warcbuild import lie_about_length, truncate_record

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "warc"


def outputs(patterns, config: ReadConfig, directory: Path) -> dict[str, list]:
    """Every output of ReadWarc, as comparable tuples (written out, read back)."""
    shapes = {
        "pages": lambda p: (p.doc_id, p.url, p.provenance.warc_file, p.provenance.offset, p.provenance.length, len(p.html)),
        "images": lambda i: (i.url, i.provenance.warc_file, i.provenance.offset, i.provenance.length),
        "rejected": lambda r: (r.doc_id, r.reason, r.provenance.offset),
        "errors": lambda r: (r.doc_id, r.reason, r.provenance.offset, r.detail),
    }
    p = TestPipeline()
    result = p | ReadWarc([str(x) for x in patterns], config)
    for name, shape in shapes.items():
        _ = (
            getattr(result, name)
            | f"Shape{name}" >> beam.Map(lambda row, shape=shape: repr(shape(row)))
            | f"Write{name}" >> beam.io.WriteToText(str(directory / name), shard_name_template="")
        )
    p.run().wait_until_finish()
    return {name: sorted(ast.literal_eval(line) for line in (directory / name).read_text().splitlines()) for name in shapes}


@pytest.fixture
def inputs(tmp_path) -> list[Path]:
    files = [tmp_path / name for name in ("demo.warc.gz", "books.toscrape.warc", "clueweb-quirk.warc.gz")]
    for path in files:
        shutil.copy(FIXTURES / path.name, path)
    # Cut inside a record, and lying Content-Lengths in the middle of a file (gzip and
    # plain): faults, and the records read again after them, must come out the same
    # whichever way a file is read.
    truncate_record(FIXTURES / "demo.warc.gz", tmp_path / "cut.warc.gz", index=40)
    lie_about_length(FIXTURES / "demo.warc.gz", tmp_path / "lying.warc.gz", index=30, delta=500)
    lie_about_length(FIXTURES / "books.toscrape.warc", tmp_path / "lying.warc", index=25, delta=-100)
    return [*files, tmp_path / "cut.warc.gz", tmp_path / "lying.warc.gz", tmp_path / "lying.warc"]


def test_chunks_of_records_read_exactly_as_whole_files(inputs, monkeypatch, tmp_path):
    whole = outputs(inputs, ReadConfig(reshuffle=False), tmp_path / "whole")
    monkeypatch.setattr(read, "CHUNK_BYTES", 3000)  # many ranges per file
    chunked = outputs(inputs, ReadConfig(reshuffle=True), tmp_path / "chunked")
    assert chunked == whole
    finder = read.FindChunksFn(ReadConfig())
    finder.setup()
    chunks = list(finder.process(str(inputs[0])))
    assert len(chunks) > 10 and chunks[-1][2] == -1  # demo.warc.gz alone was read in many ranges
    assert all(a[2] == b[1] for a, b in zip(chunks, chunks[1:]))
    assert len(whole["pages"]) > 40 and len(whole["images"]) > 20
    assert sorted(e[1] for e in whole["errors"]) == ["RecordLengthMismatch", "TruncatedRecord", "TruncatedRecord"]


def test_captured_images_are_pointers_whose_bytes_read_back(inputs, tmp_path):
    images = outputs(inputs[1:2], ReadConfig(reshuffle=False), tmp_path / "out")["images"]
    originals = {}
    with open(inputs[1], "rb") as fh:
        for record in ArchiveIterator(fh):
            if record.rec_type == "response" and (record.http_headers.get_header("Content-Type") or "").startswith("image/"):
                originals[record.rec_headers.get_header("WARC-Target-URI")] = record.content_stream().read()
    assert len(images) == len(originals) == 20
    for url, path, offset, length in images:
        image = CapturedImage(url, "image/jpeg", b"", Provenance(path, offset=offset, length=length))
        assert captured_payload(image) == originals[url]


def test_a_small_file_is_cut_into_several_ranges_for_the_workers(tmp_path):
    # 8 MB ranges left a WARC of a few MB in one range, so one worker read it all.
    assert read.chunk_bytes(None) == read.CHUNK_BYTES
    assert read.chunk_bytes(1 << 30) == read.CHUNK_BYTES
    assert read.chunk_bytes(128 << 20) == 2 << 20  # 64 ranges
    assert read.chunk_bytes(32 << 20) == 512 << 10
    assert read.chunk_bytes(1 << 20) == read.MIN_CHUNK_BYTES
    finder = read.FindChunksFn(ReadConfig())
    finder.setup()
    path = FIXTURES / "demo.warc.gz"  # 469 kB
    chunks = list(finder.process(str(path)))
    assert len(chunks) == 4 and chunks[0][1] == 0 and chunks[-1][2] == -1
    assert all(a[2] == b[1] for a, b in zip(chunks, chunks[1:]))
    assert all(read.MIN_CHUNK_BYTES <= end - start < read.MIN_CHUNK_BYTES + 200_000 for _, start, end in chunks[:-1])
    assert read.file_size(str(tmp_path / "missing.warc.gz")) is None
    assert list(finder.process(str(tmp_path / "missing.warc.gz"))) == [(str(tmp_path / "missing.warc.gz"), 0, -1)]
