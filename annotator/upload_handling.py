"""Django's side of uploads: the kinds and their limits (from settings), the upload handler that
enforces a route's limit while the request streams in, and the one call — `accept_upload` —
every upload form and API serializer makes before a file is kept or parsed.

The checks themselves are pure and live in annotator/uploads.py. A route that takes a file
names its kind in ROUTE_KINDS so its limit applies while streaming; any other route streams
at most settings.UPLOAD_MAX_BYTES and applies its own limit after.
"""

from __future__ import annotations

import os
from typing import Any

from django.conf import settings
from django.core.files.base import File
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import UploadedFile
from django.core.files.uploadhandler import FileUploadHandler
from django.urls import Resolver404, resolve

from annotator.uploads import (
    TEXT_TYPES,
    XLSX_TYPES,
    XML_TYPES,
    Kind,
    UploadRefused,
    ZipLimits,
    check_declared_type,
    check_stream,
    check_xlsx,
    extension_of,
    stored_name,
    too_large,
)

__all__ = [
    "UploadRefused",
    "accept_upload",
    "check_codebook_upload",
    "generated_file",
    "kind",
    "store_upload",
]

# view name → kind, for the streaming limit (tests/security/test_uploads.py covers each route).
ROUTE_KINDS: dict[str, str | tuple[str, ...]] = {
    "issues:import": "issues",
    "api-import-create": "issues",
    # A prior-label file is a workbook or a Label Studio/doccano file: while it streams in, the
    # route cannot tell which, so the larger limit holds; `accept_upload` then applies its own.
    "exports:prior_upload": ("workbook", "labels"),
    "api-prior-inspect": ("workbook", "labels"),
    "api-prior-import": ("workbook", "labels"),
    "taxonomy:import": "codebook",
    "api-codebook-import": "codebook",
}


def kind(name: str) -> Kind:
    """The kind `name` with its limit as configured now (read per call: tests override it)."""
    if name == "issues":
        issues = (".json", ".jsonl", ".ndjson", ".csv")
        return Kind("file of issues", issues, TEXT_TYPES, settings.IMPORT_MAX_BYTES)
    if name == "workbook":
        return Kind(".xlsx workbook", (".xlsx",), XLSX_TYPES, settings.WORKBOOK_MAX_BYTES)
    if name == "labels":
        labels = (".json", ".jsonl", ".ndjson")
        label = "Label Studio or doccano export"
        return Kind(label, labels, TEXT_TYPES, settings.LABEL_FILE_MAX_BYTES)
    if name == "codebook":
        codebooks = (".json", ".yaml", ".yml", ".qdc")
        label = "JSON, YAML or REFI-QDA codebook"
        return Kind(label, codebooks, TEXT_TYPES | XML_TYPES, settings.CODEBOOK_MAX_BYTES)
    raise ValueError(f"unknown kind of upload {name!r}")


def zip_limits() -> ZipLimits:
    return ZipLimits(
        max_inflated=settings.XLSX_MAX_INFLATED_BYTES,
        max_ratio=settings.XLSX_MAX_RATIO,
        max_cells=settings.WORKBOOK_MAX_CELLS,
    )


def accept_upload(upload: Any, kind_name: str) -> None:
    """Check an uploaded file of kind `kind_name` from its first byte to its last. Raises
    UploadRefused, naming the file. The file is left rewound; nothing is written anywhere."""
    chosen = kind(kind_name)
    refusal = getattr(upload, "refusal", None)
    if refusal:
        raise UploadRefused(refusal)
    name = upload.name or ""
    extension_of(name, chosen)
    if upload.size is not None and upload.size > chosen.max_bytes:
        raise too_large(name, chosen.max_bytes)
    upload.seek(0)
    check_stream(name, upload.chunks(), chosen)
    check_declared_type(name, getattr(upload, "content_type", ""), chosen)
    if chosen.is_xlsx:
        upload.seek(0)
        check_xlsx(upload, name, zip_limits())
    upload.seek(0)


def store_upload(upload: Any, *, directory: str, kind_name: str) -> str:
    """Keep an accepted upload under MEDIA_ROOT/`directory` with a generated name; return the
    storage name. The user's file name stays data (in the job or session), never a path."""
    upload.seek(0)
    name = stored_name(directory, upload.name, kind(kind_name))
    return default_storage.save(name, File(upload))


def generated_file(upload: Any, kind_name: str) -> File[Any]:
    """The upload under a generated name, for a FileField whose upload_to adds the directory."""
    upload.seek(0)
    return File(upload, name=stored_name("", upload.name, kind(kind_name)))


def check_codebook_upload(upload: Any) -> None:
    """taxonomy_app's upload check (settings.TAXONOMY_UPLOAD_CHECK): it imports nothing from
    annotator, so it reaches this through the setting. Raises UploadRefused (a ValueError)."""
    accept_upload(upload, "codebook")


class RefusedUpload(UploadedFile):
    """Stands in for a file that passed its route's limit while streaming: it holds no bytes,
    only the refusal, which `accept_upload` raises."""

    def __init__(self, name: str, content_type: str, size: int, limit: int) -> None:
        import io

        super().__init__(io.BytesIO(), name, content_type, size)
        self.refusal = str(too_large(name, limit))


class LimitedUploadHandler(FileUploadHandler):
    """First in FILE_UPLOAD_HANDLERS: passes each chunk on to Django's memory or temporary-file
    handler until the file passes its route's limit, then swallows the rest and discards what
    was written, so no more than the limit ever reaches the disk."""

    def __init__(self, request: Any = None) -> None:
        super().__init__(request)
        self.limit = route_limit(getattr(request, "path_info", ""))

    def new_file(self, *args: Any, **kwargs: Any) -> None:
        super().new_file(*args, **kwargs)
        self.received, self.refused = 0, False
        # The temporary-file handler writes to the app's own directory, which the job sweep
        # clears of files a killed request left (FILE_UPLOAD_TEMP_DIR, settings.TEMP_DIR).
        if settings.FILE_UPLOAD_TEMP_DIR:
            os.makedirs(settings.FILE_UPLOAD_TEMP_DIR, exist_ok=True)

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes | None:
        self.received += len(raw_data)
        if self.received > self.limit:
            self.refused = True
            return None
        return raw_data

    def file_complete(self, file_size: int) -> UploadedFile[Any] | None:
        if not self.refused:
            return None
        for handler in getattr(self.request, "upload_handlers", []):
            partial = getattr(handler, "file", None) if handler is not self else None
            if partial is not None:
                partial.close()  # a temporary upload file deletes itself on close
        name, content_type = self.file_name or "", self.content_type or ""
        return RefusedUpload(name, content_type, self.received, self.limit)


def route_limit(path_info: str) -> int:
    """The streaming limit of the route at `path_info`: its kind's, else UPLOAD_MAX_BYTES."""
    try:
        view_name = resolve(path_info).view_name
    except Resolver404:
        view_name = ""
    if view_name in ROUTE_KINDS:
        kinds = ROUTE_KINDS[view_name]
        names = (kinds,) if isinstance(kinds, str) else kinds
        return max(kind(name).max_bytes for name in names)
    return int(settings.UPLOAD_MAX_BYTES)
