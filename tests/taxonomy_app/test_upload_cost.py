"""A codebook upload is parsed inside the request: past its size or cost it is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from taxonomy_app.formats import CodebookFormatError, dump_document, load_document, parse_codebook
from taxonomy_app.models import Category, Codebook, CodebookVersion
from tests.taxonomy_app.factories import small_document

SEED = Path(__file__).resolve().parents[2] / "taxonomy_app" / "seed" / "distributed_dl_bugs.yaml"


def seed_repeated(copies: int) -> bytes:
    """The seed codebook's facets `copies` times over, under new keys, as the exporter writes."""
    seed = yaml.safe_load(SEED.read_text())
    facets = [dict(f, key=f"{f['key']}-{n}") for n in range(copies) for f in seed["facets"]]
    document = {key: value for key, value in seed.items() if key != "rules"}
    return dump_document({**document, "facets": facets}, "yaml").encode()


def post(client, name: str, content: bytes):  # type: ignore[no-untyped-def]
    upload = SimpleUploadedFile(name, content, content_type="application/x-yaml")
    return client.post(reverse("taxonomy:import"), {"file": upload, "format": "auto"})


def test_the_seed_codebook_is_well_under_the_size_limit(settings) -> None:
    assert SEED.stat().st_size * 10 < settings.CODEBOOK_MAX_BYTES


def test_a_codebook_past_the_size_limit_is_refused_naming_file_and_limit(owner_client) -> None:
    content = seed_repeated(16)  # ~0.6 MB, over 512 KB
    assert len(content) > 512 * 1024
    response = post(owner_client, "huge-codebook.yaml", content)
    assert response.status_code == 400
    text = response.content.decode()
    assert "huge-codebook.yaml is larger than the limit of 512 KB" in text
    assert "Nothing was imported" in text
    assert not Codebook.objects.exists() and not Category.objects.exists()


def test_a_codebook_under_the_size_limit_but_too_many_categories_is_refused(
    owner_client, settings
) -> None:
    settings.CODEBOOK_MAX_BYTES = 4 * 1024 * 1024
    content = seed_repeated(32)  # 32 x 65 categories
    response = post(owner_client, "many.yaml", content)
    assert response.status_code == 400
    text = response.content.decode()
    assert "2,080 categories, over the limit of 2,000" in text
    assert not CodebookVersion.objects.exists() and not Category.objects.exists()


def test_a_file_of_many_small_values_is_refused_as_it_is_composed() -> None:
    text = "facets: [" + ", ".join(["1"] * 60_000) + "]\n"
    with pytest.raises(CodebookFormatError) as caught:
        load_document(text)
    assert "more than 50,000 values" in str(caught.value)
    assert "line 1" in str(caught.value)


def test_the_fast_loader_reads_as_safe_load_does() -> None:
    text = SEED.read_text()
    assert load_document(text) == yaml.safe_load(text)
    document = small_document()
    assert parse_codebook(load_document(dump_document(document, "yaml"))) == parse_codebook(
        document
    )


def test_the_depth_limit_still_holds_past_libyamls_own() -> None:
    with pytest.raises(CodebookFormatError) as caught:
        load_document("[" * 5_000)
    assert str(caught.value) == (
        "not valid YAML at line 1, column 33: nested deeper than the limit of 32 levels"
    )
