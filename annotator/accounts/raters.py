"""The names of the pseudonymous raters a prior-labels import makes (annotator/exports/prior.py):
s<study id>-rater-<slug>. No person's account is made with one (sign-up and an owner's "create
an account" refuse them), so a rater name never points at a person and no import can be
steered onto somebody's account."""

from __future__ import annotations

import re

RATER_NAME = re.compile(r"^s\d+-rater-", re.IGNORECASE)
RESERVED_MESSAGE = "Names like s12-rater-… are kept for imported raters; choose another."
