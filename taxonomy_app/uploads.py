"""The hook through which codebook uploads are checked, without importing the app that checks.

The project checks every upload in one place outside taxonomy_app, which imports nothing from
the apps around it; it names its check in a setting:

    TAXONOMY_UPLOAD_CHECK = "annotator.upload_handling.check_codebook_upload"

The callable takes the uploaded file and raises ValueError, with a message naming the file, to
refuse it. Unset, `check_size` refuses only files past CODEBOOK_MAX_BYTES (default 5 MB).
"""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.core.files.base import ContentFile
from django.utils.module_loading import import_string

DEFAULT = "taxonomy_app.uploads.check_size"
_XML_START = re.compile(r"^\ufeff?\s*<(?:\?xml|CodeBook)")


def check_size(upload: Any) -> None:
    limit = getattr(settings, "CODEBOOK_MAX_BYTES", 5 * 1024 * 1024)
    if upload.size > limit:
        raise ValueError(f"{upload.name} is larger than the limit of {limit // 1024 // 1024} MB")


def check_upload(upload: Any) -> None:
    """Run the configured check (read on every call so tests can override it)."""
    import_string(getattr(settings, "TAXONOMY_UPLOAD_CHECK", DEFAULT))(upload)


def check_text(content: str, fmt: str) -> None:
    """The API's `content` field is a file sent as text: the same check, named "content" with
    the extension of its format: .qdc for XML (an XML declaration or a <CodeBook> root; any
    other "<", such as an HTML page, is checked as YAML, as before), .json, else .yaml."""
    if fmt == "qdc" or (fmt == "auto" and _XML_START.match(content)):
        extension = ".qdc"
    elif fmt == "json" or content.lstrip().startswith("{"):
        extension = ".json"
    else:
        extension = ".yaml"
    check_upload(ContentFile(content.encode("utf-8", "surrogatepass"), name=f"content{extension}"))
