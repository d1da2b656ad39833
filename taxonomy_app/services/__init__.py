"""Codebook services: every write goes through one of these keyword-only functions.

Split by sub-domain: versions (create, draft, publish), categories (edit a draft), changes
(archive, merge, split, label carry-over), rules (label rules of a draft, and the annotations
breaking them), diff, proposals, exchange (JSON, YAML and REFI-QDA files).
"""

from ..errors import CodebookError, PublishedVersionError
from .categories import (
    add_category,
    delete_category,
    move_category,
    reorder_category,
    update_category,
)
from .changes import (
    CarryOverPlan,
    CarryOverResult,
    SplitResult,
    archive_category,
    carry_over_labels,
    merge_categories,
    plan_carry_over,
    restore_category,
    split_category,
)
from .diff import VersionDiff, diff_version
from .drafts import require_draft
from .exchange import (
    EXPORT_FORMATS,
    export_version,
    import_codebook,
    read_codebook,
    specs_equal,
    version_spec,
)
from .proposals import (
    accept_proposal,
    create_proposal,
    map_proposal,
    proposal_counts,
    reject_proposal,
)
from .versions import (
    create_codebook,
    discard_draft,
    publish_version,
    start_draft,
    update_facet,
)

__all__ = [
    "EXPORT_FORMATS",
    "CarryOverPlan",
    "CarryOverResult",
    "CodebookError",
    "PublishedVersionError",
    "SplitResult",
    "VersionDiff",
    "accept_proposal",
    "add_category",
    "archive_category",
    "carry_over_labels",
    "create_codebook",
    "create_proposal",
    "delete_category",
    "diff_version",
    "discard_draft",
    "export_version",
    "import_codebook",
    "map_proposal",
    "merge_categories",
    "move_category",
    "plan_carry_over",
    "proposal_counts",
    "publish_version",
    "read_codebook",
    "reject_proposal",
    "reorder_category",
    "require_draft",
    "restore_category",
    "specs_equal",
    "split_category",
    "start_draft",
    "update_category",
    "update_facet",
    "version_spec",
]
