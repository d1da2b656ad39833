"""Writing GitHub data into the database: the import service and the import job around it."""

from __future__ import annotations

import gc
import logging
import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any

from django.conf import settings
from django.db import connection, transaction

from annotator.jobs import claim_job, finish_job, job_heartbeat, memory_budget, report_progress
from annotator.upload_handling import generated_file

from .formats import ImportFormatError, iter_records
from .models import ImportJob
from .search import index_pending_issues, refresh_statistics_on_commit
from .writer import ImportCounts, RecordWriter, check_repository_name

logger = logging.getLogger(__name__)

BATCH_SIZE = 1000
# Batches each stage ahead of the writer (the parse, the search vectors) holds ready: bounded, so
# memory stays flat. A batch is ~20 MB of Python objects; two each made the import no faster
# and its peak RSS 20-30 MB larger (benchmarks/import_issues.py).
PARSED_AHEAD = 1


@dataclass(frozen=True)
class ImportProgress:
    records: int
    bytes_read: int


class CountingReader:
    """Wraps a binary stream and counts the bytes read through it, for progress bars."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self.bytes_read = 0

    def read(self, size: int = -1) -> bytes:
        chunk = self._stream.read(size)
        self.bytes_read += len(chunk)
        return chunk

    def readable(self) -> bool:
        return True


def import_issues(
    *,
    stream: IO[bytes],
    format: str = "auto",
    filename: str = "",
    repository: str | None = None,
    max_bytes: int | None = None,
    on_progress: Callable[[ImportProgress], None] | None = None,
    index_for_search: bool = True,
    job: ImportJob | None = None,
    user: Any = None,
) -> ImportCounts:
    """Import a file of issues and/or comments; all of it or, on any error, nothing.

    Raises ImportFormatError (naming the record and field) for bad input. Identical duplicates
    are skipped; the same number with different content in one file is an error. Once the
    import has committed, the issues it wrote are indexed for search (see search.py) unless
    `index_for_search` is false. An issue a study holds whose title or body the file changes
    keeps its earlier text as a revision, naming `job` and `user` (who imported it).
    """
    if repository:
        check_repository_name(repository, "--repo")
    reader = CountingReader(stream)
    records = iter_records(
        reader,
        format=format,
        filename=filename,
        max_bytes=max_bytes or settings.IMPORT_MAX_BYTES,
        max_depth=settings.IMPORT_MAX_DEPTH,
        default_repository=repository,
        max_records=settings.IMPORT_MAX_RECORDS,
        max_string=settings.IMPORT_MAX_STRING,
    )
    if user is None and job is not None:
        user = job.created_by
    writer = RecordWriter(job=job, user=user)
    with (
        _collector_eased(),
        transaction.atomic(),
        _ParsedAhead(records, BATCH_SIZE, writer.prepare) as prepared,
        _VectorsAhead(prepared, writer.with_vectors) as batches,
    ):
        read = 0
        for batch in batches:
            writer.write(batch)
            read += len(batch)
            if on_progress:
                on_progress(ImportProgress(records=read, bytes_read=reader.bytes_read))
        refresh_statistics_on_commit(writer.counts.created + writer.counts.updated)
    if index_for_search:
        index_pending_issues()
    return writer.counts


_YOUNG_OBJECTS = 20_000  # new objects between collections while an import runs


@contextmanager
def _collector_eased() -> Iterator[None]:
    """The garbage collector eased while the import runs, and put back as it was after.

    - The objects alive before it (the interpreter's, Django's, the app's: hundreds of
      thousands) are kept out of its view: each full collection the import set off walked them
      all (13 in a 100,000-issue import, 1.0 s). A process that froze its own start-up objects
      (annotator/wsgi.py) is left as it is.
    - It runs after every 20,000 new objects, not 700: the import's objects die young or a
      batch at a time, and 1,630 collections of the youngest and 150 of the next took 0.8 s.

    100,000 issues: 1.9 s of collecting → 0.15 s (benchmarks/import_issues.py)."""
    thresholds = gc.get_threshold()
    frozen = gc.get_freeze_count() > 0
    if not frozen:
        gc.freeze()
    gc.set_threshold(_YOUNG_OBJECTS, *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        if not frozen:
            gc.unfreeze()


class _JobLost(Exception):
    """The sweep failed the job as lost while it ran: its writes are rolled back."""


def run_import_job(*, job_id: int) -> None:
    """Run ImportJob `job_id`: import its file and record the outcome on the job row.

    Success is recorded in the import's own transaction, and only while this worker still holds
    the job, so a job failed as lost (annotator/job_sweep.py) has kept nothing. The issues are
    indexed for search once that has committed.
    """
    job = ImportJob.objects.get(pk=job_id)
    if not claim_job(ImportJob, job.pk):
        return  # finished, or another worker holds it (a redelivered task)
    with job_heartbeat(ImportJob, job.pk):
        budget = settings.IMPORT_JOB_MAX_MEMORY_MB
        try:
            with memory_budget(budget), job.file.open("rb") as stream, transaction.atomic():
                _import_and_finish(job, stream)
        except _JobLost:
            return
        except ImportFormatError as error:
            finish_job(ImportJob, job.pk, status=ImportJob.Status.FAILED, error=str(error))
            return
        except MemoryError:
            failed = f"the import needed more than the job's memory limit of {budget} MB"
            finish_job(ImportJob, job.pk, status=ImportJob.Status.FAILED, error=failed)
            return
        except Exception as error:
            logger.exception("import job %s failed", job.pk)
            failed = f"internal error: {error}"
            finish_job(ImportJob, job.pk, status=ImportJob.Status.FAILED, error=failed)
            raise
        index_pending_issues()


def _import_and_finish(job: ImportJob, stream: IO[bytes]) -> None:
    counts = import_issues(
        stream=stream,
        format=job.format,
        filename=job.original_name,
        repository=job.repository or None,
        on_progress=lambda p: report_progress(
            ImportJob, job.pk, records_read=p.records, bytes_read=p.bytes_read
        ),
        index_for_search=False,
        job=job,
    )
    finished = finish_job(
        ImportJob,
        job.pk,
        status=ImportJob.Status.SUCCEEDED,
        created=counts.created,
        updated=counts.updated,
        unchanged=counts.unchanged,
        skipped=counts.skipped,
        notes="\n".join(counts.skipped_reasons),
        bytes_read=job.size_bytes,
    )
    if not finished:
        raise _JobLost


def start_import_job(
    *, uploaded: Any, format: str = "auto", repository: str = "", user: Any = None
) -> ImportJob:
    """Store an uploaded file as an ImportJob and queue it once the transaction commits."""
    from annotator.dispatch import enqueue_job

    job = ImportJob.objects.create(
        # Stored under a generated name; the user's name is data (annotator/uploads.py).
        file=generated_file(uploaded, "issues"),
        original_name=uploaded.name[:255],
        format=format,
        repository=repository,
        size_bytes=uploaded.size,
        created_by=user if user is not None and user.is_authenticated else None,
    )
    enqueue_job(job)
    return job


class _Ahead(threading.Thread):
    """Batches made in a thread of its own ahead of the writer (`_batches`), in order. Holds
    at most PARSED_AHEAD of them, so memory stays flat; an error is raised in its place, after
    the batches before it. Use it as a context manager: leaving the block stops the thread,
    however the block ends."""

    def __init__(self, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self._queue: queue.Queue[list[Any] | BaseException | None] = queue.Queue(PARSED_AHEAD)
        self._stopped = threading.Event()

    def __enter__(self) -> Iterator[list[Any]]:
        self.start()
        return self._read()

    def __exit__(self, *exc_info: object) -> None:
        self._stopped.set()
        self.join()

    def _batches(self) -> Iterator[list[Any]]:
        raise NotImplementedError

    def _read(self) -> Iterator[list[Any]]:
        while (item := self._queue.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            yield item

    def run(self) -> None:
        try:
            for batch in self._batches():
                if self._stopped.is_set():
                    return
                self._put(batch)
            self._put(None)
        except BaseException as error:  # MemoryError too: the job reports it
            self._put(error)

    def _put(self, item: list[Any] | BaseException | None) -> None:
        while not self._stopped.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return
            except queue.Full:
                continue


class _ParsedAhead(_Ahead):
    """The records in batches, in order, parsed and prepared (`prepare`: RecordWriter.prepare)
    in a thread of its own ahead of the writer: the writer's statements leave the interpreter
    free while PostgreSQL works, and the parse (JSON, the depth scan, hashes, the rows' COPY
    text) fills that time on the machine's other core. The records before an error are a batch
    of their own, written first: an error among them is the file's first."""

    def __init__(self, records: Iterable[Any], size: int, prepare: Callable[[Any], Any]) -> None:
        super().__init__("import-parser")
        self._records, self._size, self._prepare = records, size, prepare

    def _batches(self) -> Iterator[list[Any]]:
        batch: list[Any] = []
        try:
            for record in self._records:
                if self._stopped.is_set():
                    return
                batch.append(self._prepare(record))
                if len(batch) == self._size:
                    yield batch
                    batch = []
        except BaseException:
            if batch:
                yield batch
            raise
        if batch:
            yield batch


class _VectorsAhead(_Ahead):
    """The parsed batches with their issues' search vectors (`add`: RecordWriter.with_vectors),
    computed on a connection of this thread's own while the writer's connection stores the
    batch before: the vectors are half of the upsert's backend time, and here PostgreSQL spends
    it on another backend, on the machine's other core. Closes its connection when done."""

    def __init__(self, batches: Iterator[list[Any]], add: Callable[[list[Any]], list[Any]]) -> None:
        super().__init__("import-vectors")
        self._source, self._add = batches, add

    def _batches(self) -> Iterator[list[Any]]:
        for batch in self._source:
            if self._stopped.is_set():
                return
            yield self._add(batch)

    def run(self) -> None:
        try:
            super().run()
        finally:
            connection.close()  # this thread's own
