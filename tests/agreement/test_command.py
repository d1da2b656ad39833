"""manage.py compute_agreement: stores a run, prints its result with --json, clear errors."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from annotator.agreement.models import AgreementRun
from tests.agreement.factories import labelled_world

pytestmark = pytest.mark.django_db


def run_command(*args: str) -> str:
    out = io.StringIO()
    call_command("compute_agreement", *args, stdout=out)
    return out.getvalue()


def test_json_is_exactly_the_stored_result():
    world = labelled_world(items=6, annotators=2)
    printed = json.loads(run_command(str(world.study.pk), "--json"))
    run = AgreementRun.objects.get()
    assert printed == run.result
    assert run.trigger == "command" and run.status == "succeeded"


def test_study_by_name_and_round_number_with_a_summary():
    world = labelled_world(items=6, annotators=2)
    text = run_command(world.study.name, "--round", "1")
    assert "screening: α =" in text and "round 1" in text  # noqa: RUF001
    run = AgreementRun.objects.get()
    assert run.round == world.round
    head = run.facet_result("screening")["coefficients"]["krippendorff_alpha"]
    if head["ci"]:
        assert f"(95% CI {head['ci'][0]:.4f} to {head['ci'][1]:.4f})" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope"], "no study with id or name 'nope'"),
        (["{pk}", "--round", "7"], "has no round 7"),
        (["{pk}", "--facet", "colour"], "unknown facet keys"),
    ],
)
def test_bad_arguments_say_what_is_wrong(args, message):
    world = labelled_world(items=2, annotators=2)
    args = [a.format(pk=world.study.pk) for a in args]
    with pytest.raises(CommandError, match=message):
        run_command(*args)
    assert all(run.result is None for run in AgreementRun.objects.all())
