"""Builders and checks for the security tests: a populated study, the policy as sent, and an
audit of rendered HTML for the inline code the Content-Security-Policy would block."""

from __future__ import annotations

from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any

from annotator.agreement.models import AgreementRun
from annotator.agreement.services import run_agreement_run, start_agreement_run
from annotator.exports.models import ExportJob
from annotator.exports.services import run_export_job, start_export_job
from annotator.studies.models import Assignment, Item, Membership
from annotator.studies.services import add_member
from taxonomy_app.models import CodebookVersion, Proposal
from taxonomy_app.services.versions import start_draft
from tests.exports.factories import exported_world
from tests.factories import IssueCommentFactory, UserFactory
from tests.studies.factories import World

# An issue comment as bug reports write them: a screenshot, a long log, a hostile attribute.
COMMENT = (
    "Screenshot: ![trace](https://user-images.githubusercontent.com/1/trace.png)\n\n"
    '<p style="color:red" onclick="alert(1)">styled</p>\n\n```\n'
    + "\n".join(f"rank {n}: NCCL timeout" for n in range(40))
    + "\n```\n"
)


@dataclass
class Populated:
    world: World
    adjudicator: Any
    disputed: Item
    run: AgreementRun
    export: ExportJob
    draft: CodebookVersion

    @property
    def study(self) -> Any:
        return self.world.study

    @property
    def owner(self) -> Any:
        return self.world.owner

    def assignment_of(self, annotator: Any) -> Assignment:
        return Assignment.objects.filter(annotator=annotator).order_by("pk").first()


def populated_study() -> Populated:
    """Five issues labelled by two annotators (four decided, one disputed), an adjudicator, a
    computed agreement run, a finished CSV export, a codebook draft and an open proposal."""
    world = exported_world()
    adjudicator = UserFactory(username="adjudicator")
    add_member(study=world.study, user=adjudicator, role=Membership.Role.ADJUDICATOR)
    for issue in world.issues:
        IssueCommentFactory(issue=issue, body=COMMENT)
    run = start_agreement_run(study=world.study, enqueue=False)
    run_agreement_run(run_id=run.pk)
    export = start_export_job(study=world.study, format="csv", user=world.owner)
    run_export_job(job_id=export.pk)
    draft = start_draft(codebook=world.version.codebook, user=world.owner)
    symptom = world.version.facets.get(key="symptom")
    Proposal.objects.create(
        facet=symptom, name="Deadlock", rationale="Not a hang.", proposed_by=world.annotators[0]
    )
    disputed = Item.objects.filter(study=world.study, decision__isnull=True).get()
    run.refresh_from_db()
    export.refresh_from_db()
    return Populated(world, adjudicator, disputed, run, export, draft)


def policy(header: str) -> dict[str, list[str]]:
    """A Content-Security-Policy header as {directive: [sources]}."""
    parsed: dict[str, list[str]] = {}
    for part in header.split(";"):
        words = part.split()
        if words:
            parsed[words[0]] = words[1:]
    return parsed


class _InlineCode(HTMLParser):
    """Collects what a strict policy blocks: <script> without src, <style>, on*= and style=."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = {name.lower(): value for name, value in attrs}
        if tag == "script" and not names.get("src"):
            self.found.append(f"inline <script> at line {self.getpos()[0]}")
        if tag == "style":
            self.found.append(f"<style> element at line {self.getpos()[0]}")
        for name, value in names.items():
            if name.startswith("on"):
                self.found.append(f"<{tag} {name}={value!r}> at line {self.getpos()[0]}")
            if name == "style":
                self.found.append(f"<{tag} style={value!r}> at line {self.getpos()[0]}")
        if tag == "a" and (names.get("href") or "").strip().lower().startswith("javascript:"):
            self.found.append(f"javascript: link at line {self.getpos()[0]}")

    handle_startendtag = handle_starttag


def inline_code(html: str) -> list[str]:
    """Every piece of inline script or style in `html`, each with its line."""
    parser = _InlineCode()
    parser.feed(html)
    parser.close()
    return parser.found
