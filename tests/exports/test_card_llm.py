"""The dataset card's LLM use section as written from plain data (card_llm.py, pure)."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime

from annotator.exports.card_llm import LlmUse, MachineRaterUse, llm_use_section

RATER = MachineRaterUse(
    name="llm",
    model="qwen2.5-7b-instruct",
    models_returned=["qwen2.5-7b-instruct-q4"],
    server="http://127.0.0.1:8080/v1",
    parameters={"temperature": 0, "seed": 7},
    samples=2,
    prompt_version="v1",
    token_budget=6000,
    cut_rule="title whole, body up to half",
    structured="JSON schema (response_format)",
    first_call=datetime(2026, 12, 1, 9, 30, tzinfo=UTC),
    last_call=datetime(2026, 12, 1, 10, 5, tzinfo=UTC),
    labeled=0,
    invalid=0,
    failed=3,
    prompt_tokens=0,
    completion_tokens=0,
)
UNDEFINED = {"value": None, "ci": None, "undefined_reason": "no variation"}


def test_no_model_no_section() -> None:
    assert llm_use_section(None) == ""
    assert llm_use_section(LlmUse(raters=[], run=None, partitions=[])) == ""


def test_the_section_names_model_dates_and_says_what_is_undefined() -> None:
    facet = {
        "name": "Fix",
        "human_human": UNDEFINED,
        "pooled": {"value": 0.5, "ci": [0.25, 0.75]},
        "raters": [
            {
                "rater": "llm",
                "human_machine": UNDEFINED,
                "machine_machine": None,
                "substitution": {"verdict": "Fix: the test cannot be read."},
            }
        ],
    }
    text = llm_use_section(LlmUse(raters=[RATER], run="run 4 of round 1", partitions=[facet]))
    assert "- Model: qwen2.5-7b-instruct; version returned by the server: qwen2.5-7b-" in text
    assert "- Dates: 2026-12-01 09:30 UTC to 2026-12-01 10:05 UTC" in text
    assert "- Parameters: seed = 7, temperature = 0; answers per item: 2" in text
    assert "invalid-answer rate —" in text  # no answer yet: no rate, not 0
    assert "| Fix | llm | undefined | undefined | — | 0.500 [0.250, 0.750] |" in text
    assert "- Fix: the test cannot be read." in text


def test_the_card_section_imports_no_django() -> None:
    code = "import sys, annotator.exports.card_llm; print('django' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
