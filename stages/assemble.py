"""The output tables' files written by Beam's workers, one task per file, from the
plan ``stages/engines/table_assembly.plan_files`` made of the parts: a run whose
staging lies on a remote filesystem (``gs://``, ``s3://``) has its tables assembled
where the parts are read fastest and in parallel, not through the process that
launched the run."""

from __future__ import annotations

from typing import Sequence

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from mmcurate.schemas.tables import SCHEMAS
from mmcurate.stages.engines.table_assembly import OutputFile, write_file


class WriteOutputFileFn(beam.DoFn):
    """``(table, OutputFile)`` -> ``(table, path)`` once the file is written."""

    def __init__(self, compression: str, rows_per_group: int):
        self._compression = compression
        self._rows_per_group = rows_per_group

    def process(self, item: tuple[str, OutputFile]):
        table, spec = item
        yield table, write_file(FileSystems, spec, SCHEMAS[table], self._compression, self._rows_per_group)


class AssembleFiles(beam.PTransform):
    """Writes every planned output file; the output is ``(table, path)`` per file."""

    def __init__(self, files: Sequence[tuple[str, OutputFile]], compression: str, rows_per_group: int):
        super().__init__()
        self._files = list(files)
        self._compression = compression
        self._rows_per_group = rows_per_group

    def expand(self, pbegin):
        return (
            pbegin
            | "Plan" >> beam.Create(self._files)
            # One file per task: the files of a table go to different workers.
            | "Spread" >> beam.Reshuffle()
            | "WriteFiles" >> beam.ParDo(WriteOutputFileFn(self._compression, self._rows_per_group))
        )
