"""The permission matrix's vocabulary and its derivation: who a rule admits, what everyone
else is answered, and the routes the URL resolver knows (tests/security/test_permission_matrix.py
holds the table itself).

What a role must get for a method is derived from a route's rule, never written per case:
1. anonymous, where the rule does not admit them: the login page (302 to /login/ for pages, the
   admin's own login for its site-wide views, DRF's 401 for the API);
2. a method the view does not accept: 405 (the admin site refuses non-staff before the method);
3. a role the rule admits: a success (200; for a write also 201/202/204, a redirect that is not
   to a login page, 400 for an empty body, 409 where the state forbids the change);
4. any other role: the rule's refusal, as the app answers a stranger: 404 on study objects (ids
   reveal nothing, annotator/studies/access.py), 403 where a codebook's owner is needed,
   the admin's login redirect on the admin site.
An OPTIONS request to the API is answered from the endpoint's description for any signed-in
user: it reads no object.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from django.urls import URLPattern, URLResolver, get_resolver, reverse
from rest_framework.views import APIView

from tests.security.matrix_scene import ROLES, SECRET_A, SECRET_B, Scene, admin_object_id

METHODS = ("GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE")
SIGNED_IN = frozenset(ROLES) - {"anonymous"}
MEMBERS = frozenset({"annotator", "peer", "adjudicator", "owner"})


@dataclass(frozen=True)
class Rule:
    """Who may use a route, and what everyone else is answered."""

    name: str
    roles: frozenset[str]
    refusal: int | str = 404  # a status, or a redirect of the admin site (ADMIN_REFUSALS)


PUBLIC = Rule("public", frozenset(ROLES))
ANY_USER = Rule("any signed-in user", SIGNED_IN)
MEMBER = Rule("study member", MEMBERS)
ANNOTATOR = Rule("annotator of the study", frozenset({"annotator", "peer"}))
SEE_ALL = Rule("owner or adjudicator", frozenset({"adjudicator", "owner"}))
OWNER = Rule("study owner", frozenset({"owner"}))
OWN_ASSIGNMENT = Rule("the assignment's annotator (A)", frozenset({"annotator"}))
PEER_ASSIGNMENT = Rule("the assignment's annotator (B)", frozenset({"peer"}))
CODEBOOK_OWNER = Rule("codebook owner or staff", frozenset({"owner", "staff"}), 403)
WIZARD = Rule("the session that started the wizard", frozenset({"owner"}))
ADMIN = Rule("admin site (staff)", frozenset({"staff"}), "admin-login")

ALL = frozenset(METHODS)
GET = frozenset({"GET", "HEAD", "OPTIONS"})  # a DRF view with `get` (HEAD and OPTIONS follow)
GET_POST = frozenset({"GET", "POST"})  # require_http_methods(["GET", "POST"])
POST = frozenset({"POST"})  # require_POST
API_POST = frozenset({"POST", "OPTIONS"})
WRITE = frozenset({"POST", "PUT", "PATCH", "DELETE"})


@dataclass(frozen=True)
class Route:
    rule: Rule
    methods: frozenset[str]
    params: dict[str, str] = field(default_factory=dict)  # URL parameter → key of Scene.ids
    by_method: dict[str, Rule] = field(default_factory=dict)  # a method with its own rule
    ok: dict[str, frozenset[int]] = field(default_factory=dict)  # success other than 200
    probe: tuple[str, ...] = METHODS  # the methods the matrix sends

    def rule_for(self, method: str) -> Rule:
        return self.by_method.get(method, self.rule)


def redirects(methods: frozenset[str]) -> dict[str, frozenset[int]]:
    return {m: frozenset({302}) for m in methods}


def for_all(statuses: frozenset[int]) -> dict[str, frozenset[int]]:
    return dict.fromkeys(METHODS, statuses)


ADMIN_OK = for_all(frozenset({200, 302, 403}))
# Each model's admin views sit behind the same AdminSite.admin_view guard, which refuses before
# the view sees the method: for them GET and POST suffice, except on the annotations' admin
# (the labels), probed with every method like the site-wide admin views (see the table).
MODEL_ADMIN = ("GET", "POST")
ADMIN_OBJECT = {"object_id": "admin-object"}


def model_admin(params: dict[str, str] | None = None, ok: Any = None) -> Route:
    return Route(ADMIN, ALL, params or {}, ok=ok or ADMIN_OK, probe=MODEL_ADMIN)


def page(rule: Rule, methods: frozenset[str] = ALL, /, **params: str) -> Route:
    return Route(rule, methods, params)


def api(rule: Rule, methods: frozenset[str] = GET, /, **params: str) -> Route:
    return Route(rule, methods, params)


# Rules of routes added beside the table in test_permission_matrix.py; `cases` reads them where
# the table has none. Per-annotator diagnostics set every annotator's figures side by side: the
# study's owner (and staff, on the page) only; an annotator gets 404 like a stranger.
OWNER_OR_STAFF = Rule("study owner or staff", frozenset({"owner", "staff"}))
SOME_STUDY_OWNER = Rule(
    "an owner of any study, or staff", frozenset({"owner", "outsider", "staff"})
)
NO_TRAINING_FEEDBACK = Rule("nobody: the scene's rounds give no gold feedback", frozenset())
ADDED_ROUTES: dict[str, Route] = {
    "agreement:annotators": page(OWNER_OR_STAFF, study_id="study"),
    "api-annotator-diagnostics": api(OWNER, study_id="study"),
    # The declared headline: owners and adjudicators read it, owners declare.
    "agreement:headline": Route(
        SEE_ALL, GET_POST, {"study_id": "study"}, by_method={"POST": OWNER}
    ),
    # Drift within a round: owners and adjudicators, as the agreement report.
    "agreement:drift": page(SEE_ALL, study_id="study"),
    "api-drift": api(SEE_ALL, study_id="study"),
    # Disagreement analytics: counts, codes and item ids only; owners and adjudicators.
    "adjudication:analytics": page(SEE_ALL, study_id="study"),
    "api-disagreement-analytics": api(SEE_ALL, study_id="study"),
    # Gold answers: owners set and remove them (a confirmation page, then POST).
    "studies:gold": page(OWNER, GET_POST, item_id="item"),
    "studies:gold_delete": page(OWNER, GET_POST, item_id="item"),
    # The feedback of a training round exists only for the assignment's annotator after they
    # submitted an item with a gold answer; the scene has no training round, so it is 404 for
    # everyone here (tests/studies/test_gold.py proves the annotator's 200 and the 404 before).
    "studies:feedback": page(NO_TRAINING_FEEDBACK, assignment_id="assignment"),
    "api-feedback": api(NO_TRAINING_FEEDBACK, assignment_id="assignment"),
    # Machine raters: the owner declares them, starts runs and reads calls; the toggle that
    # hides machine labels on item pages is the owner's and adjudicators'.
    "machine:raters": page(OWNER, ALL, study_id="study"),
    "machine:labels_shown": page(SEE_ALL, POST, study_id="study"),
    "machine:rater": page(OWNER, ALL, rater_id="machine_rater"),
    "machine:start": page(OWNER, POST, rater_id="machine_rater"),
    "machine:run": page(OWNER, ALL, run_id="machine_run"),
    "machine:call": page(OWNER, ALL, call_id="machine_call"),
    "api-machine-raters": api(OWNER, GET | {"POST"}, study_id="study"),
    "api-machine-estimate": api(OWNER, rater_id="machine_rater"),
    "api-machine-runs": api(OWNER, GET | {"POST"}, rater_id="machine_rater"),
    "api-machine-run": api(OWNER, run_id="machine_run"),
    # Near-duplicates (annotator/similarity): a study's owners review groups and mark issues;
    # groups, passes and similar issues read the shared pool (no labels) for anyone signed in;
    # passes (over the shared pool) are for the owners of any study (the outsider owns one)
    # and staff.
    "similarity:duplicates": page(OWNER, study_id="study"),
    "similarity:group": page(OWNER, study_id="study", group_id="duplicate_group"),
    # Without an issue to confirm, GET returns to the groups.
    "similarity:mark": Route(
        OWNER, GET_POST, {"study_id": "study"}, ok=redirects(frozenset({"GET"}))
    ),
    "similarity:undo": page(OWNER, POST, study_id="study", mark_id="duplicate_mark"),
    "similarity:start_pass": page(OWNER, POST, study_id="study"),
    "similarity:pass": page(SOME_STUDY_OWNER, pass_id="duplicate_pass"),
    "similarity:similar": page(ANY_USER, issue_id="issue"),
    "api-duplicate-passes": Route(ANY_USER, GET | API_POST, by_method={"POST": SOME_STUDY_OWNER}),
    "api-duplicate-pass": api(ANY_USER, pass_id="duplicate_pass"),
    "api-duplicate-groups": api(ANY_USER),
    "api-duplicate-marks": api(OWNER, GET | API_POST, study_id="study"),
    "api-duplicate-mark-undo": api(OWNER, API_POST, study_id="study", mark_id="duplicate_mark"),
    "api-similar-issues": api(ANY_USER, issue_id="issue"),
}


# --- the routes the resolver knows --------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    key: str  # the table key; a variant's carries "#…"
    name: str  # the route's URL name with its namespace, or its pattern when unnamed
    pattern: URLPattern
    spec: Route | None
    is_api: bool


def resolver_routes(
    patterns: Any = None, prefix: str = "", namespace: str = ""
) -> Iterator[tuple[str, URLPattern]]:
    """(URL name with its namespace — or the full pattern when unnamed —, pattern)."""
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
            yield from resolver_routes(pattern.url_patterns, route, inner)
        elif isinstance(pattern, URLPattern):
            yield (f"{namespace}{pattern.name}" if pattern.name else route), pattern


def rule_of(name: str, table: dict[str, Route]) -> Route | None:
    if name in table:
        return table[name]
    found = [k for k in table if k.count("*") == 1 and fnmatch.fnmatchcase(name, k)]
    assert len(found) <= 1, f"{name} matches several table entries: {found}"
    return table[found[0]] if found else None


def is_api_view(pattern: URLPattern) -> bool:
    cls = getattr(pattern.callback, "cls", None)
    return isinstance(cls, type) and issubclass(cls, APIView)


def cases(routes: dict[str, Route], variants: dict[str, Route]) -> list[Case]:
    """Every resolver route with its rule (None when the table has none), plus the variants:
    the same route on other objects."""
    out = []
    for name, pattern in resolver_routes():
        api_view = is_api_view(pattern)
        spec = rule_of(name, routes) or rule_of(name, ADDED_ROUTES)
        out.append(Case(name, name, pattern, spec, api_view))
        for key, spec in variants.items():
            if key.split("#")[0] == name:
                variant = key if "#" in key else f"{key}#{next(iter(spec.params.values()))}"
                out.append(Case(variant, name, pattern, spec, api_view))
    return out


def url_of(case: Case, scene: Scene) -> str:
    """The route's URL with the scene's objects in its parameters (reverse() for a named
    route; an unnamed one is filled in place)."""
    assert case.spec is not None
    params = {
        **getattr(case.pattern.pattern, "converters", {}),
        **case.pattern.pattern.regex.groupindex,
    }
    missing = [p for p in params if p not in case.spec.params]
    assert not missing, f"{case.key}: the table names no value for parameter(s) {missing}"
    values = {}
    for param, key in case.spec.params.items():
        value = admin_object_id(case.name) if key == "admin-object" else scene.ids.get(key, key)
        values[param] = value
    if case.pattern.name:
        return reverse(case.name, kwargs=values)
    route = case.name.removesuffix("$")
    for param, value in values.items():
        route = re.sub(rf"<(\w+:)?{param}>|\(\?P<{param}>[^)]*\)", value, route)
    return "/" + route


# --- what each role must get ----------------------------------------------------------------------
REFUSED_TO = re.compile(r"^/(admin/)?login/\?next=")  # where a refusal by redirect goes


@dataclass(frozen=True)
class Expected:
    statuses: frozenset[int]
    to: str = ""  # a refusal by redirect: a pattern its Location matches
    before_view: bool = False  # refused by middleware or decorator: the view body never runs

    def __str__(self) -> str:
        codes = "/".join(str(s) for s in sorted(self.statuses))
        return f"{codes} to {self.to}" if self.to else codes


LOGIN = Expected(frozenset({302}), r"^/login/\?next=", before_view=True)
ANY_LOGIN = Expected(frozenset({302}), REFUSED_TO.pattern, before_view=True)
UNAUTHORIZED = Expected(frozenset({401}), before_view=True)
NOT_ALLOWED = Expected(frozenset({405}), before_view=True)
ADMIN_REFUSALS = {
    "admin-login": Expected(frozenset({302}), r"^/admin/login/\?next=", before_view=True),
    "admin-index": Expected(frozenset({302}), r"^/admin/$", before_view=True),
}
OK = frozenset({200})
SUCCESS_OF_WRITE = frozenset({200, 201, 202, 204, 302, 400, 409})


def expected(case: Case, role: str, method: str) -> Expected:
    """What `role` must get for `method` on the case's route, from the route's rule alone."""
    spec = case.spec
    assert spec is not None
    rule = spec.rule_for(method)
    if method == "OPTIONS" and case.is_api and rule is not PUBLIC:
        rule = ANY_USER  # DRF describes the endpoint; it reads no object
    admitted = role in rule.roles
    if not admitted and role == "anonymous":
        if rule.refusal in ADMIN_REFUSALS:
            return ANY_LOGIN  # the site's or the admin's login page, as the view was wrapped
        return UNAUTHORIZED if case.is_api else LOGIN
    if not admitted and rule.refusal in ADMIN_REFUSALS:
        return ADMIN_REFUSALS[str(rule.refusal)]
    if method not in spec.methods:
        return NOT_ALLOWED
    if admitted:
        return Expected(spec.ok.get(method, SUCCESS_OF_WRITE if method in WRITE else OK))
    return Expected(frozenset({int(rule.refusal)}))


def matches(response: Any, want: Expected) -> bool:
    if response.status_code not in want.statuses:
        return False
    location = response.get("Location", "") if response.status_code == 302 else ""
    if want.to:
        return re.search(want.to, location) is not None
    return not REFUSED_TO.search(location)  # a success never sends one to log in


# Text that must never reach a role: the other annotator's notes, or either's from outside.
HIDDEN = {
    "anonymous": (SECRET_A, SECRET_B),
    "outsider": (SECRET_A, SECRET_B),
    "annotator": (SECRET_B,),
    "peer": (SECRET_A,),
    "staff": (SECRET_A, SECRET_B),
}
