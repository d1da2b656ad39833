"""Study services: every write goes through one of these keyword-only functions.

Split by sub-domain: studies (study, members, invitations, rounds), selection (filters and
seeded stratified samples), assignment (next item, skip, timeouts), annotation (drafts,
submits, proposals), progress (read-only figures for pages and the API).
"""

from ..errors import LabelErrors, StudyError
from .annotation import propose_category, save_draft, submit_annotation
from .assignment import next_assignment, release_stale_assignments, skip_assignment
from .selection import candidate_issues, clean_filters, preview_selection, select_issues
from .studies import (
    accept_invitation,
    add_member,
    change_member_role,
    close_round,
    create_invitation,
    create_member_account,
    create_round,
    create_study,
    join_with_new_account,
    live_invitation,
    remove_member,
    revoke_invitation,
    round_for_selection,
    update_study,
)

__all__ = [
    "LabelErrors",
    "StudyError",
    "accept_invitation",
    "add_member",
    "candidate_issues",
    "change_member_role",
    "clean_filters",
    "close_round",
    "create_invitation",
    "create_member_account",
    "create_round",
    "create_study",
    "join_with_new_account",
    "live_invitation",
    "next_assignment",
    "preview_selection",
    "propose_category",
    "release_stale_assignments",
    "remove_member",
    "revoke_invitation",
    "round_for_selection",
    "save_draft",
    "select_issues",
    "skip_assignment",
    "submit_annotation",
    "update_study",
]
