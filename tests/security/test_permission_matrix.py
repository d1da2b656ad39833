"""The permission matrix: every route the URL resolver knows, for every role and every method.

ROUTES maps each route (its namespaced URL name; an unnamed route by its pattern) to an access
rule, the methods its view accepts and the objects of study S its parameters name; VARIANTS
probe some routes again on other objects. tests/security/matrix.py derives what each role must
get for each method from the rule, and documents how.

The roles: anonymous, the owner of another study ("outsider"), annotators A ("annotator") and
B ("peer"), the adjudicator and the owner of S, and staff (a superuser who is not a member of
S). The blind rule is checked twice: by status (an annotator reaches neither the other's
assignment, nor an unreleased item's discussion or decision) and by text (no response to an
annotator contains the other's notes, none to anyone outside S contains either's).

A route missing from ROUTES fails test_every_route_has_a_rule, naming it. Each case runs in a
savepoint that is rolled back, so what a request writes never reaches the next one.

Covered (test_matrix_size prints it): 353 routes, 16 of them again on other objects, for each
of 7 roles; 177 of these 369 cases with all 7 methods (GET, HEAD, OPTIONS, POST, PUT, PATCH,
DELETE), the 192 per-model admin views (one guard, AdminSite.admin_view) with GET and POST:
11,361 requests.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

import pytest
from django.db import connection, transaction
from django.test.utils import override_settings
from django.urls import reverse

from tests.security.matrix import (
    ADMIN,
    ADMIN_OBJECT,
    ADMIN_OK,
    ALL,
    ANNOTATOR,
    ANY_USER,
    API_POST,
    CODEBOOK_OWNER,
    GET,
    GET_POST,
    HIDDEN,
    MEMBER,
    METHODS,
    OWN_ASSIGNMENT,
    OWNER,
    PEER_ASSIGNMENT,
    POST,
    PUBLIC,
    SEE_ALL,
    WIZARD,
    Case,
    Route,
    Rule,
    api,
    cases,
    expected,
    for_all,
    matches,
    model_admin,
    page,
    redirects,
    url_of,
)
from tests.security.matrix_scene import (
    ROLES,
    SECRET_A,
    SECRET_B,
    RoleClients,
    body_text,
    build_scene,
)

# The scene is built once for the module (`matrix`); each test's transaction, and each
# request's savepoint, are rolled back inside it.
pytestmark = pytest.mark.django_db

STUDY = {"study_id": "study"}
# Importing writes into the issue pool every study shares: staff (and holders of the
# issues.import_issues permission, whom the scene has none of); others get 403.
IMPORTER = Rule("staff or importer", frozenset({"staff"}), 403)
FORM_VIEW = frozenset({"GET", "HEAD", "POST", "PUT", "OPTIONS"})  # Django's FormView
ITEM = {"item_id": "item"}
MINE = {"assignment_id": "assignment"}
SCREENING = {"study_id": "study", "number": "screening_round_number"}

ROUTES: dict[str, Route] = {
    "home": Route(ANY_USER, ALL, ok=redirects(ALL)),
    "login": Route(PUBLIC, frozenset({"GET", "HEAD", "POST", "PUT", "OPTIONS"})),
    "logout": Route(ANY_USER, frozenset({"POST", "OPTIONS"}), ok=redirects(POST)),
    # issues: one shared pool of GitHub issues, open to every signed-in researcher
    "issues:list": page(ANY_USER),
    "issues:detail": page(ANY_USER, pk="issue"),
    # imports and syncs write into that pool: staff or holders of issues.import_issues
    "issues:import": page(IMPORTER, GET_POST),
    "issues:import_detail": page(IMPORTER, pk="import_job"),
    "issues:sync": page(IMPORTER, GET_POST),
    "issues:sync_detail": page(IMPORTER, pk="sync_job"),
    # studies
    "studies:list": page(ANY_USER),
    "studies:create": page(ANY_USER, GET_POST),
    # an invitation link: sign up or log in on it (anonymous), or join (signed in)
    "studies:join": page(PUBLIC, GET_POST, token="invitation"),
    "studies:detail": page(MEMBER, **STUDY),
    "studies:edit": page(OWNER, GET_POST, **STUDY),
    "studies:members": page(OWNER, GET_POST, **STUDY),
    "studies:invite": page(OWNER, POST, **STUDY),
    "studies:select": page(OWNER, GET_POST, **STUDY),
    "studies:round_close": page(OWNER, GET_POST, study_id="study", number="round_number"),
    "studies:dashboard": page(SEE_ALL, **STUDY),
    # screening rounds: declared and run by the owner; the panel read by owner and adjudicator
    "screening:new": page(OWNER, GET_POST, **STUDY),
    "screening:panel": page(SEE_ALL, **SCREENING),
    "screening:retrain": page(OWNER, POST, **SCREENING),
    "screening:audit": page(OWNER, POST, **SCREENING),
    "screening:include": page(OWNER, POST, **SCREENING),
    "studies:annotate_next": Route(ANNOTATOR, ALL, STUDY, ok=redirects(ALL)),
    "studies:mine": page(ANNOTATOR, **STUDY),
    "studies:item": page(MEMBER, **ITEM),  # each annotator sees their own labels only
    "studies:assignment": page(OWN_ASSIGNMENT, **MINE),
    "studies:draft": page(OWN_ASSIGNMENT, POST, **MINE),
    "studies:submit": page(OWN_ASSIGNMENT, POST, **MINE),
    "studies:skip": page(OWN_ASSIGNMENT, POST, **MINE),
    "studies:propose": page(OWN_ASSIGNMENT, POST, **MINE),
    # codebooks: read by every signed-in user, changed by their owner (or staff)
    "taxonomy:list": page(ANY_USER),
    "taxonomy:import": page(ANY_USER, POST),
    "taxonomy:codebook": Route(ANY_USER, ALL, {"pk": "codebook"}, ok=redirects(ALL)),
    "taxonomy:draft": page(CODEBOOK_OWNER, POST, pk="codebook"),
    "taxonomy:proposals": page(ANY_USER, GET_POST, pk="codebook"),
    "taxonomy:version": page(ANY_USER, pk="version"),
    "taxonomy:diff": page(ANY_USER, pk="version"),
    "taxonomy:publish": Route(
        CODEBOOK_OWNER,
        GET_POST,
        {"pk": "version"},
        ok=redirects(GET_POST),  # published already
    ),
    "taxonomy:discard": page(CODEBOOK_OWNER, GET_POST, pk="version"),
    "taxonomy:guideline": page(ANY_USER, pk="version"),
    "taxonomy:export": page(ANY_USER, pk="version", fmt="json"),
    "taxonomy:rule_add": page(CODEBOOK_OWNER, POST, pk="version"),
    "taxonomy:rule_delete": page(CODEBOOK_OWNER, POST, pk="rule"),
    "taxonomy:rule_breaks": page(ANY_USER, pk="version"),  # counts the viewer's studies only
    "taxonomy:category_add": page(CODEBOOK_OWNER, POST, pk="facet"),
    "taxonomy:category_row": page(ANY_USER, pk="category"),
    "taxonomy:category_edit": page(CODEBOOK_OWNER, GET_POST, pk="category"),
    "taxonomy:category_reorder": page(CODEBOOK_OWNER, POST, pk="category"),
    "taxonomy:category_action": page(CODEBOOK_OWNER, GET_POST, pk="category", action="archive"),
    "taxonomy:proposal_resolve": page(CODEBOOK_OWNER, POST, pk="proposal"),
    # agreement: several annotators' labels side by side
    "agreement:study": page(SEE_ALL, **STUDY),
    "agreement:start": page(SEE_ALL, POST, **STUDY),
    "agreement:threshold": page(OWNER, POST, **STUDY),
    "agreement:run": page(SEE_ALL, run_id="run"),
    "agreement:pass": page(OWNER, POST, run_id="run"),
    "agreement:cell": page(SEE_ALL, run_id="run", facet="screening", i="0", j="0"),
    # adjudication ("item" is decided and not released: blind for its annotators)
    "adjudication:queue": page(SEE_ALL, **STUDY),
    "adjudication:next": Route(SEE_ALL, ALL, STUDY, ok=redirects(ALL)),
    "adjudication:items": page(SEE_ALL, **STUDY),
    "adjudication:relabel": page(SEE_ALL, **STUDY),
    "adjudication:rules": page(OWNER, POST, **STUDY),
    "adjudication:item": page(SEE_ALL, **ITEM),
    "adjudication:decide": page(SEE_ALL, POST, **ITEM),
    "adjudication:release": page(OWNER, POST, **ITEM),
    "adjudication:history": page(SEE_ALL, **ITEM),
    "adjudication:discussion": page(SEE_ALL, **ITEM),
    # exports and analysis: everyone's labels
    "exports:start": page(SEE_ALL, GET_POST, **STUDY),
    "exports:job": page(SEE_ALL, pk="export"),
    "exports:download": page(SEE_ALL, pk="export"),
    "exports:card": page(SEE_ALL, pk="export"),
    "exports:pseudonyms": page(OWNER, **STUDY),  # who the codes of pseudonymised exports are
    "exports:analysis": page(SEE_ALL, **STUDY),
    "exports:analysis_issues": page(SEE_ALL, **STUDY),
    "exports:prior_upload": page(ANY_USER, GET_POST),
    "exports:prior_map": page(WIZARD, GET_POST, token="prior"),
    "exports:prior_review": Route(WIZARD, GET_POST, {"token": "prior"}, ok=redirects(GET_POST)),
    # REST API: issues and jobs
    "api-issue-list": api(ANY_USER),
    "api-issue-detail": api(ANY_USER, pk="issue"),
    "api-import-create": api(IMPORTER, API_POST),
    "api-import-detail": api(ANY_USER, pk="import_job"),
    "api-sync-create": api(IMPORTER, API_POST),
    "api-sync-detail": api(ANY_USER, pk="sync_job"),
    # REST API: codebooks
    "api-codebook-list": api(ANY_USER),
    "api-codebook-import": api(ANY_USER, API_POST),
    "api-codebook-detail": api(ANY_USER, pk="codebook"),
    "api-codebook-draft": api(CODEBOOK_OWNER, API_POST, pk="codebook"),
    "api-version-detail": api(ANY_USER, pk="version"),
    "api-version-publish": api(CODEBOOK_OWNER, API_POST, pk="version"),
    "api-version-diff": api(ANY_USER, pk="version"),
    "api-version-export": api(ANY_USER, pk="version", fmt="json"),
    "api-facet-list": api(ANY_USER, pk="version"),
    "api-rule-list": Route(ANY_USER, GET | {"POST"}, {"pk": "version"}, {"POST": CODEBOOK_OWNER}),
    "api-rule-detail": Route(
        ANY_USER, GET | {"DELETE"}, {"pk": "rule"}, {"DELETE": CODEBOOK_OWNER}
    ),
    "api-facet-detail": Route(ANY_USER, GET | {"PUT"}, {"pk": "facet"}, {"PUT": CODEBOOK_OWNER}),
    "api-category-list": Route(ANY_USER, GET | {"POST"}, {"pk": "facet"}, {"POST": CODEBOOK_OWNER}),
    "api-category-detail": Route(
        ANY_USER,
        GET | {"PATCH", "DELETE"},
        {"pk": "category"},
        {"PATCH": CODEBOOK_OWNER, "DELETE": CODEBOOK_OWNER},
    ),
    "api-category-move": api(CODEBOOK_OWNER, API_POST, pk="category"),
    "api-category-archive": api(CODEBOOK_OWNER, API_POST, pk="category"),
    "api-category-merge": api(CODEBOOK_OWNER, API_POST, pk="category"),
    "api-category-split": api(CODEBOOK_OWNER, API_POST, pk="category"),
    "api-proposal-list": api(ANY_USER, GET | {"POST"}),
    "api-proposal-accept": api(CODEBOOK_OWNER, API_POST, pk="proposal"),
    "api-proposal-map": api(CODEBOOK_OWNER, API_POST, pk="proposal"),
    "api-proposal-reject": api(CODEBOOK_OWNER, API_POST, pk="proposal"),
    # REST API: studies and labeling
    "api-study-list": api(ANY_USER),
    "api-study-create": api(ANY_USER, API_POST),
    "api-study-detail": api(MEMBER, **STUDY),
    "api-member-add": api(OWNER, API_POST, **STUDY),
    "api-selection-create": api(OWNER, API_POST, **STUDY),
    "api-next-item": api(ANNOTATOR, API_POST, **STUDY),
    "api-annotation-list": api(MEMBER, **STUDY),  # filtered by Annotation.visible_to
    "api-progress": api(SEE_ALL, **STUDY),
    "api-assignment-detail": api(OWN_ASSIGNMENT, **MINE),
    "api-draft": api(OWN_ASSIGNMENT, frozenset({"PUT", "OPTIONS"}), **MINE),
    "api-submit": api(OWN_ASSIGNMENT, API_POST, **MINE),
    "api-skip": api(OWN_ASSIGNMENT, API_POST, **MINE),
    "api-study-update": api(OWNER, frozenset({"PATCH", "OPTIONS"}), **STUDY),
    "api-round-list": api(MEMBER, **STUDY),
    "api-round-create": api(OWNER, API_POST, **STUDY),
    "api-round-close": api(OWNER, API_POST, study_id="study", number="round_number"),
    "api-item-list": api(SEE_ALL, **STUDY),
    # REST API: screening rounds (the panel holds counts only: owners and adjudicators read it)
    "api-screening-create": api(OWNER, API_POST, **STUDY),
    "api-screening-panel": api(SEE_ALL, **SCREENING),
    "api-screening-plan": api(OWNER, frozenset({"PUT", "OPTIONS"}), **SCREENING),
    "api-screening-retrain": Route(SEE_ALL, GET | {"POST"}, SCREENING, {"POST": OWNER}),
    "api-screening-audit": api(OWNER, API_POST, **SCREENING),
    "api-screening-include": api(OWNER, API_POST, **SCREENING),
    "api-my-assignments": api(MEMBER, **STUDY),
    "api-selection-list": api(MEMBER, **STUDY),
    "api-invitation-list": api(OWNER, **STUDY),
    "api-invitation-create": api(OWNER, API_POST, **STUDY),
    # REST API: agreement, adjudication, exports
    "api-agreement-runs": api(SEE_ALL, GET | {"POST"}, **STUDY),
    "api-agreement-run": api(SEE_ALL, run_id="run"),
    "api-agreement-settings": Route(SEE_ALL, GET | {"PUT"}, STUDY, {"PUT": OWNER}),
    "api-calibration-pass": api(OWNER, API_POST, study_id="study", round_id="round"),
    "api-adjudication-queue": api(SEE_ALL, **STUDY),
    "api-decision-list": api(SEE_ALL, **STUDY),
    "api-decision": api(SEE_ALL, GET | {"PUT"}, **ITEM),
    "api-discussion": api(SEE_ALL, GET | {"POST"}, **ITEM),
    "api-release": api(OWNER, API_POST, **ITEM),
    "api-history": api(SEE_ALL, **ITEM),
    "api-exports": api(SEE_ALL, GET | {"POST"}, **STUDY),
    "api-export": api(SEE_ALL, pk="export"),
    "api-export-download": api(SEE_ALL, pk="export"),
    "api-export-card": api(SEE_ALL, pk="export"),
    "api-analysis": api(SEE_ALL, **STUDY),
    "api-prior-inspect": api(ANY_USER, API_POST),
    "api-prior-import": api(ANY_USER, API_POST),
    "api-schema": api(PUBLIC),  # the OpenAPI document describes routes, holds no data
    "api-docs": api(PUBLIC, frozenset({"GET", "HEAD"})),
    # The admin site: AdminSite.admin_view sends everyone but staff to the admin's own login
    # before the view sees the method. Staff get 200, a redirect (a row that does not exist,
    # a saved form) or 403 where the model's admin disables adding or deleting.
    "admin:login": Route(
        PUBLIC,
        frozenset({"GET", "HEAD", "POST", "PUT", "OPTIONS"}),
        ok={"GET": frozenset({200, 302}), "HEAD": frozenset({200, 302})},
    ),
    "admin:logout": Route(
        Rule("admin site (staff)", frozenset({"staff"}), "admin-index"),
        frozenset({"POST", "OPTIONS"}),
    ),
    "admin:password_change": Route(ADMIN, frozenset({"GET", "HEAD", "POST", "PUT", "OPTIONS"})),
    "admin:password_change_done": Route(ADMIN, GET),
    "admin:autocomplete": Route(  # 403: the request names no model field to complete
        ADMIN, GET, ok={"GET": frozenset({403}), "HEAD": frozenset({403})}
    ),
    "admin:jsi18n": Route(ADMIN, GET),
    "admin:view_on_site": Route(
        ADMIN,
        ALL,
        {"content_type_id": "content_type", "object_id": "study"},
        ok=for_all(frozenset({302})),
    ),
    "admin:auth_user_password_change": Route(ADMIN, ALL, {"id": "user"}),
    "admin:app_list": Route(ADMIN, ALL, {"app_label": "studies"}),
    "admin:index": Route(ADMIN, ALL),
    "admin:*_changelist": model_admin(),
    "admin:*_add": model_admin(),
    "admin:*_history": model_admin({"object_id": "admin-object"}),
    "admin:*_delete": model_admin({"object_id": "admin-object"}),
    "admin:*_change": model_admin({"object_id": "admin-object"}),
    "admin/*/<path:object_id>/": model_admin(
        {"object_id": "admin-object"}, ok=for_all(frozenset({302}))
    ),
    "admin/(?P<url>.*)$": Route(ADMIN, ALL, {"url": "nothing/"}, ok=for_all(frozenset({404}))),
}

# The same routes on other objects of S: the blind rule from the other side.
VARIANTS: dict[str, Route] = {
    # B's assignment (a draft on an item A has submitted): A must not reach it
    "studies:assignment": page(PEER_ASSIGNMENT, assignment_id="assignment_peer"),
    "studies:draft": page(PEER_ASSIGNMENT, POST, assignment_id="assignment_peer"),
    "studies:submit": page(PEER_ASSIGNMENT, POST, assignment_id="assignment_peer"),
    "studies:skip": page(PEER_ASSIGNMENT, POST, assignment_id="assignment_peer"),
    "studies:propose": page(PEER_ASSIGNMENT, POST, assignment_id="assignment_peer"),
    "api-assignment-detail": api(PEER_ASSIGNMENT, assignment_id="assignment_peer"),
    "api-draft": api(
        PEER_ASSIGNMENT, frozenset({"PUT", "OPTIONS"}), assignment_id="assignment_peer"
    ),
    "api-submit": api(PEER_ASSIGNMENT, API_POST, assignment_id="assignment_peer"),
    "api-skip": api(PEER_ASSIGNMENT, API_POST, assignment_id="assignment_peer"),
    # an item nobody has labeled: annotators have nothing of theirs to see on it
    "studies:item": page(SEE_ALL, item_id="fresh"),
    # released for discussion, after both annotators submitted: now they may read and post
    "adjudication:discussion": page(MEMBER, item_id="item_released"),
    "api-discussion": api(MEMBER, GET | {"POST"}, item_id="item_released"),
    "api-decision": Route(MEMBER, GET | {"PUT"}, {"item_id": "item_released"}, {"PUT": SEE_ALL}),
    # A submitted, B still drafting: neither sees the other's work
    "adjudication:discussion#open": page(SEE_ALL, item_id="item_open"),
    "api-discussion#open": api(SEE_ALL, GET | {"POST"}, item_id="item_open"),
}

# The annotations' admin (every label) is probed with every method.
ROUTES |= {
    f"admin:studies_annotation_{view}": Route(ADMIN, ALL, params, ok=ADMIN_OK)
    for view, params in [
        ("changelist", {}),
        ("add", {}),
        ("history", ADMIN_OBJECT),
        ("delete", ADMIN_OBJECT),
        ("change", ADMIN_OBJECT),
    ]
}
ROUTES["admin/studies/annotation/<path:object_id>/"] = Route(
    ADMIN, ALL, ADMIN_OBJECT, ok=for_all(frozenset({302}))
)
TOKEN_OWNER = Rule("the token's owner", frozenset({"owner"}))
# API tokens: everyone manages their own; another user's token is 404, as if it did not exist.
ROUTES |= {
    "accounts:tokens": page(ANY_USER, GET_POST),
    "accounts:revoke": page(TOKEN_OWNER, GET_POST, pk="token"),
    "api-token-list": api(ANY_USER, GET | {"POST"}),
    "api-token": api(TOKEN_OWNER, frozenset({"DELETE", "OPTIONS"}), pk="token"),
}

# Study backups hold every label: their owner starts and downloads them. A restore creates
# accounts and memberships: staff only. Everyone else gets 404 (annotator/backup/views.py).
STAFF = Rule("staff", frozenset({"staff"}))
ROUTES |= {
    "studies:backup": page(OWNER, POST, **STUDY),
    "studies:restore": page(STAFF, GET_POST),
    "backup:job": page(OWNER, pk="backup"),
    "backup:download": page(OWNER, pk="backup"),
    "backup:confirm": page(STAFF, GET_POST, token="upload"),  # staff's session holds it
}
VARIANTS["backup:job#restore"] = page(STAFF, pk="restore")

# Members and invitation links: the owner removes a member or changes a role ("user" is the
# owner, the last one: refused with 409 on the page, 400 in the API) and revokes links.
ROUTES |= {
    "studies:member_remove": page(OWNER, GET_POST, study_id="study", user_id="user"),
    "studies:member_role": page(OWNER, POST, study_id="study", user_id="user"),
    "studies:invitation_revoke": page(OWNER, GET_POST, study_id="study", token="invitation"),
    "api-member": api(
        OWNER, frozenset({"PATCH", "DELETE", "OPTIONS"}), study_id="study", user_id="user"
    ),
    "api-invitation-revoke": api(OWNER, API_POST, study_id="study", token="invitation"),
}
# Passwords: changed by a signed-in user, reset by anyone with the e-mail's link. The reset
# link's page answers every method with its "link not valid" page for a link that is not one.
ROUTES |= {
    "password_change": page(ANY_USER, FORM_VIEW),
    "password_change_done": page(ANY_USER, GET),
    "password_reset": page(PUBLIC, FORM_VIEW),
    "password_reset_done": page(PUBLIC, GET),
    "password_reset_confirm": page(PUBLIC, ALL, uidb64="MQ", token="no-such-reset-token"),
    "password_reset_complete": page(PUBLIC, GET),
}
# Sign in with GitHub: the OAuth flow runs signed out (public), and every route of it is 404
# for everyone while the operator has not configured it, as in this scene
# (tests/accounts/test_github_sign_in.py drives them configured). The GitHub token page and its
# confirmation: every signed-in user, for their own token only.
GITHUB_NOT_CONFIGURED = Route(PUBLIC, ALL, ok=for_all(frozenset({404})))
ROUTES |= {
    "github_login": GITHUB_NOT_CONFIGURED,
    "github_callback": GITHUB_NOT_CONFIGURED,
    "socialaccount_login_cancelled": GITHUB_NOT_CONFIGURED,
    "socialaccount_login_error": GITHUB_NOT_CONFIGURED,
    "socialaccount_signup": GITHUB_NOT_CONFIGURED,
    "accounts:github": page(ANY_USER, GET_POST),
    "accounts:github_forget": page(ANY_USER, GET_POST),
}

CASES = cases(ROUTES, VARIANTS)


# --- the probe ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def matrix(django_db_setup, django_db_blocker, tmp_path_factory):  # type: ignore[no-untyped-def]
    """Scene and clients in one transaction, rolled back after the module. Sessions live in
    signed cookies here: one query less per request, and no rule depends on where they live."""
    media = tmp_path_factory.mktemp("media")
    cookies = "django.contrib.sessions.backends.signed_cookies"
    settings = override_settings(MEDIA_ROOT=media, SESSION_ENGINE=cookies)
    with django_db_blocker.unblock(), settings, transaction.atomic():
        scene = build_scene()
        yield scene, RoleClients(scene)
        transaction.set_rollback(True)


def probe(matrix: Any, case: Case, role: str) -> list[str]:
    """Every method of one route for one role; the mismatches, each naming what it wanted."""
    scene, clients = matrix
    url, wrong = url_of(case, scene), []
    assert case.spec is not None
    for method in case.spec.probe:
        want = expected(case, role, method)
        # A request refused before its view runs writes nothing: no savepoint needed for it.
        with nullcontext() if want.before_view else transaction.atomic():
            response = clients.request(role, method, url)
            text = body_text(response)
            transaction.set_rollback(not want.before_view)
        if not matches(response, want):
            got = f"{response.status_code} {response.get('Location', '')}".strip()
            wrong.append(f"{method} {url} as {role}: expected {want}, got {got}")
        admin_page = case.name.startswith("admin") and role == "staff"
        leaked = [s for s in HIDDEN.get(role, ()) if s in text and not admin_page]
        if leaked:
            wrong.append(f"{method} {url} as {role}: the response shows {leaked}")
    return wrong


@pytest.mark.parametrize("case", [c for c in CASES if c.spec], ids=lambda c: c.key)
def test_route(matrix, case) -> None:  # type: ignore[no-untyped-def]
    wrong = [line for role in ROLES for line in probe(matrix, case, role)]
    assert not wrong, f"{case.key} ({case.spec.rule.name}):\n" + "\n".join(wrong)


def test_the_text_check_can_see_the_notes(matrix) -> None:  # type: ignore[no-untyped-def]
    """The control of the blind check by text: the markers are in the pages that may show
    them (the owner's view of an item; an annotator's own labels)."""
    scene, clients = matrix
    url = reverse("studies:item", args=[scene.ids["item"]])
    owner = body_text(clients.request("owner", "GET", url))
    mine = body_text(clients.request("annotator", "GET", url))
    assert SECRET_A in owner and SECRET_B in owner
    assert SECRET_A in mine and SECRET_B not in mine


def test_every_route_has_a_rule() -> None:
    missing = sorted({c.name for c in CASES if c.spec is None})
    assert not missing, f"routes with no rule in ROUTES (add them): {missing}"
    known = {c.name for c in CASES}
    stale = sorted(set(ROUTES) - known - {k for k in ROUTES if "*" in k})
    stale += sorted(k for k in VARIANTS if k.split("#")[0] not in known)
    assert not stale, f"the table names routes the resolver does not know: {stale}"


def test_matrix_size(capsys) -> None:  # type: ignore[no-untyped-def]
    specs = [(c, c.spec) for c in CASES if c.spec is not None]
    probed = [c for c, _ in specs]
    routes = len({c.name for c in probed})
    full = sum(1 for _, spec in specs if len(spec.probe) == len(METHODS))
    requests = sum(len(spec.probe) for _, spec in specs) * len(ROLES)
    with capsys.disabled():
        print(
            f"\npermission matrix: {routes} routes ({len(probed) - routes} again on other"
            f" objects), {len(ROLES)} roles; {full} of these {len(probed)} cases with all"
            f" {len(METHODS)} methods, {len(probed) - full} model-admin cases with GET and"
            f" POST: {requests} requests"
        )
    assert routes >= 300 and connection.vendor == "postgresql"
