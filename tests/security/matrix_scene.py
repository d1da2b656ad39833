"""The populated study the permission matrix probes, and one logged-in client per role.

Study S (k = 2) has an owner, an adjudicator and annotators A and B. Of its four items:
`released` was labeled alike by both and released for discussion; `decided` was labeled
differently by both and decided by the adjudicator (not released); `open` was submitted by A
while B holds a draft; `fresh` is untouched. Every label A or B wrote on an unreleased item
carries a marker in its notes (SECRET_A, SECRET_B), so a response that shows one annotator's
work to the other — or to anyone outside the study — can be caught by its text. Study T belongs
to the outsider, the "member of another study".
"""

from __future__ import annotations

from dataclasses import dataclass
from http.cookies import SimpleCookie
from typing import Any

from django.apps import apps
from django.conf import settings
from django.contrib.contenttypes.models import ContentType
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.test import Client

from annotator.accounts.services import create_api_token
from annotator.adjudication.services import adjudicate_item, release_item
from annotator.agreement.services import run_agreement_run, start_agreement_run
from annotator.backup.models import BackupJob
from annotator.exports.services import run_export_job, start_export_job
from annotator.issues.models import ImportJob, SyncJob
from annotator.screening.services import start_screening_round
from annotator.studies.models import Assignment, Item, Membership
from annotator.studies.services import (
    add_member,
    create_invitation,
    create_study,
    next_assignment,
    propose_category,
    save_draft,
    submit_annotation,
)
from taxonomy_app.models import LabelRule
from tests.factories import UserFactory
from tests.studies.factories import World, make_world

SECRET_A = "SECRET-NOTES-OF-ANNOTATOR-A"
SECRET_B = "SECRET-NOTES-OF-ANNOTATOR-B"
ROLES = ("anonymous", "outsider", "annotator", "peer", "adjudicator", "owner", "staff")
PRIOR_TOKEN = "matrix-wizard"
RESTORE_TOKEN = "matrix-restore"


@dataclass
class Scene:
    users: dict[str, Any]  # role → user (None for anonymous)
    ids: dict[str, str]  # what a URL parameter may name → its value in S


def build_scene() -> Scene:
    world = make_world(items=4, k=2, annotators=2)
    a, b = world.annotators
    adjudicator = UserFactory(username="adjudicator")
    add_member(study=world.study, user=adjudicator, role=Membership.Role.ADJUDICATOR)
    staff = UserFactory(username="staff", is_staff=True, is_superuser=True)
    outsider = UserFactory(username="outsider")
    create_study(name="Other study", codebook_version=world.version, owner=outsider)

    released = _label_both(world, same=True, notes=("plain A", "plain B"))
    decided = _label_both(world, same=False, notes=(SECRET_A, SECRET_B))
    mine = _take(world, a)
    submit_annotation(assignment=mine, user=a, notes=SECRET_A, labels=_labels(world, "hang"))
    theirs = _take(world, b)
    save_draft(assignment=theirs, user=b, notes=SECRET_B, labels=_labels(world, "oom"))
    fresh = Item.objects.filter(study=world.study, assignments__isnull=True).get()
    release_item(item=released)
    adjudicate_item(
        item=decided,
        user=adjudicator,
        labels=_labels(world, "crash"),
        reason="annotator-slip",
        version=0,
    )
    users = {
        "anonymous": None,
        "outsider": outsider,
        "annotator": a,
        "peer": b,
        "adjudicator": adjudicator,
        "owner": world.owner,
        "staff": staff,
    }
    items = {"item": decided, "item_open": mine.item, "item_released": released, "fresh": fresh}
    ids = {**_ids(world, items, mine, theirs), **_backups(world.study, world.owner, staff)}
    # A screening round with its plan declared (its panel, retrain, audit, include routes).
    screening = start_screening_round(study=world.study, user=world.owner, seed=1).round
    ids["screening_round_number"] = screening.number
    return Scene(users=users, ids=ids)


def _take(world: World, user: Any) -> Assignment:
    assignment = next_assignment(study=world.study, annotator=user)
    assert assignment is not None
    return assignment


def _labels(world: World, symptom: str) -> dict[int, list[int]]:
    return world.labels(screening="relevant", symptom=symptom, fix="config")


def _label_both(world: World, *, same: bool, notes: tuple[str, str]) -> Item:
    """A and B (breadth first, so on the same item) submit; alike or not."""
    a, b = world.annotators
    first, second = _take(world, a), _take(world, b)
    assert first.item_id == second.item_id
    submit_annotation(assignment=first, user=a, notes=notes[0], labels=_labels(world, "hang"))
    other = _labels(world, "hang" if same else "oom")
    submit_annotation(assignment=second, user=b, notes=notes[1], labels=other)
    return first.item


def _ids(
    world: World, items: dict[str, Item], mine: Assignment, theirs: Assignment
) -> dict[str, str]:
    study, owner = world.study, world.owner
    run = start_agreement_run(study=study, round=world.round, user=owner, enqueue=False)
    run_agreement_run(run_id=run.pk)
    export = start_export_job(study=study, format="csv", user=owner)
    run_export_job(job_id=export.pk)
    proposal = propose_category(
        assignment=mine,
        user=mine.annotator,
        name="Deadlock in NCCL",
        rationale="hangs",
        facet_id=world.category("symptom", "hang").facet_id,
    )
    category = world.category("symptom", "hang")
    duplicates = _duplicates(world)
    ids = {
        **duplicates,
        "study": study.pk,
        "round": world.round.pk,
        "round_number": world.round.number,
        "run": run.pk,
        "export": export.pk,
        "assignment": mine.pk,
        "assignment_peer": theirs.pk,
        "proposal": proposal.pk,
        "issue": items["item"].issue_id,
        "codebook": world.version.codebook_id,
        "version": world.version.pk,
        "facet": category.facet_id,
        "category": category.pk,
        "rule": _rule(world).pk,
        "import_job": _import_job(owner).pk,
        "sync_job": _sync_job(owner).pk,
        "invitation": create_invitation(study=study, user=owner).token,
        "prior": PRIOR_TOKEN,
        "user": owner.pk,
        "token": create_api_token(user=owner, name="notebook")[0].pk,
        "content_type": ContentType.objects.get_for_model(study).pk,
        **{key: item.pk for key, item in items.items()},
        **_machine(world, items["item"]),
    }
    return {key: str(value) for key, value in ids.items()}


def _machine(world: World, item: Item) -> dict[str, int]:
    """A machine rater with a finished run and one kept answer (rows as a run leaves them)."""
    from annotator.machine.models import MachineCall, MachineRater, MachineRun

    rater = MachineRater.objects.create(
        study=world.study,
        name="llm",
        base_url="http://127.0.0.1:9/v1",
        model="m",
        prompt_version="1",
    )
    run = MachineRun.objects.create(
        rater=rater, round=world.round, status="succeeded", progress=100
    )
    call = MachineCall.objects.create(
        run=run,
        rater=rater,
        item=item,
        outcome="labeled",
        labels={"symptom": ["hang"]},
        structured=True,
        messages=[{"role": "user", "content": "# Issue: x"}],
        prompt_sha256="0" * 64,
    )
    return {"machine_rater": rater.pk, "machine_run": run.pk, "machine_call": call.pk}


def _duplicates(world: World) -> dict[str, int]:
    """A near-duplicate pass (queued), a group of two of the study's issues, and a mark."""
    from annotator.similarity.models import DuplicateGroup, DuplicateMember, DuplicatePair
    from annotator.similarity.services import mark_issue, start_duplicate_pass

    job = start_duplicate_pass(study=world.study, user=world.owner, enqueue=False)
    first, second = world.issues[:2]
    group = DuplicateGroup.objects.create(
        found_by=job, size=2, max_similarity=0.9, min_similarity=0.9
    )
    for issue in (first, second):
        DuplicateMember.objects.create(group=group, issue=issue)
    DuplicatePair.objects.create(group=group, issue_a=first, issue_b=second, similarity=0.9)
    mark = mark_issue(study=world.study, issue=second, decision="distinct", user=world.owner)
    return {"duplicate_pass": job.pk, "duplicate_group": group.pk, "duplicate_mark": mark.pk}


def _backups(study: Any, owner: Any, staff: Any) -> dict[str, str]:
    """A finished backup of S with its archive, and a finished restore (started by staff)."""
    archive = default_storage.save("backups/study.zip", ContentFile(b"PK\x05\x06" + bytes(18)))
    dump = BackupJob.objects.create(
        kind=BackupJob.Kind.DUMP,
        study=study,
        study_name=study.name,
        created_by=owner,
        status=BackupJob.Status.SUCCEEDED,
        file=archive,
    )
    restore = BackupJob.objects.create(
        kind=BackupJob.Kind.RESTORE,
        study_name="Restored",
        created_by=staff,
        status=BackupJob.Status.SUCCEEDED,
    )
    return {"backup": str(dump.pk), "restore": str(restore.pk), "upload": RESTORE_TOKEN}


def pending_restore(scene: Scene) -> dict[str, Any]:
    """What the restore page keeps in the session of the staff member who uploaded an archive,
    until they confirm (annotator/backup/views.py)."""
    return {
        "file": "restore-uploads/matrix.zip",
        "original_name": "study.zip",
        "size": 22,
        "study": {"name": "Study"},
        "created_at": "2026-01-01T00:00:00",
        "app_version": "0.1.0",
        "format_version": 1,
        "tables": {"studies_study": 1},
        "usernames": ["study-owner"],
    }


def _rule(world: World) -> LabelRule:
    """A rule of the study's published version that no label of the scene breaks."""
    fix = world.version.facets.get(key="fix")
    return LabelRule.objects.create(
        version=world.version, kind=LabelRule.Kind.MAX_CHOICES, facet=fix, max_choices=9
    )


def _import_job(owner: Any) -> ImportJob:
    return ImportJob.objects.create(
        original_name="issues.json",
        file="imports/issues.json",
        created_by=owner,
        status=ImportJob.Status.SUCCEEDED,
        created=3,
    )


def _sync_job(owner: Any) -> SyncJob:
    return SyncJob.objects.create(
        repository_name="hpcaitech/ColossalAI", created_by=owner, status=SyncJob.Status.SUCCEEDED
    )


def admin_object_id(route: str) -> str:
    """The pk of a row of the model an admin route edits: `admin:<app>_<model>_<view>` by
    name, or `admin/<app>/<model>/…` by pattern ("1" when the table is empty)."""
    for model in apps.get_models():
        app, name = model._meta.app_label, model._meta.model_name
        if route.startswith((f"admin:{app}_{name}_", f"admin/{app}/{name}/")):
            row = model._default_manager.order_by("pk").first()
            return str(row.pk) if row is not None else "1"
    raise LookupError(f"no model for admin route {route}")


def wizard_state(scene: Scene) -> dict[str, Any]:
    """What the prior-labels wizard keeps in its starter's session after the upload step."""
    sheets = [{"name": "alice", "columns": ["url", "symptom"], "rows": 1, "key": "url"}]
    return {
        "file": f"prior-labels/{PRIOR_TOKEN}.xlsx",
        "filename": "round1.xlsx",
        "study": int(scene.ids["study"]),
        "study_name": "",
        "version": None,
        "sheets": sheets,
    }


# Steps kept in a session: the owner is mid-way through the prior-labels wizard, staff have
# uploaded an archive to restore. role → (session key, token, state of the scene)
WIZARDS: dict[str, tuple[str, str, Any]] = {
    "owner": ("prior_labels", PRIOR_TOKEN, wizard_state),
    "staff": ("backup_restores", RESTORE_TOKEN, pending_restore),
}


class RoleClients:
    """One test client per role, logged in once. Each request starts from the role's original
    session cookie, so a request that logs out or rotates the session spoils no later case."""

    def __init__(self, scene: Scene) -> None:
        self.sessions: dict[str, str] = {}
        self.client = Client()
        for role, user in scene.users.items():
            client = Client()
            if user is not None:
                client.force_login(user)
            if role in WIZARDS:
                session = client.session
                key, token, state = WIZARDS[role]
                session[key] = {token: state(scene)}
                session.save()  # a cookie-held session gets a new key: keep that one
                client.cookies[settings.SESSION_COOKIE_NAME] = str(session.session_key)
            if user is not None:
                self.sessions[role] = client.cookies[settings.SESSION_COOKIE_NAME].value

    def request(self, role: str, method: str, url: str) -> Any:
        self.client.cookies = SimpleCookie()
        if role in self.sessions:
            self.client.cookies[settings.SESSION_COOKIE_NAME] = self.sessions[role]
        call = getattr(self.client, method.lower())
        if method == "POST":
            return call(url, {})
        if method in {"PUT", "PATCH", "DELETE"}:
            return call(url, "{}", content_type="application/json")
        return call(url)


def body_text(response: Any) -> str:
    """The body; a streamed one is read to its end, which closes it (the test client then
    fires request_finished with the connection kept: never call response.close() here, as
    that would close the connection and its transaction)."""
    body: bytes
    if getattr(response, "streaming", False):
        body = b"".join(response.streaming_content)
    else:
        body = response.content
    return body.decode("utf-8", "replace")
