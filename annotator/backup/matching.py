"""Rows a restore may find already here, by natural key, and rows it must adjust.

Each rule takes a batch of decoded rows and answers {archive id: id here} for the rows it found
here (reused, not inserted); it may also change the values of the rows still to be inserted (a
new account gets an unusable password, a study a free name). A key that exists here with other
content is refused, naming the member, line and field — except issues and comments when the
person asked to keep this server's copy (GitHub may have changed them since the backup).
"""

from __future__ import annotations

import secrets
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Any

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.db.models.functions import Lower

from annotator.issues.models import Issue, IssueComment, Repository, RepositoryAlias
from annotator.studies.models import Invitation, Study

from .errors import RestoreError
from .tables import USERS

if TYPE_CHECKING:
    from .restore import Pending, Restorer

Rule = Callable[[list["Pending"]], dict[int, int]]

# What makes two copies of an issue or comment the same (all but bookkeeping: ids, the raw
# GitHub object, which carries counters such as reactions, and when it was imported).
ISSUE_CONTENT = (
    "title",
    "body",
    "state",
    "state_reason",
    "labels",
    "author",
    "created_at",
    "updated_at",
    "closed_at",
    "is_pull_request",
    "html_url",
    "comments_count",
    "github_id",
    "content_hash",
)
COMMENT_CONTENT = ("github_id", "author", "body", "created_at", "updated_at", "content_hash")


def row_rules(restorer: Restorer) -> dict[str, Rule]:
    def bind(rule: Callable[[Restorer, list[Pending]], dict[int, int]]) -> Rule:
        return lambda rows: rule(restorer, rows)

    return {
        USERS: bind(match_users),
        "issues.repository": bind(match_repositories),
        "issues.repositoryalias": bind(match_aliases),
        "issues.issue": bind(match_issues),
        "issues.issuecomment": bind(match_comments),
        "studies.study": bind(name_study),
        "studies.invitation": bind(free_tokens),
    }


def match_users(restorer: Restorer, rows: list[Pending]) -> dict[int, int]:
    """Users by username (case-insensitively, as accounts are created). An existing account
    whose email differs may be another person: refused. New accounts get an unusable
    password: they log in once an administrator sets one."""
    member = restorer.entry(USERS).member
    names = [p.values["username"].lower() for p in rows]
    here = {
        user.username.lower(): user
        for user in get_user_model()
        .objects.annotate(lowered=Lower("username"))
        .filter(lowered__in=names)
    }
    out = {}
    for p in rows:
        name = p.values["username"]
        user = here.get(name.lower())
        if user is None:
            p.values["password"] = make_password(None)
            restorer.result.users_created.append(name)
            continue
        theirs, ours = (user.email or "").lower(), (p.values.get("email") or "").lower()
        if theirs and ours and theirs != ours:
            raise RestoreError(
                f"{member} line {p.line}, field 'email': user {name!r} exists here with another "
                "email address; it may be another person, who would be given this study's "
                "memberships and labels"
            )
        out[p.old] = user.pk
    return out


def match_repositories(restorer: Restorer, rows: list[Pending]) -> dict[int, int]:
    """Repositories by owner/name, current or former (a renamed repository is one)."""
    out = {}
    for p in rows:
        found = Repository.objects.named(f"{p.values['owner']}/{p.values['name']}")
        if found is not None:
            out[p.old] = found.pk
    return out


def match_aliases(restorer: Restorer, rows: list[Pending]) -> dict[int, int]:
    member = restorer.entry("issues.repositoryalias").member
    out = {}
    for p in rows:
        owner, name = p.values["owner"], p.values["name"]
        alias = RepositoryAlias.objects.filter(owner__iexact=owner, name__iexact=name).first()
        if alias is None:
            continue
        if alias.repository_id != p.values["repository_id"]:
            raise RestoreError(
                f"{member} line {p.line}, field 'name': {owner}/{name} is here a former name "
                f"of {alias.repository}, not of the archive's repository"
            )
        out[p.old] = alias.pk
    return out


@dataclass(frozen=True)
class ChildTable:
    """A table whose rows are identified by their parent and a key, and compared on `content`;
    `describe` names a refused row from its pending values and its parent's id here."""

    label: str
    model: type[Issue] | type[IssueComment]
    parent: str
    key: str
    content: tuple[str, ...]
    describe: Callable[[Pending, int], str]


ISSUES = ChildTable(
    label="issues.issue",
    model=Issue,
    parent="repository_id",
    key="number",
    content=ISSUE_CONTENT,
    describe=lambda p, r: f"issue {Repository.objects.get(pk=r)}#{p.values['number']}",
)
COMMENTS = ChildTable(
    label="issues.issuecomment",
    model=IssueComment,
    parent="issue_id",
    key="key",
    content=COMMENT_CONTENT,
    describe=lambda p, i: f"comment {p.values['key']} of issue {Issue.objects.get(pk=i)}",
)


def match_issues(restorer: Restorer, rows: list[Pending]) -> dict[int, int]:
    """Issues by repository and number; the same number with other content is refused unless
    this server's copy is to be kept."""
    return _match_children(restorer, rows, ISSUES)


def match_comments(restorer: Restorer, rows: list[Pending]) -> dict[int, int]:
    """Comments by issue and key, as issues are matched."""
    return _match_children(restorer, rows, COMMENTS)


def _match_children(restorer: Restorer, rows: list[Pending], table: ChildTable) -> dict[int, int]:
    """Rows identified by their parent and a key: one query per parent for the rows already
    here, each compared on the table's content (named by `describe`, only when refused)."""
    parent, key = table.parent, table.key
    by_parent: dict[int, list[Pending]] = defaultdict(list)
    for p in rows:
        by_parent[p.values[parent]].append(p)
    out = {}
    for parent_id, group in by_parent.items():
        keys = [p.values[key] for p in group]
        here = table.model.objects.filter(**{parent: parent_id, f"{key}__in": keys})
        found = {row[key]: row for row in here.values("pk", key, *table.content)}
        for p in group:
            if (row := found.get(p.values[key])) is not None:
                out[p.old] = _same_or_kept(restorer, table, p, row, parent_id)
    return out


def _same_or_kept(
    restorer: Restorer, table: ChildTable, p: Pending, here: dict[str, Any], parent_id: int
) -> int:
    differs = next((name for name in table.content if p.values[name] != here[name]), None)
    if differs is None:
        return int(here["pk"])
    if not restorer.options.prefer_existing_issues:
        raise RestoreError(
            f"{restorer.entry(table.label).member} line {p.line}, field {differs!r}: "
            f"{table.describe(p, parent_id)} exists here with a different {differs} "
            "(changed on GitHub since the backup?); restore with --prefer-existing-issues to "
            "keep this server's copy"
        )
    restorer.result.kept_existing += 1
    return int(here["pk"])


def name_study(restorer: Restorer, rows: list[Pending]) -> dict[int, int]:
    """The restored study's name: the one asked for (refused when taken), else the archive's,
    or "NAME (restored YYYY-MM-DD)" when a study here is called that already."""
    for p in rows:
        wanted = restorer.options.name.strip()
        if wanted:
            if Study.objects.filter(name=wanted).exists():
                raise RestoreError(f"a study named {wanted!r} exists here: choose another name")
            p.values["name"] = wanted[:200]
        else:
            p.values["name"] = free_study_name(p.values["name"])
    return {}


def free_study_name(name: str, today: date | None = None) -> str:
    if not Study.objects.filter(name=name).exists():
        return name
    base = f"{name[:170]} (restored {(today or date.today()).isoformat()}"
    candidate, n = f"{base})", 2
    while Study.objects.filter(name=candidate).exists():
        candidate, n = f"{base}, {n})", n + 1
    return candidate


def free_tokens(restorer: Restorer, rows: list[Pending]) -> dict[int, int]:
    """An invitation keeps its link unless the token is taken here (the original study lives
    on beside its restored copy): then it gets a new one."""
    taken = set(
        Invitation.objects.filter(token__in=[p.values["token"] for p in rows]).values_list(
            "token", flat=True
        )
    )
    for p in rows:
        if p.values["token"] in taken:
            p.values["token"] = secrets.token_urlsafe(24)
            restorer.result.notes.append(
                f"invitation of line {p.line} got a new link (its token is in use here)"
            )
    return {}
