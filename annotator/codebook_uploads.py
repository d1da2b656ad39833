"""The codebook upload check taxonomy_app runs on every codebook file, upload or API text
(settings.TAXONOMY_UPLOAD_CHECK, taxonomy_app/uploads.py): the checks every upload passes
(annotator/upload_handling.py), then no NUL character in any name or value. JSON and YAML can
write one as an escape ("\\u0000", "\\0"), and PostgreSQL text cannot hold it: the file is
refused naming the field, before anything is written."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from annotator.upload_handling import check_codebook_upload as check_upload
from taxonomy_app.formats import CodebookFormatError, load_document


def check_codebook_upload(upload: Any) -> None:
    """Raises ValueError naming the file and the first field holding a NUL character."""
    check_upload(upload)
    upload.seek(0)
    data = upload.read()
    upload.seek(0)
    if b"\\" not in data and b"\x00" not in data:
        return  # no escape and no NUL byte: nothing to find
    try:
        document = load_document(data)
    except CodebookFormatError:
        return  # the import itself reports what is wrong with the file
    field = next(nul_fields(document), None)
    if field is not None:
        raise ValueError(
            f"{upload.name}: {field} contains a NUL character (\\u0000), which cannot be stored"
        )


def nul_fields(value: Any, path: str = "") -> Iterator[str]:
    """The paths (`codebook.facets[2].name`) of the keys and strings holding a NUL."""
    if isinstance(value, str):
        if "\x00" in value:
            yield f"field {path or 'the document'!r}"
    elif isinstance(value, dict):
        for key, item in value.items():
            name = f"{path}.{key}" if path else str(key)
            if "\x00" in str(key):
                yield f"a key of {path or 'the document'!r} ({str(key).replace(chr(0), '?')!r})"
            yield from nul_fields(item, name)
    elif isinstance(value, list):
        for n, item in enumerate(value):
            yield from nul_fields(item, f"{path}[{n}]")
