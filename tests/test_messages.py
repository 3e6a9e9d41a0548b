"""Messages show numbers as a person writes them: never numpy's repr (`[np.float64(0.8), ...]`).

Two nets: every f-string in specmodel/ and pages/ is read for the pattern that printed numpy reprs
(formatting a list or tuple built from a numpy result), and bad inputs are sent through each way a
message reaches a person (the library, the CLI's stderr, the What-if page), with the messages checked."""

from __future__ import annotations

import ast

import pytest
from streamlit.testing.v1 import AppTest

from specmodel import Scenario, SpecModelError, cli, predict
from specmodel.model import acceptance
from specmodel.plan import workloads
from specmodel.runs import read_runs
from tests.conftest import ROOT
from tests.fuzz_targets import NUMPY_REPR

SOURCES = sorted((ROOT / "specmodel").glob("*.py")) + sorted((ROOT / "pages").glob("*.py")) + [ROOT / "app.py"]


def _numpy_call(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name) and node.func.value.id in {"np", "numpy"})


def _reprs_numpy(value: ast.AST) -> bool:
    """`{list(np.round(p, 4))}`, `{tuple(np.asarray(x))}` or `{np.round(x, 2)}` with no format spec:
    each prints numpy scalars with their repr inside the brackets."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in {"list", "tuple"}:
        return any(_numpy_call(a) for a in value.args)
    return _numpy_call(value) and not (isinstance(value.func, ast.Attribute) and value.func.attr in {"isfinite"})


def test_no_f_string_formats_numpy_values_into_a_list():
    found = []
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FormattedValue) and node.format_spec is None and _reprs_numpy(node.value):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node.value)}")
    assert found == []


def _message(call) -> str:
    with pytest.raises(SpecModelError) as info:
        call()
    return str(info.value)


@pytest.mark.parametrize("call, shown", [
    (lambda: acceptance.validate_survival([0.8, 0.9, 0.3]), "0.8, 0.9, 0.3"),
    (lambda: acceptance.validate_survival([1.25, 0.5]), "1.25, 0.5"),
    (lambda: predict(Scenario.from_names(survival=(0.5, 0.7), k=2)), "0.5, 0.7"),
], ids=["increasing profile", "profile above 1", "scenario with an increasing profile"])
def test_library_messages_show_plain_numbers(call, shown):
    text = _message(call)
    assert not NUMPY_REPR.search(text), text
    assert shown in text


@pytest.mark.parametrize("argv", [
    ["predict", "--survival", "0.5,0.8"],
    ["predict", "--survival", "1.5,0.2"],
    ["predict", "--alpha", "1.7"],
    ["predict", "--k", "-2"],
    ["predict", "--concurrency", "0"],
])
def test_cli_errors_show_plain_numbers(argv, capsys):
    try:
        code = cli.main(argv)
    except SystemExit as exc:  # argparse refuses a flag's value itself
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert err.strip() and not NUMPY_REPR.search(err), err


def test_files_with_bad_profiles_are_refused_in_plain_numbers(tmp_path):
    path = tmp_path / "workloads.csv"
    path.write_text("label,share,survival\nchat,1,\"0.4, 0.6\"\n")
    try:
        _, errors, warnings = workloads.read_workloads(str(path))
        texts = errors + warnings
    except SpecModelError as exc:
        texts = [str(exc)]
    assert any("0.4, 0.6" in t for t in texts), texts
    assert not any(NUMPY_REPR.search(t) for t in texts), texts
    table = read_runs([("runs.csv", b"workload,concurrency,k,survival\nchat,4,2,\"0.4, 0.6\"\n")])
    texts = [str(p) for p in table.problems]
    assert texts and not any(NUMPY_REPR.search(t) for t in texts), texts


def test_the_what_if_page_shows_a_bad_profile_in_plain_numbers():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.query_params["profile"] = "0.6, 0.9"
    at.run()
    assert not at.exception
    texts = [e.value for e in at.error]
    assert texts and "0.6, 0.9" in texts[0]
    assert not any(NUMPY_REPR.search(t) for t in texts), texts


def test_turn_it_off_above_batch_names_the_k_it_is_for():
    """The batch above which to turn speculation off belongs to the schedule's last k, not to the chosen k, whose
    crossover is far lower. Where that is the k advised (here k = 1), the advice names one k; where it is another
    (issue 40: "lower k to 2 (1.50x); turn it off above batch 46, where k = 3 stops paying"), the threshold is a
    sentence of its own that names the schedule's k: one k per sentence."""
    from specmodel import summarize

    s = Scenario.from_names(gpu="A100 80GB", alpha=0.5, k=4, concurrency=8)
    summary = summarize(s)
    schedule = summary.schedule
    assert schedule[-1][2] == 0 and schedule[-2][2] == 1 and summary.best_k == 1
    off_above = schedule[-1][0] - 1
    assert f"lower k to 1 (1.08x); turn it off above batch {off_above}" in summary.verdict.advice
    assert summary.crossover_concurrency < off_above  # the chosen k = 4 loses much earlier
    other = summarize(Scenario.from_names(gpu="L40S", alpha=0.5, k=3, concurrency=1))
    assert other.schedule == [[1, 6, 1], [7, 36, 2], [37, 512, 0]] and other.best_k == 1
    first, second = other.verdict.advice.split(". ")
    assert first == "lower k to 1 (1.24x)"
    assert second.startswith("Turn it off above batch 36, where the schedule's k = 2 stops paying")
