"""Codebooks in a restore: a codebook found here by slug, a version by codebook and number.

A version that exists here is reused only when its content is the archive's: status,
changelog, facets, categories (with parent and origin by code) and change operations. Then its
facets and categories here stand for the archive's (the labels point to them) and its change
operations are not written again. Any difference is refused with the first thing that
differs: two codebooks under one name and number are not the same codebook.

The archive's codebook tables are small (they grow with the codebook, not the study), so they
are read into memory once to compare.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from taxonomy_app.models import (
    Category,
    ChangeOperation,
    Codebook,
    CodebookVersion,
    Facet,
    LabelRule,
    Proposal,
)

from .errors import RestoreError
from .tables import TARGETS

if TYPE_CHECKING:
    from .matching import Rule
    from .restore import Pending, Restorer

FACET = ("key", "name", "kind", "required", "order", "help")
CATEGORY = ("code", "name", "definition", "include", "exclude", "examples", "order", "archived")
RULE = ("kind", "when_categories", "categories", "max_choices", "order")
Content = dict[str, Any]


class CodebookRules:
    def __init__(self, restorer: Restorer) -> None:
        self.restorer = restorer
        rows = {
            label: self._read(label)
            for label in (
                "taxonomy_app.codebook",
                "taxonomy_app.codebookversion",
                "taxonomy_app.facet",
                "taxonomy_app.category",
                "taxonomy_app.changeoperation",
                "taxonomy_app.labelrule",
                TARGETS._meta.label_lower,
            )
        }
        self.codebooks = rows["taxonomy_app.codebook"]
        self.versions = rows["taxonomy_app.codebookversion"]
        self.facets = rows["taxonomy_app.facet"]
        self.categories = rows["taxonomy_app.category"]
        self.operations = rows["taxonomy_app.changeoperation"]
        self.label_rules = rows["taxonomy_app.labelrule"]
        self.targets = list(rows[TARGETS._meta.label_lower].values())
        self.reused_versions: set[int] = set()
        self.reused_facets: set[int] = set()
        self.reused_categories: set[int] = set()

    def _read(self, label: str) -> dict[int, dict[str, Any]]:
        entry = self.restorer.entry(label)
        return {row["id"]: row for _, row in self.restorer.reader.rows(entry)}

    def rules(self) -> dict[str, Rule]:
        return {
            "taxonomy_app.codebook": self.match_codebooks,
            "taxonomy_app.codebookversion": self.match_versions,
            "taxonomy_app.facet": lambda rows: self._known(rows, self.reused_facets, "facet"),
            "taxonomy_app.category": lambda rows: self._known(
                rows, self.reused_categories, "category"
            ),
            "taxonomy_app.changeoperation": self.skip_operations,
            "taxonomy_app.labelrule": self.skip_rules,
            "taxonomy_app.proposal": self.match_proposals,
        }

    def match_codebooks(self, rows: list[Pending]) -> dict[int, int]:
        out = {}
        member = self.restorer.entry("taxonomy_app.codebook").member
        for p in rows:
            here = Codebook.objects.filter(slug=p.values["slug"]).first()
            if here is None:
                continue
            if here.name != p.values["name"]:
                raise RestoreError(
                    f"{member} line {p.line}, field 'name': codebook {here.slug!r} exists here "
                    f"named {here.name!r}, not {p.values['name']!r}"
                )
            out[p.old] = here.pk
        return out

    def match_versions(self, rows: list[Pending]) -> dict[int, int]:
        out = {}
        member = self.restorer.entry("taxonomy_app.codebookversion").member
        for p in rows:
            here = CodebookVersion.objects.filter(
                codebook_id=p.values["codebook_id"], number=p.values["number"]
            ).first()
            if here is None:
                continue
            difference = _difference(self.archived_content(p.old), database_content(here))
            if difference:
                raise RestoreError(
                    f"{member} line {p.line}: codebook {here.codebook.slug!r} v{here.number} "
                    f"exists here with other content ({difference}); a restore does not "
                    "change a codebook"
                )
            self._stand_in(p.old, here)
            out[p.old] = here.pk
        return out

    def _stand_in(self, old_version: int, here: CodebookVersion) -> None:
        """Map the archive's facets and categories of a reused version to the ones here."""
        ids = self.restorer.ids
        facets = dict(Facet.objects.filter(version=here).values_list("key", "pk"))
        categories = {
            (facet, code): pk
            for facet, code, pk in Category.objects.filter(facet__version=here).values_list(
                "facet_id", "code", "pk"
            )
        }
        self.reused_versions.add(old_version)
        for old, facet in self.facets.items():
            if facet["version"] == old_version:
                ids["taxonomy_app.facet"][old] = facets[facet["key"]]
                self.reused_facets.add(old)
        for old, category in self.categories.items():
            if category["facet"] in self.reused_facets and old not in self.reused_categories:
                facet_here = ids["taxonomy_app.facet"][category["facet"]]
                ids["taxonomy_app.category"][old] = categories[(facet_here, category["code"])]
                self.reused_categories.add(old)

    def _known(self, rows: list[Pending], reused: set[int], table: str) -> dict[int, int]:
        ids = self.restorer.ids[f"taxonomy_app.{table}"]
        return {p.old: ids[p.old] for p in rows if p.old in reused}

    def skip_operations(self, rows: list[Pending]) -> dict[int, int]:
        from .restore import SKIP

        return {p.old: SKIP for p in rows if p.row["version"] in self.reused_versions}

    def skip_rules(self, rows: list[Pending]) -> dict[int, int]:
        """A reused version has its rules here already (its content was compared)."""
        from .restore import SKIP

        return {p.old: SKIP for p in rows if p.row["version"] in self.reused_versions}

    def match_proposals(self, rows: list[Pending]) -> dict[int, int]:
        """On a reused facet, a proposal here with the same name and time is the same one (its
        status may have moved on here, and is kept)."""
        out = {}
        for p in rows:
            if p.row["facet"] not in self.reused_facets:
                continue
            here = Proposal.objects.filter(
                facet_id=p.values["facet_id"],
                name=p.values["name"],
                created_at=p.values["created_at"],
            ).first()
            if here is not None:
                out[p.old] = here.pk
        return out

    # --- the content that must match ----------------------------------------------------------

    def archived_content(self, version: int) -> Content:
        v = self.versions[version]
        facets = {old: f for old, f in self.facets.items() if f["version"] == version}
        categories = {old: c for old, c in self.categories.items() if c["facet"] in facets}
        operations = [o for o in self.operations.values() if o["version"] == version]
        rules = [r for r in self.label_rules.values() if r["version"] == version]
        based_on = self.versions.get(v["based_on"]) if v["based_on"] else None
        return {
            "status": v["status"],
            "changelog": v["changelog"],
            "based on": based_on["number"] if based_on else None,
            "facets": sorted(tuple(f[k] for k in FACET) for f in facets.values()),
            "categories": sorted(
                (
                    facets[c["facet"]]["key"],
                    *(c[k] for k in CATEGORY),
                    self._code(c["parent"]),
                    self._natural(c["origin"]),
                )
                for c in categories.values()
            ),
            "change operations": sorted(
                (
                    o["kind"],
                    *(self._natural(o["category"]) or (None,) * 4)[2:],
                    tuple(
                        sorted(
                            self._code(t["category"]) or ""
                            for t in self.targets
                            if t["changeoperation"] == o["id"]
                        )
                    ),
                    _detail(o["detail"]),
                )
                for o in operations
            ),
            "label rules": sorted(
                _rule_row(
                    facets[r["facet"]]["key"],
                    facets[r["when_facet"]]["key"] if r["when_facet"] else None,
                    *(r[k] for k in RULE),
                )
                for r in rules
            ),
        }

    def _code(self, category: int | None) -> str | None:
        return self.categories[category]["code"] if category in self.categories else None

    def _natural(self, category: int | None) -> tuple[Any, ...] | None:
        """(codebook slug, version number, facet key, code) of an archived category."""
        if category is None or category not in self.categories:
            return None
        c = self.categories[category]
        facet = self.facets[c["facet"]]
        version = self.versions[facet["version"]]
        return (
            self.codebooks[version["codebook"]]["slug"],
            version["number"],
            facet["key"],
            c["code"],
        )


def database_content(version: CodebookVersion) -> Content:
    """The same description as `archived_content`, of a version in this database."""
    facets = Facet.objects.filter(version=version).values_list(*FACET)
    origin = (
        "origin__facet__version__codebook__slug",
        "origin__facet__version__number",
        "origin__facet__key",
        "origin__code",
    )
    categories = Category.objects.filter(facet__version=version).values_list(
        "facet__key", *CATEGORY, "parent__code", *origin
    )
    operations = ChangeOperation.objects.filter(version=version).prefetch_related("targets")
    return {
        "status": version.status,
        "changelog": version.changelog,
        "based on": version.based_on.number if version.based_on else None,
        "facets": sorted(tuple(f) for f in facets),
        "categories": sorted(
            (*row[:-4], None if row[-1] is None else tuple(row[-4:])) for row in categories
        ),
        "change operations": sorted(
            (
                o.kind,
                o.category.facet.key,
                o.category.code,
                tuple(sorted(t.code for t in o.targets.all())),
                _detail(o.detail),
            )
            for o in operations.select_related("category__facet")
        ),
        "label rules": sorted(
            _rule_row(*row)
            for row in LabelRule.objects.filter(version=version).values_list(
                "facet__key", "when_facet__key", *RULE
            )
        ),
    }


def _rule_row(*values: Any) -> tuple[Any, ...]:
    """A rule as a comparable tuple: its code lists (JSON) as tuples, None as ""."""
    return tuple(tuple(v) if isinstance(v, list) else ("" if v is None else v) for v in values)


def _detail(detail: Any) -> str:
    """An operation's detail without the proposal id it may name (ids differ between
    databases; the proposal itself is compared as a row)."""
    plain = {k: v for k, v in (detail or {}).items() if k != "proposal"}
    return json.dumps(plain, sort_keys=True)


def _difference(archived: Content, here: Content) -> str:
    """The first thing that differs, in words; empty when the two are the same."""
    for key, value in archived.items():
        if value == here[key]:
            continue
        if isinstance(value, list):
            extra = [x for x in value if x not in here[key]] or [
                x for x in here[key] if x not in value
            ]
            return f"{key} differ, e.g. {extra[0]!r}" if extra else f"{key} differ"
        return f"{key} is {here[key]!r} here, {value!r} in the archive"
    return ""
