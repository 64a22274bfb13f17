"""Batches of documents through a model loaded once per worker process, without
Beam's ``RunInference``.

``RunInference`` lives in ``apache_beam.ml``, whose import loads torch (about
600 MB of resident memory and 8 s on a busy machine) whether or not the model
needs it. The quality stage's fastText classifiers do not, so it runs them through
``RunModel``: Beam's ``BatchElements`` (sized by the handler, as ``RunInference``
sizes them) and a DoFn that loads the model in ``setup``, shared by the DoFn
instances of one process (``apache_beam.utils.shared``, as ``RunInference``
shares it). A handler is anything with Beam's ``ModelHandler`` methods that this
uses: ``load_model()``, ``run_inference(batch, model)`` and, optionally,
``batch_elements_kwargs()``; a Beam ``ModelHandler`` is one.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Protocol, Sequence

import apache_beam as beam
from apache_beam.utils import shared


class BatchModel(Protocol):
    """What ``RunModel`` needs of a model handler (a subset of Beam's ``ModelHandler``)."""

    def load_model(self) -> Any: ...

    def run_inference(self, batch: Sequence[Any], model: Any, inference_args: Any = None) -> Iterable[Any]: ...


class _RunModelFn(beam.DoFn):
    def __init__(self, handler: BatchModel):
        self._handler = handler
        self._shared = shared.Shared()

    def setup(self) -> None:
        # The loaded model must allow a weak reference (a dict subclass, not a dict).
        self._model = self._shared.acquire(self._handler.load_model)

    def process(self, batch: Sequence[Any]) -> Iterable[Any]:
        yield from self._handler.run_inference(batch, self._model)


class RunModel(beam.PTransform):
    """Elements -> what ``handler.run_inference`` yields for their batches."""

    def __init__(self, handler: BatchModel, label: str | None = None):
        super().__init__(label)
        self._handler = handler

    def expand(self, pcoll: beam.PCollection) -> beam.PCollection:
        sizes: Mapping[str, Any] = getattr(self._handler, "batch_elements_kwargs", dict)()
        return (
            pcoll
            | "Batch" >> beam.BatchElements(**sizes)
            | "Infer" >> beam.ParDo(_RunModelFn(self._handler))
        )
