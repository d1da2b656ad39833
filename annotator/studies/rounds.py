"""The round a page or API call asks for with `?round=<number>`: one reading for every view that
takes it (the agreement, drift, diagnostics and analytics pages and their APIs)."""

from __future__ import annotations

from dataclasses import dataclass

from annotator.params import optional_int

from .models import Round, Study


@dataclass(frozen=True)
class AskedRound:
    rounds: list[Round]  # the study's rounds, by number
    number: int | None  # the number asked for (None: not asked)
    round: Round | None  # that round; None when not asked or the study has no such round

    @property
    def last(self) -> Round | None:
        return self.rounds[-1] if self.rounds else None


def asked_round(study: Study, value: object) -> AskedRound:
    """Read `value` (a query parameter) as a round number of `study`: a 400 naming `round`
    (annotator/params.BadParameter) when it is no number; the caller decides what a missing or
    unknown round means for it."""
    rounds = list(Round.objects.filter(study=study).order_by("number"))
    number = optional_int(value, name="round")
    found = next((r for r in rounds if r.number == number), None) if number is not None else None
    return AskedRound(rounds, number, found)
