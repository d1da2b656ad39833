"""Issue files are bounded while they stream: records per file and characters per string, each
refusal naming the record and field, with nothing written (ANNOTATOR_IMPORT_MAX_RECORDS,
ANNOTATOR_IMPORT_MAX_STRING)."""

from __future__ import annotations

import pytest

from annotator.issues.formats import ImportFormatError
from annotator.issues.models import Issue
from tests.issues.test_import_service import rest_issue, run

pytestmark = pytest.mark.django_db


def test_a_string_past_the_limit_is_refused_naming_the_record_and_field(settings):
    settings.IMPORT_MAX_STRING = 1_000
    records = [rest_issue(1), rest_issue(2, body="x" * 1_001)]
    with pytest.raises(ImportFormatError) as refused:
        run(records)
    message = str(refused.value)
    assert message.startswith("record 2: field 'body': 1,001 characters")
    assert "limit of 1,000 (ANNOTATOR_IMPORT_MAX_STRING)" in message
    assert not Issue.objects.exists()


def test_a_long_string_kept_only_in_the_raw_object_is_refused_by_its_path(settings):
    settings.IMPORT_MAX_STRING = 1_000
    records = [rest_issue(1, reactions={"notes": ["ok", "y" * 5_000]})]
    with pytest.raises(ImportFormatError, match=r"record 1: field 'reactions.notes\[1\]': 5,000"):
        run(records)
    assert not Issue.objects.exists()


def test_a_long_string_at_the_top_of_the_raw_object_is_refused_by_its_key(settings):
    settings.IMPORT_MAX_STRING = 1_000
    records = [rest_issue(1), rest_issue(2, active_lock_reason="z" * 1_200)]
    with pytest.raises(ImportFormatError, match=r"record 2: field 'active_lock_reason': 1,200"):
        run(records)
    assert not Issue.objects.exists()


def test_the_default_string_limit_takes_a_github_sized_body():
    run([rest_issue(1, body="z" * 65_536)])
    assert len(Issue.objects.get().body) == 65_536


def test_a_file_past_the_record_limit_is_refused_at_the_first_record_over(settings):
    settings.IMPORT_MAX_RECORDS = 3
    with pytest.raises(ImportFormatError) as refused:
        run([rest_issue(n) for n in range(1, 5)])
    assert str(refused.value).startswith("record 4: the file holds more than the limit of 3")
    assert not Issue.objects.exists()
    run([rest_issue(n) for n in range(1, 4)])  # at the limit: imported
    assert Issue.objects.count() == 3


def test_csv_strings_are_bounded_too(settings):
    settings.IMPORT_MAX_STRING = 50
    csv = "repository,number,title,body,state\nhpcaitech/ColossalAI,7,short," + "b" * 60 + ",open\n"
    with pytest.raises(ImportFormatError, match=r"field 'body': 60 characters"):
        run(csv, format="csv")
    assert not Issue.objects.exists()
