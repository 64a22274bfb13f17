"""Several outputs of one test pipeline checked by a single ``assert_that``.

Each ``assert_that`` adds its own transforms and a shuffle to the pipeline, about a
tenth of a second of CPU per check on the DirectRunner; a test that checks eight
outputs pays it eight times. ``assert_outputs`` tags each output's elements with the
check's name and compares them all at once, as ``equal_to`` does (a multiset, order
free): a failure lists the unexpected and the missing ``(name, element)`` pairs.
"""

from __future__ import annotations

from typing import Iterable, Mapping

import apache_beam as beam
from apache_beam.testing.util import assert_that, equal_to


def assert_outputs(checks: Mapping[str, tuple[beam.PCollection, Iterable]], label: str = "Outputs") -> None:
    """``checks``: name -> (PCollection, the elements it must hold)."""
    tagged = [
        pcoll | f"{label}Tag{name}" >> beam.Map(lambda element, name=name: (name, element))
        for name, (pcoll, _) in checks.items()
    ]
    want = [(name, element) for name, (_, expected) in checks.items() for element in expected]
    assert_that(tagged | f"{label}Flatten" >> beam.Flatten(), equal_to(want), label=label)
