"""Pseudonym codes of a study's people (the Django side of `pseudonyms.py`): who an export
may name, their stable codes (`Pseudonym`), and the pseudonymiser over all their names."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import QuerySet

from annotator.adjudication.models import Decision
from annotator.issues.models import Issue, IssueComment
from annotator.studies.models import Annotation, Assignment, Item, Membership, Study

from .models import Pseudonym
from .pseudonyms import Pseudonymiser, annotator_code, github_code, mentions
from .rows import CHUNK

UNKNOWN_ANNOTATOR = "A??"  # an annotator who arrived after the codes were given


@dataclass
class People:
    """The study's codes: annotators by user name, and the text rewriter over every name."""

    annotators: dict[str, str] = field(default_factory=dict)
    pseudonymiser: Pseudonymiser = field(default_factory=lambda: Pseudonymiser({}))
    # who in an imported file (a sheet, a Label Studio user, a doccano user) became which rater
    sources: dict[str, str] = field(default_factory=dict)

    def text(self, value: str) -> str:
        return self.pseudonymiser.text(value)

    def value(self, value: Any) -> Any:
        return self.pseudonymiser.value(value)


def assign_pseudonyms(*, study: Study, items: QuerySet[Item]) -> People:
    """Give a code to each person the export of `items` may name — the study's members and
    annotators, the authors and commenters of the items' issues and everyone @mentioned in
    their texts, the annotators' notes and the decisions' comments — keeping the codes given
    before; return the study's codes. Takes the study's row lock: two exports of one study
    never number a person twice."""
    Study.objects.select_for_update().filter(pk=study.pk).first()
    users = _accounts(study, items)
    logins = _github_logins(items)
    known = {(p.kind, p.key): p for p in Pseudonym.objects.filter(study=study)}
    _add_codes(study, known, Pseudonym.Kind.ANNOTATOR, [(str(u.pk), u.username) for u in users])
    _add_codes(study, known, Pseudonym.Kind.GITHUB, [(login, login) for login in sorted(logins)])
    return _people(known, users, _prior_sources(study))


def _prior_sources(study: Study) -> dict[str, str]:
    """Each imported file's people (a sheet's name, a Label Studio user id or e-mail, a
    doccano user) → the user name of the rater they became, from `Round.prior_import`."""
    from .prior import rater_username

    out: dict[str, str] = {}
    for record in study.rounds.exclude(prior_import={}).values_list("prior_import", flat=True):
        for source, name in (record.get("sheets") or {}).items():
            if name:
                out[str(source)] = out[str(name)] = rater_username(study, str(name))
    return out


def _accounts(study: Study, items: QuerySet[Item]) -> list[Any]:
    ids = set(Membership.objects.filter(study=study).values_list("user_id", flat=True))
    assigned = Assignment.objects.filter(item__in=items.values("pk"))
    ids |= set(assigned.values_list("annotator_id", flat=True))
    return list(get_user_model().objects.filter(pk__in=ids).order_by("username"))


def _github_logins(items: QuerySet[Item]) -> set[str]:
    issues = Issue.objects.filter(study_items__in=items.values("pk"))
    found: set[str] = set()
    for author, title, body in issues.values_list("author", "title", "body").iterator(CHUNK):
        found |= {author.lower()} if author else set()
        found |= mentions(title) | mentions(body)
    comments = IssueComment.objects.filter(issue__in=issues.values("pk"))
    for author, body in comments.values_list("author", "body").iterator(CHUNK):
        found |= ({author.lower()} if author else set()) | mentions(body)
    notes = Annotation.objects.filter(assignment__item__in=items.values("pk")).exclude(notes="")
    for text in notes.values_list("notes", flat=True).iterator(CHUNK):
        found |= mentions(text)
    decided = Decision.objects.filter(item__in=items.values("pk")).exclude(comment="")
    for text in decided.values_list("comment", flat=True).iterator(CHUNK):
        found |= mentions(text)
    return found


def _add_codes(
    study: Study, known: dict[tuple[str, str], Pseudonym], kind: str, people: list[tuple[str, str]]
) -> None:
    code = annotator_code if kind == Pseudonym.Kind.ANNOTATOR else github_code
    taken = sum(1 for k, _ in known if k == kind)
    new = []
    for key, name in people:
        if (kind, key) not in known:
            taken += 1
            new.append(Pseudonym(study=study, kind=kind, key=key, name=name, code=code(taken)))
            known[(kind, key)] = new[-1]
    Pseudonym.objects.bulk_create(new)


def _people(
    known: dict[tuple[str, str], Pseudonym], users: list[Any], sources: dict[str, str]
) -> People:
    codes: dict[str, str] = {}
    annotators: dict[str, str] = {}
    for user in users:
        code = known[(Pseudonym.Kind.ANNOTATOR, str(user.pk))].code
        annotators[user.username] = code
        for name in _names_of(user):
            codes[name] = code
    imported = {source: annotators.get(name, UNKNOWN_ANNOTATOR) for source, name in sources.items()}
    for source, code in imported.items():
        # A number (a Label Studio user id) is no name, and as a word it would hit every "8 GPUs".
        if len(source) >= 3 and not source.isdigit():
            codes.setdefault(source, code)
    for (kind, key), pseudonym in known.items():
        if kind == Pseudonym.Kind.GITHUB:  # a login wins over an account's other names
            codes[key] = pseudonym.code
    return People(annotators, Pseudonymiser(codes), imported)


def _names_of(user: Any) -> list[str]:
    """The names an account goes by: user name, e-mail, and its real name (an imported
    rater's is the name in the imported file, kept in first_name)."""
    from .prior import is_pseudonymous_rater

    names = [user.username, user.email]
    if is_pseudonymous_rater(user):
        names.append(user.first_name)
    elif user.first_name and user.last_name:
        names.append(f"{user.first_name} {user.last_name}")
    return [n for n in names if n and len(n.strip()) >= 2]
