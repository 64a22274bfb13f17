"""Fuzzing the WARC reader with mutated copies of the fixture WARCs (hypothesis).

Mutations: truncation, byte flips, lying ``Content-Length`` values, and garbage
written into a record's headers (or, in a gzip file, between two members). For
every mutated file: no exception escapes the reader, ``pages == kept + rejected +
errors`` (counters against rows), and every output of a record that lies wholly
before the first damaged byte (a record's span runs to the next record's start, so
it includes the blank lines that end it) is exactly what the intact file gives.
Except after a truncation, the records wholly after the damaged ones are read
again too (the reader resynchronises on the next record): their outputs are those
of the intact file, at offsets moved by the bytes the mutation added or removed.

A handful of cases run in the fast suite; a few hundred in the slow suite
(``-m slow``). ``derandomize`` keeps both reproducible; hypothesis prints the
failing mutation, shrunk, if one fails.
"""

from __future__ import annotations

import collections
import io
import re
import zlib
from pathlib import Path
from typing import NamedTuple

import apache_beam as beam
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mmcurate.pipeline.config import ReadConfig
from mmcurate.schemas import CapturedImage, Decision, Page
from mmcurate.stages.results import StageCounters
from mmcurate.stages.read import ReadWarcFileFn
from warcbuild import record_spans

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "warc"
NAMES = ["books.toscrape.warc", "parseMe.warc", "whirlwind.warc.gz", "clueweb-quirk.warc.gz", "demo.warc.gz"]
_CONTENT_LENGTH = re.compile(rb"\r\nContent-Length: *(\d+)", re.IGNORECASE)


class _Counting(StageCounters):
    """Counters kept in a dict, so a test outside a pipeline can read them."""

    def __init__(self) -> None:
        super().__init__("read")
        self.values: collections.Counter = collections.Counter()

    def inc(self, name: str, n: int = 1) -> None:
        self.values[name] += n


def read(name: str, data: bytes) -> tuple[list[tuple], collections.Counter]:
    """(offset, what) of every output of the reader on ``data``, and its counters."""
    fn = ReadWarcFileFn(ReadConfig())
    fn.setup()
    fn._counters = counters = _Counting()
    outputs = []
    for batch in fn.read_stream(name, io.BytesIO(data)):
        for item in batch:
            value = item.value if isinstance(item, beam.pvalue.TaggedOutput) else item
            if isinstance(value, Page):
                outputs.append((value.provenance.offset, ("page", value.doc_id, value.url, len(value.html))))
            elif isinstance(value, Decision):
                outputs.append((value.provenance.offset, (value.kind, value.doc_id, value.reason, value.url)))
            elif isinstance(value, CapturedImage):
                outputs.append((value.provenance.offset, ("image", value.url, len(value.payload), value.oversize)))
            else:
                raise AssertionError(f"unexpected output {value!r}")
    return outputs, counters.values


class Fixture(NamedTuple):
    data: bytes
    gz: bool
    spans: list[tuple[int, int]]  # (start, end) of each record, end = next start
    outputs: list[tuple]


def _load(name: str) -> Fixture:
    path = FIXTURES / name
    data = path.read_bytes()
    starts = [offset for _, offset, _ in record_spans(path)]
    spans = list(zip(starts, starts[1:] + [len(data)]))
    outputs, _ = read(name, data)
    return Fixture(data, data[:2] == b"\x1f\x8b", spans, outputs)


FIXTURE = {name: _load(name) for name in NAMES}


class Mutation(NamedTuple):
    name: str
    kind: str
    data: bytes
    damaged_from: int  # the first byte that differs from the intact file
    damaged_to: int = -1  # the last byte that differs (in the intact file's offsets); -1: to the end
    shift: int = 0  # bytes added (or removed) there: later offsets move by this

    def __repr__(self) -> str:  # what hypothesis prints for a failing case
        return f"Mutation({self.name}, {self.kind}, first damaged byte {self.damaged_from}, {len(self.data)} bytes)"


def _lie(fixture: Fixture, index: int, delta: int) -> tuple[bytes, int] | None:
    start, end = fixture.spans[index]
    data = fixture.data
    if fixture.gz:
        member = data[start:end]
        try:
            record = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(member)
        except zlib.error:
            return None
        match = _CONTENT_LENGTH.search(record, 0, record.find(b"\r\n\r\n"))
        if match is None or int(match.group(1)) + delta < 0:
            return None
        record = record[: match.start(1)] + str(int(match.group(1)) + delta).encode() + record[match.end(1) :]
        compressor = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS + 16)
        new = compressor.compress(record) + compressor.flush()
        return data[:start] + new + data[end:], start, end - 1, len(new) - (end - start)
    match = _CONTENT_LENGTH.search(data, start, data.find(b"\r\n\r\n", start))
    if match is None or int(match.group(1)) + delta < 0:
        return None
    digits = str(int(match.group(1)) + delta).encode()
    mutated = data[: match.start(1)] + digits + data[match.end(1) :]
    return mutated, match.start(1), match.end(1) - 1, len(digits) - len(match.group(1))


@st.composite
def mutations(draw) -> Mutation:
    name = draw(st.sampled_from(NAMES))
    fixture = FIXTURE[name]
    data = fixture.data
    kind = draw(st.sampled_from(["truncate", "flip", "lie", "garbage"]))
    if kind == "truncate":
        cut = draw(st.integers(1, len(data) - 1))
        return Mutation(name, kind, data[:cut], cut)
    if kind == "flip":
        positions = draw(st.lists(st.integers(0, len(data) - 1), min_size=1, max_size=6, unique=True))
        mutated = bytearray(data)
        for position in positions:
            mutated[position] ^= draw(st.integers(1, 255))
        return Mutation(name, kind, bytes(mutated), min(positions), max(positions))
    index = draw(st.integers(0, len(fixture.spans) - 1))
    start, _ = fixture.spans[index]
    if kind == "lie":
        delta = draw(st.sampled_from([-100_000, -500, -100, -7, -1, 1, 2, 5, 100, 500, 100_000]))
        lied = _lie(fixture, index, delta)
        if lied is None:  # no such header, or a negative length: flip one byte instead
            mutated = bytearray(data)
            mutated[start] ^= 0xFF
            return Mutation(name, "flip", bytes(mutated), start, start)
        return Mutation(name, f"lie {delta:+d} in record {index}", *lied)
    garbage = draw(st.binary(min_size=1, max_size=64))
    if fixture.gz:  # junk between two gzip members
        return Mutation(name, "garbage between members", data[:start] + garbage + data[start:], start, start, len(garbage))
    header_end = data.find(b"\r\n\r\n", start)
    position = draw(st.integers(start, max(start, header_end)))
    overwrite = draw(st.booleans())
    tail = data[position + len(garbage) :] if overwrite else data[position:]
    if overwrite:
        last = min(position + len(garbage), len(data)) - 1
        return Mutation(name, "garbage over headers", data[:position] + garbage + tail, position, last, position + len(garbage) - 1 - last)
    return Mutation(name, "garbage in headers", data[:position] + garbage + tail, position, position, len(garbage))


def check(mutation: Mutation) -> None:
    fixture = FIXTURE[mutation.name]
    outputs, counters = read(mutation.name, mutation.data)  # nothing may escape
    kinds = collections.Counter(what[0] for _, what in outputs)
    assert counters["pages"] == kinds["page"] + kinds["rejected"] + kinds["error"], (mutation, counters, kinds)
    assert counters.get("kept", 0) == kinds["page"]
    assert sum(v for k, v in counters.items() if k.startswith("errors.")) == kinds["error"]
    # Records wholly before the first damaged byte give exactly what they gave intact.
    intact = {start for start, end in fixture.spans if end <= mutation.damaged_from}
    before = sorted(o for o in fixture.outputs if o[0] in intact)
    after = sorted(o for o in outputs if o[0] in intact)
    assert after == before, (mutation, [o for o in before if o not in after][:3], [o for o in after if o not in before][:3])
    if mutation.damaged_to < 0:
        return
    # Records wholly after the damaged ones: read again, offsets moved by the shift.
    damaged_end = next(end for start, end in fixture.spans if start <= mutation.damaged_to < end)
    later = {start for start, _ in fixture.spans if start >= damaged_end}
    expected = sorted((o + mutation.shift, what) for o, what in fixture.outputs if o in later)
    found = sorted((o, what) for o, what in outputs if o - mutation.shift in later)
    assert found == expected, (mutation, [o for o in expected if o not in found][:3], [o for o in found if o not in expected][:3])


def test_the_intact_fixtures_have_records_and_outputs():
    for name, fixture in FIXTURE.items():
        assert len(fixture.spans) >= 4 and fixture.outputs, name
        assert not any(what[0] == "error" for _, what in fixture.outputs), name


@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(mutations())
def test_fuzzed_warcs_a_handful(mutation):
    check(mutation)


@pytest.mark.slow
@settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(mutations())
def test_fuzzed_warcs_a_few_hundred(mutation):
    check(mutation)
