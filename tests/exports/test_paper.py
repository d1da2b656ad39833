# ruff: noqa: RUF001 -- the paragraph is written in its own notation (Greek letters, dashes).
"""Paper outputs (pure): tables as CSV and booktabs LaTeX, charts as SVG and PNG, the methods
paragraph in Markdown and LaTeX, the analysis at a level."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pandas as pd
import pytest
from PIL import Image

from annotator.exports.analysis import (
    AnalysisParameterError,
    Dataset,
    FacetScheme,
    Node,
    Record,
    Scheme,
    analysis_tables,
    parse_levels,
    tree_order,
)
from annotator.exports.flow import flow_layout, flow_svg
from annotator.exports.methods import (
    AgreementFacts,
    FacetAgreement,
    FacetFacts,
    MethodsFacts,
    RoundFacts,
    SelectionFacts,
    agreement_facts,
    methods_latex,
    methods_markdown,
)
from annotator.exports.paper import (
    Bar,
    bar_png,
    bar_svg,
    csv_bytes,
    flow_png,
    latex_bytes,
    table_frame,
    table_indent,
)

ROOT = Path(__file__).resolve().parents[2]
SYMPTOM = tree_order(
    [
        Node("failure", "Program failure", ("failure",)),
        Node("slow", "Slow", ("slow",)),
        Node("hang", "Hang", ("failure", "hang")),
        Node("oom", "Out of memory", ("failure", "oom")),
    ]
)
SCHEME = Scheme(
    (
        FacetScheme("symptom", "Symptom", False, SYMPTOM),
        FacetScheme("root-cause", "Root cause", False, (Node("cfg", "Config & co_1", ("cfg",)),)),
        FacetScheme(
            "fix-pattern",
            "Fix pattern",
            True,
            (Node("ver", "Version", ("ver",)), Node("set", "Setting", ("set",))),
        ),
    )
)


def dataset() -> Dataset:
    labels = [
        {"symptom": ("hang",), "root-cause": ("cfg",), "fix-pattern": ("ver", "set")},
        {"symptom": ("oom",), "root-cause": ("cfg",), "fix-pattern": ("ver",)},
        {"symptom": ("slow",)},
    ]
    records = [Record(i, "o/r", 1, "unanimous", lab) for i, lab in enumerate(labels)]
    return Dataset(SCHEME, records)


def test_tree_order_puts_children_under_their_parent() -> None:
    assert [n.code for n in SYMPTOM] == ["failure", "hang", "oom", "slow"]


def test_levels_are_checked_and_named_in_the_error() -> None:
    assert parse_levels({}, SCHEME) == {"symptom": None}
    assert parse_levels({"level": "1"}, SCHEME) == {"symptom": 1}
    assert parse_levels({"level": "1", "level-symptom": "leaf"}, SCHEME) == {"symptom": None}
    with pytest.raises(AnalysisParameterError, match=r"^level: '3' is not 'leaf' or a level"):
        parse_levels({"level": "3"}, SCHEME)
    with pytest.raises(AnalysisParameterError) as error:
        parse_levels({"level-symptom": "x"}, SCHEME)
    assert error.value.parameter == "level-symptom"


def test_share_table_lists_groups_and_leaves_with_a_level_column() -> None:
    tables = {t.id: t for t in analysis_tables(dataset())}
    share = tables["share-symptom"]
    assert share.header[:5] == ["level", "category", "name", "issues", "%"]
    assert [[c.value for c in row[:5]] for row in share.rows] == [
        [1, "failure", "Program failure", 2, 66.7],
        [2, "hang", "Hang", 1, 33.3],
        [2, "oom", "Out of memory", 1, 33.3],
        [1, "slow", "Slow", 1, 33.3],
        ["", "all", "", 3, 100.0],
    ]
    fixes = tables["cross-root-cause-fix-pattern"]
    assert fixes.header == ["root-cause", "ver", "set"]
    assert [c.value for c in fixes.rows[0]] == ["cfg", 2, 1]
    leaves = tables["cross-symptom-root-cause"]
    assert [[c.value for c in row] for row in leaves.rows] == [["hang", 1], ["oom", 1], ["slow", 0]]
    top = {t.id: t for t in analysis_tables(dataset(), 1)}["cross-symptom-root-cause"]
    assert [[c.value for c in row] for row in top.rows] == [["failure", 2], ["slow", 0]]


def test_latex_is_booktabs_with_escaped_text_and_indented_names() -> None:
    share = {t.id: t for t in analysis_tables(dataset())}["share-symptom"]
    tex = latex_bytes(
        table_frame(share),
        caption="Share of each symptom, 100% of 3",
        label="tab:share_symptom",
        indent=table_indent(share),
        indent_column="name",
    ).decode()
    lines = tex.splitlines()
    assert lines.index(r"\toprule") < lines.index(r"\midrule") < lines.index(r"\bottomrule")
    assert r"\caption{Share of each symptom, 100\% of 3}" in tex
    assert r"\label{tab:share-symptom}" in tex and r"\resizebox" not in tex
    assert r"level & category & name & issues & \% & o/r & o/r \% \\" in tex
    assert r"2 & hang & \quad Hang & 1 & 33.3 & 1 & 33.3 \\" in tex
    cause = {t.id: t for t in analysis_tables(dataset())}["share-root-cause"]
    assert r"Config \& co\_1" in latex_bytes(table_frame(cause), caption="c", label="l").decode()


def test_a_wide_latex_table_is_scaled_to_the_line_width() -> None:
    frame = pd.DataFrame([[f"c{i}" for i in range(12)]], columns=[f"h{i}" for i in range(12)])
    lines = latex_bytes(frame, caption="Wide", label="tab:wide").decode().splitlines()
    start = lines.index(r"\resizebox{\linewidth}{!}{%")
    assert lines[start + 1].startswith(r"\begin{tabular}{llllllllllll}")
    assert lines[lines.index(r"\end{tabular}") + 1] == "}"


def test_csv_reads_back_to_the_same_table() -> None:
    share = {t.id: t for t in analysis_tables(dataset())}["share-symptom"]
    back = pd.read_csv(io.BytesIO(csv_bytes(table_frame(share))), keep_default_na=False)
    assert list(back.columns) == share.header
    assert back["issues"].tolist() == [2, 1, 1, 1, 3]


def test_bar_chart_as_svg_and_png() -> None:
    bars = [Bar("Hang & co", 66.7), Bar("Slow", 33.3)]
    svg = ElementTree.fromstring(bar_svg("Share <of> symptoms", bars))
    ns = "{http://www.w3.org/2000/svg}"
    texts = [t.text for t in svg.iter(f"{ns}text")]
    assert texts == ["Share <of> symptoms", "Hang & co", "66.7%", "Slow", "33.3%"]
    widths = [float(r.get("width")) for r in svg.iter(f"{ns}rect")]
    assert widths[0] == pytest.approx(2 * widths[1], rel=0.01)
    image = Image.open(io.BytesIO(bar_png("Share", bars)))
    assert image.format == "PNG" and image.size == (
        2 * int(svg.get("width")),
        2 * int(svg.get("height")),
    )
    assert image.convert("L").getextrema()[0] < 100  # dark text and bars were drawn


def test_flow_chart_png_has_the_svg_layout_at_twice_the_size() -> None:
    links = [
        (0, "hang", "cfg", 1),
        (0, "oom", "cfg", 1),
        (1, "cfg", "ver", 2),
        (1, "cfg", "set", 1),
    ]
    columns = ["symptom", "root-cause", "fix-pattern"]
    layout = flow_layout(3, links)
    svg = flow_svg(columns, links)
    assert svg.count("<rect") == len(layout.nodes) == 5 and "<a " not in svg
    image = Image.open(io.BytesIO(flow_png(columns, links)))
    assert image.size == (2 * layout.width, 2 * layout.height)
    node = layout.nodes[0]
    assert image.getpixel((int(2 * node.x + 4), int(2 * (node.y + node.height / 2)))) == (
        59,
        74,
        90,
    )


FACTS = MethodsFacts(
    study="Bugs in DDL",
    codebook="Distributed deep-learning bugs",
    version=2,
    facets=[FacetFacts("Symptom", False, 37, 34, 2), FacetFacts("Fix pattern", True, 6, 6, 1)],
    k=3,
    annotators=3,
    members=4,
    selections=[
        SelectionFacts(
            1,
            {"repository": "hpcaitech/ColossalAI", "kind": "issue"},
            900,
            849,
            7,
            True,
            849,
            849,
            {"hpcaitech/ColossalAI": {"matched": 900, "sampled": 849}},
        ),
    ],
    rounds=[RoundFacts(1, "calibration", 49), RoundFacts(2, "main", 800)],
    agreement=[
        AgreementFacts(
            1, [FacetAgreement("Symptom", "krippendorff_alpha", 0.8123, (0.75, 0.87), 49)]
        ),
        AgreementFacts(
            2,
            [FacetAgreement("Fix pattern", "krippendorff_alpha_masi", None, None, 0)],
            "jackknife: SE² = (n − 1)/n · Σ (θ₍ᵤ₎ − θ̄)², 95% interval",
        ),
    ],
    items=849,
    decisions={"unanimous": 500, "majority": 200, "adjudicated": 100},
    reasons={"guideline gap": 60, "annotator slip": 40},
)


def test_methods_paragraph_reads_the_facts() -> None:
    text = methods_markdown(FACTS)
    assert (
        "For round 1 we selected the imported issues of the repository hpcaitech/ColossalAI, excluding pull requests: 900 issues matched; we drew a sample stratified by repository (proportional allocation) of 849 issues (seed 7), keeping 849."
        in text
    )
    assert (
        "Labelling ran in 2 rounds: round 1 (calibration, 49 items) and round 2 (main, 800 items)."
        in text
    )
    assert "k = 3 annotators" in text and "3 of the study's 4 annotators submitted labels" in text
    assert "symptom (34 leaf categories under 3 groups)" in text
    assert (
        "In round 1, agreement (Krippendorff's α) was symptom α = 0.812 (95% CI 0.750–0.870, 49 items)."
        in text
    )
    assert (
        "In round 2, agreement (Krippendorff's α with the MASI distance) was fix pattern: undefined."
        in text
    )
    assert (
        "Of the 849 items, 800 have final labels: 500 unanimous, 200 by majority, and 100 adjudicated (reasons: 60 guideline gap and 40 annotator slip); 49 are undecided."
        in text
    )
    latex = methods_latex(FACTS)
    assert r"symptom $\alpha$ = 0.812 (95\% CI 0.750--0.870, 49 items)" in latex
    assert (
        r"SE$^2$ = (n $-$ 1)/n $\cdot$ $\Sigma$ ($\theta$$_{(u)}$ $-$ $\bar{\theta}$)$^2$" in latex
    )
    assert "``Distributed deep-learning bugs''" in latex and "“" not in latex


def test_agreement_facts_read_conventions_when_stored_and_fall_back() -> None:
    facet = {
        "key": "symptom",
        "name": "Symptom",
        "headline": "krippendorff_alpha",
        "coefficients": {
            "krippendorff_alpha": {
                "value": 0.7,
                "ci": [0.6, 0.8],
                "se_method": "jackknife: old words",
            }
        },
        "design": {"pairable_units": 10},
    }
    stored = agreement_facts({"facets": [facet], "conventions": {"interval": "new words"}}, 1)
    assert stored.interval == "new words" and stored.facets[0].ci == (0.6, 0.8)
    assert agreement_facts({"facets": [facet]}, None).interval == "jackknife: old words"


def test_importing_the_paper_cores_loads_no_django() -> None:
    code = (
        "import sys\n"
        "import annotator.exports.analysis, annotator.exports.paper, annotator.exports.methods\n"
        "import annotator.exports.flow\n"
        "loaded = sorted(m for m in sys.modules if m == 'django' or m.startswith('django.'))\n"
        "assert not loaded, loaded\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
