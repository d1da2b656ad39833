"""Adjudication services: every write goes through one of these keyword-only functions.

Split by sub-domain: rules (pure: agreement and the automatic rules), decisions (automatic and
adjudicated, locking, release), history (the audit trail), discussion (threads, blindness),
queue (read-only: disagreement queue, re-labeling queue, item overview).
"""

from ..errors import AdjudicationError, DecisionConflict, LabelErrors
from .decisions import (
    adjudicate_item,
    decide_item_if_complete,
    reapply_decision_rules,
    release_item,
    set_blind_options,
    set_majority_rule,
)
from .discussion import may_discuss, post_comment
from .history import item_history, record_change
from .queue import (
    disagreement_queue,
    item_overview,
    next_in_queue,
    queue_entries,
    queue_ids,
    relabel_queue,
)

__all__ = [
    "AdjudicationError",
    "DecisionConflict",
    "LabelErrors",
    "adjudicate_item",
    "decide_item_if_complete",
    "disagreement_queue",
    "item_history",
    "item_overview",
    "may_discuss",
    "next_in_queue",
    "post_comment",
    "queue_entries",
    "queue_ids",
    "reapply_decision_rules",
    "record_change",
    "relabel_queue",
    "release_item",
    "set_blind_options",
    "set_majority_rule",
]
