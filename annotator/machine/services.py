"""Declaring a machine rater, starting a run, and the run itself.

A run asks the rater's server for each item of the round (all of them or a seeded sample) and
each sample index, through the official `openai` client: it speaks the chat-completions wire
format, retries 429 (honouring retry-after), 408/409, 5xx and timeouts with backoff
(LLM_MAX_RETRIES), and takes a base_url. Each answer is stored as it arrives (MachineCall), so a
killed run, started again, asks only for what is still unanswered. 401, 403 and an unknown model
(404) stop the run with a message saying so; a call that still fails after its retries is stored
as failed and tried again by the next run.
"""

from __future__ import annotations

import logging
import secrets
import time
from dataclasses import dataclass
from typing import Any

import openai
from django.conf import settings
from django.db import transaction

from annotator.issues.models import Issue, IssueComment
from annotator.jobs import claim_job, finish_job, job_heartbeat, report_progress
from annotator.studies.codebook import CodebookSchema, codebook_schema
from annotator.studies.models import Item, Round, Study
from annotator.studies.sampling import simple_sample

from . import prompt
from .models import MachineCall, MachineRater, MachineRun

logger = logging.getLogger(__name__)
Outcome = MachineCall.Outcome
Status = MachineRun.Status
PARAMETERS = ("temperature", "top_p", "max_tokens", "seed")


class MachineError(Exception):
    """A request the machine-rater services refuse, or a run that cannot go on, in words."""


class ConcurrencyLimit(MachineError):
    """A run refused because too many are queued or running (the API answers 409)."""


def configured(rater: MachineRater | None = None) -> bool:
    """Whether a server is configured: the rater's base URL or LLM_BASE_URL."""
    return bool((rater.base_url if rater else "") or settings.LLM_BASE_URL)


def declare_rater(
    *,
    study: Study,
    name: str,
    model: str,
    base_url: str = "",
    parameters: dict[str, Any] | None = None,
    samples: int = 1,
    token_budget: int = 6000,
    user: Any = None,
) -> MachineRater:
    """Declare (or redeclare, while it has no call) a machine rater of the study."""
    parameters = dict(parameters or {})
    unknown = sorted(set(parameters) - set(PARAMETERS))
    if unknown:
        raise MachineError(f"field 'parameters': unknown {unknown}; known: {list(PARAMETERS)}")
    parameters = {key: _check_parameter(key, value) for key, value in parameters.items()}
    if not name.strip() or not model.strip():
        raise MachineError("fields 'name' and 'model': name the rater and its model")
    if samples < 1:
        raise MachineError("field 'samples': at least one answer per item")
    existing = MachineRater.objects.filter(study=study, name=name.strip()).first()
    if existing is not None and existing.calls.exists():
        raise MachineError(
            f"field 'name': rater {name!r} has answers already; declare another name for other "
            "settings (its calls keep what they were asked with)"
        )
    values = {
        "model": model.strip(),
        "base_url": base_url.strip(),
        "parameters": parameters,
        "samples": samples,
        "token_budget": token_budget,
        "prompt_version": prompt.PROMPT_VERSION,
        "created_by": user if getattr(user, "is_authenticated", False) else None,
    }
    rater, _ = MachineRater.objects.update_or_create(
        study=study, name=name.strip(), defaults=values
    )
    return rater


# parameter → (number type, lowest, highest), as the chat-completions API takes them
PARAMETER_RANGES: dict[str, tuple[type, float, float]] = {
    "temperature": (float, 0, 2),
    "top_p": (float, 0, 1),
    "max_tokens": (int, 1, 1_000_000),
    "seed": (int, 0, 2**63 - 1),
}


def _check_parameter(key: str, value: Any) -> int | float:
    """The value as the server takes it (a whole number as int), or a MachineError naming it."""
    kind, low, high = PARAMETER_RANGES[key]
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if ok and kind is int:
        ok = float(value).is_integer()
    if not ok or not low <= value <= high:
        word = "a whole number" if kind is int else "a number"
        raise MachineError(f"field 'parameters.{key}': {word} from {low} to {high}, not {value!r}")
    return int(value) if kind is int else value


def start_run(
    *,
    rater: MachineRater,
    round: Round,
    sample_size: int | None = None,
    seed: int | None = None,
    user: Any = None,
    enqueue: bool = True,
) -> MachineRun:
    """A queued run of `rater` over `round` (or a seeded sample of its items)."""
    from annotator.dispatch import enqueue_job

    if not configured(rater):
        raise MachineError(
            "no server: set LLM_BASE_URL (and LLM_API_KEY) or give the rater a base URL"
        )
    if round.study_id != rater.study_id:
        raise MachineError(f"field 'round': round {round.number} is not a round of this study")
    if sample_size is not None and sample_size < 1:
        raise MachineError("field 'sample_size': at least one item, or empty for all")
    with transaction.atomic():
        # The rater's row serialises starters: two clicks never start two runs past the limit.
        MachineRater.objects.select_for_update().filter(pk=rater.pk).first()
        _check_concurrency(rater)
        run = _create_run(rater, round, sample_size, seed, user)
    if enqueue:
        enqueue_job(run)
    return run


def _check_concurrency(rater: MachineRater) -> None:
    """One live run per rater (two would ask twice for the same items), and at most
    LLM_MAX_CONCURRENT_RUNS live runs on the server, so one study cannot take every worker and
    the model server's whole capacity."""
    live = MachineRun.objects.filter(status__in=[Status.QUEUED, Status.RUNNING])
    mine = live.filter(rater=rater).first()
    if mine is not None:
        raise ConcurrencyLimit(
            f"rater {rater.name!r} has run {mine.pk} {mine.status}; start again when it ends"
        )
    limit = settings.LLM_MAX_CONCURRENT_RUNS
    if live.count() >= limit:
        raise ConcurrencyLimit(
            f"{limit} machine run(s) are queued or running (LLM_MAX_CONCURRENT_RUNS = {limit}); "
            "start this one when one ends"
        )


def _create_run(
    rater: MachineRater, round: Round, sample_size: int | None, seed: int | None, user: Any
) -> MachineRun:
    return MachineRun.objects.create(
        rater=rater,
        round=round,
        sample_size=sample_size,
        seed=seed if seed is not None or sample_size is None else secrets.randbelow(2**31),
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )


# An estimate builds the prompts of at most this many items (a seeded random sample of the run's
# items) and scales their tokens to all: building every prompt of a 100,000-item round took
# seconds, and the figure is an estimate (characters / 4) either way.
ESTIMATE_SAMPLE = 500


def estimate(rater: MachineRater, round: Round, sample_size: int | None = None) -> dict[str, int]:
    """Calls and prompt tokens a run would spend (tokens estimated as characters / 4), before
    it starts: the prompts are built, nothing is sent. `sampled` is how many items' prompts were
    built: all of them, or ESTIMATE_SAMPLE drawn at random (seed 0) with the mean scaled up."""
    schema = codebook_schema(rater.study.codebook_version)
    ids = run_item_ids(round, sample_size, None)
    built = ids if len(ids) <= ESTIMATE_SAMPLE else simple_sample(ids, ESTIMATE_SAMPLE, 0)
    tokens = 0
    for thread in _threads(built):
        sent, _ = prompt.messages(schema, thread, rater.token_budget)
        tokens += sum(prompt.estimate_tokens(m["content"]) for m in sent)
    scaled = int(tokens * len(ids) / len(built) + 0.5) if built else 0  # rounded half up
    return {
        "items": len(ids),
        "calls": len(ids) * rater.samples,
        "prompt_tokens": scaled * rater.samples,
        "sampled": len(built),
    }


def run_item_ids(round: Round, sample_size: int | None, seed: int | None) -> list[int]:
    """The ids of the items a run asks about, in position order: all of the round's, or a
    seeded simple random sample of `sample_size` of them."""
    ids = list(Item.objects.filter(round=round).order_by("position").values_list("pk", flat=True))
    if sample_size is None:
        return ids
    chosen = set(simple_sample(ids, sample_size, seed or 0))
    return [pk for pk in ids if pk in chosen]


def _threads(item_ids: list[int]) -> list[prompt.Thread]:
    """The threads of these items, in two queries (issues, then every comment of them)."""
    issues = dict(Item.objects.filter(pk__in=item_ids).values_list("pk", "issue_id").order_by())
    texts = {
        i["pk"]: i
        for i in Issue.objects.filter(pk__in=set(issues.values())).values("pk", "title", "body")
    }
    comments: dict[int, list[str]] = {}
    bodies = IssueComment.objects.filter(issue_id__in=set(issues.values()))
    for issue_id, body in bodies.order_by("issue_id", "created_at", "pk").values_list(
        "issue_id", "body"
    ):
        comments.setdefault(issue_id, []).append(body)
    return [
        prompt.Thread(
            title=texts[issues[pk]]["title"],
            body=texts[issues[pk]]["body"],
            comments=comments.get(issues[pk], []),
        )
        for pk in item_ids
    ]


def invalid_rate(counts: dict[str, int]) -> float | None:
    """Invalid answers among the answers (labeled + invalid); None before any answer."""
    answered = counts.get("labeled", 0) + counts.get("invalid", 0)
    return counts.get("invalid", 0) / answered if answered else None


def run_items(round: Round, sample_size: int | None, seed: int | None) -> list[Item]:
    """The items a run asks about, in their order: `run_item_ids`' items with their issues."""
    ids = run_item_ids(round, sample_size, seed)
    items = Item.objects.filter(pk__in=ids).select_related("issue").order_by("position")
    return list(items)


@dataclass
class Tally:
    labeled: int = 0
    invalid: int = 0
    failed: int = 0
    skipped: int = 0

    def as_dict(self, items: int) -> dict[str, int]:
        return {"items": items, **self.__dict__}


def run_machine_run(*, run_id: int) -> MachineRun:
    """The job: ask for every unanswered (item, sample) of the run, storing each answer."""
    run = MachineRun.objects.select_related("rater__study__codebook_version", "round").get(
        pk=run_id
    )
    if not claim_job(MachineRun, run.pk):
        return run
    rater = run.rater
    schema = codebook_schema(rater.study.codebook_version)
    items = run_items(run.round, run.sample_size, run.seed)
    answered = set(rater.calls.exclude(outcome=Outcome.FAILED).values_list("item_id", "sample"))
    tally, total = Tally(), len(items) * rater.samples
    client = _client(rater)
    state = {"structured": True}
    with job_heartbeat(MachineRun, run.pk):
        try:
            for n, item in enumerate(items):
                for sample in range(rater.samples):
                    if (item.pk, sample) in answered:
                        tally.skipped += 1
                        continue
                    outcome = _ask(client, run, schema, item, sample, state)
                    setattr(tally, outcome, getattr(tally, outcome) + 1)
                done = (n + 1) * rater.samples
                report_progress(MachineRun, run.pk, progress=min(99, 100 * done // max(total, 1)))
        except MachineError as error:
            _finish(run, Status.FAILED, tally, len(items), str(error))
            return run
        except Exception as error:
            logger.exception("machine run %s failed", run.pk)
            _finish(run, Status.FAILED, tally, len(items), f"{type(error).__name__}: {error}")
            raise
    _finish(run, Status.SUCCEEDED, tally, len(items))
    return run


def _finish(run: MachineRun, status: str, tally: Tally, items: int, error: str = "") -> None:
    fields: dict[str, Any] = {"status": status, "counts": tally.as_dict(items), "error": error}
    if status == Status.SUCCEEDED:
        fields["progress"] = 100
    finish_job(MachineRun, run.pk, **fields)
    run.refresh_from_db()


def _client(rater: MachineRater) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=rater.base_url or settings.LLM_BASE_URL,
        api_key=settings.LLM_API_KEY or "not-set",
        timeout=settings.LLM_TIMEOUT_SECONDS,
        max_retries=settings.LLM_MAX_RETRIES,
    )


def _thread(item: Item) -> prompt.Thread:
    comments = IssueComment.objects.filter(issue_id=item.issue_id).order_by("created_at", "pk")
    return prompt.Thread(
        title=item.issue.title,
        body=item.issue.body,
        comments=list(comments.values_list("body", flat=True)),
    )


def _ask(
    client: openai.OpenAI,
    run: MachineRun,
    schema: CodebookSchema,
    item: Item,
    sample: int,
    state: dict[str, bool],
) -> str:
    """One call for one item and sample, stored; returns its outcome."""
    rater = run.rater
    sent, cut = prompt.messages(schema, _thread(item), rater.token_budget)
    parameters = {k: v for k, v in rater.parameters.items() if k in PARAMETERS}
    record: dict[str, Any] = {
        "run": run,
        "rater": rater,
        "item": item,
        "sample": sample,
        "parameters": parameters,
        "messages": sent,
        "prompt_sha256": prompt.prompt_hash(sent),
        "prompt_cut": cut,
    }
    started = time.perf_counter()
    try:
        completion = _complete(client, rater, schema, sent, parameters, state)
    except (openai.AuthenticationError, openai.PermissionDeniedError) as error:
        raise MachineError(
            f"the server refused the API key ({error.status_code}): check LLM_API_KEY"
        ) from error
    except openai.NotFoundError as error:
        raise MachineError(
            f"the server does not know model {rater.model!r} (404): {_message(error)}"
        ) from error
    except openai.APIError as error:
        MachineCall.objects.create(
            **record,
            outcome=Outcome.FAILED,
            structured=state["structured"],
            problem=f"{type(error).__name__}: {_message(error)} (after retries)",
            latency_ms=int(1000 * (time.perf_counter() - started)),
        )
        return Outcome.FAILED
    latency = int(1000 * (time.perf_counter() - started))
    content = completion.choices[0].message.content if completion.choices else None
    labels, problem = prompt.read_answer(schema, content)
    usage = completion.usage
    MachineCall.objects.create(
        **record,
        outcome=Outcome.INVALID if problem else Outcome.LABELED,
        labels=labels,
        problem=problem,
        structured=state["structured"],
        model_returned=completion.model or "",
        response=completion.model_dump(mode="json"),
        prompt_tokens=usage.prompt_tokens if usage else None,
        completion_tokens=usage.completion_tokens if usage else None,
        latency_ms=latency,
    )
    return Outcome.INVALID if problem else Outcome.LABELED


def _complete(
    client: openai.OpenAI,
    rater: MachineRater,
    schema: CodebookSchema,
    sent: list[dict[str, str]],
    parameters: dict[str, Any],
    state: dict[str, bool],
) -> Any:
    """The completion, with the answer's JSON schema while the server takes one; a server
    that refuses `response_format` (400) is asked without it for the rest of the run, and the
    answers are then parsed (their parse failures counted as invalid)."""
    options: dict[str, Any] = {"model": rater.model, "messages": sent, **parameters}
    create: Any = client.chat.completions.create  # options built at run time, not literals
    if state["structured"]:
        try:
            return create(**options, response_format=prompt.response_format(schema))
        except openai.BadRequestError as error:
            if "response_format" not in _message(error) and "json_schema" not in _message(error):
                raise
            state["structured"] = False
    return create(**options)


def _message(error: openai.APIError) -> str:
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
    return str(error.message if hasattr(error, "message") else error)
