"""The pure pseudonymiser and the Hugging Face card header: names to codes in text, the
mention rule, and no Django imported."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from annotator.exports.columns import Column
from annotator.exports.huggingface import HfConfig, card_header, feature
from annotator.exports.pseudonyms import Pseudonymiser, mentions

CODES = {"stas00": "U0001", "Tjruwase": "U0002", "annotator-1": "A02", "a@b.org": "A02"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cc @stas00, thanks", "cc @U0001, thanks"),
        ("@TJRUWASE said so", "@U0002 said so"),  # logins compare case-insensitively
        ("@stranger-42 saw it", "@user saw it"),  # a login without a code names nobody
        ("see github.com/stas00/repo", "see github.com/U0001/repo"),
        ("stas00's patch", "U0001's patch"),
        ("mail a@b.org now", "mail A02 now"),
        ("asked annotator-1 and annotator-10", "asked A02 and annotator-10"),
        ("@torch.no_grad() and @x.y", "@torch.no_grad() and @x.y"),  # decorators, attributes
        ("write to me@example.org", "write to me@example.org"),  # an address is no mention
        ("stas000 and xstas00", "stas000 and xstas00"),  # only whole names
    ],
)
def test_text_names_become_codes(text: str, expected: str) -> None:
    assert Pseudonymiser(CODES).text(text) == expected


def test_values_are_rewritten_keys_and_all() -> None:
    value = {"raters": ["annotator-1", "stas00"], "annotator-1": {"n": 3, "by": "@stas00"}}
    assert Pseudonymiser(CODES).value(value) == {
        "raters": ["A02", "U0001"],
        "A02": {"n": 3, "by": "@U0001"},
    }


def test_mentions_are_found_as_github_writes_them() -> None:
    text = "@Stas00 @a-b-c @-bad @torch.cuda x@y.org (@ok)"
    assert mentions(text) == {"stas00", "a-b-c", "ok"}


def test_the_card_header_declares_class_labels_and_configs() -> None:
    columns = [Column("symptom", "str"), Column("fix", "list"), Column("at", "timestamp")]
    config = HfConfig("default", "data/final.parquet", columns, {"symptom": ["a", "b"]}, 3)
    header = yaml.safe_load(card_header(pretty_name="S", license="cc0-1.0", configs=[config])[4:-4])
    assert header["license"] == "cc0-1.0"
    assert header["configs"] == [
        {
            "config_name": "default",
            "data_files": [{"split": "train", "path": "data/final.parquet"}],
            "default": True,
        }
    ]
    features = header["dataset_info"][0]["features"]
    assert features[0] == {
        "name": "symptom",
        "dtype": {"class_label": {"names": {"0": "a", "1": "b"}}},
    }
    assert features[1] == {"name": "fix", "sequence": "string"}
    assert features[2] == {"name": "at", "dtype": "timestamp[us, tz=UTC]"}
    assert feature(Column("fix", "list"), ["x"]) == {
        "name": "fix",
        "sequence": {"class_label": {"names": {"0": "x"}}},
    }


def test_the_pure_cores_import_no_django() -> None:
    code = (
        "import sys, annotator.exports.huggingface, annotator.exports.pseudonyms\n"
        "assert not [m for m in sys.modules if m.split('.')[0] == 'django']\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
