"""Issue 23's incident read as a new user writes it: Llama 3.1 8B + Llama 3.2 1B on one 48 GB GPU, k = 4;
one extraction request 48 -> 88 tok/s, chat at temperature 0.8 47 tok/s, ~32 concurrent mixed requests
15% slower. Column names as people spell them; banners counted from the verdicts the rows show."""

from specmodel.runs import read_runs
from specmodel.runs.headlines import model_headline
from specmodel.runs.review import review
from tests.conftest import FIXTURES

INCIDENT = FIXTURES / "incident_l40s.csv"


def _read(text: str):
    return read_runs([("mine.csv", text)])


def test_the_incident_csv_with_tok_s_spec_loads_every_row():
    table = read_runs([INCIDENT])
    assert not table.errors, [str(p) for p in table.errors]
    assert table.rows["workload"].tolist() == ["extraction", "chat t=0.8", "mixed"]
    assert table.rows["measured_speedup"].round(2).tolist() == [1.83, 0.98, 0.85]
    assert not [p for p in table.problems if "not a column" in p.message]


def test_throughput_columns_in_either_order_and_any_spelling():
    for base, spec in [("tok_s_baseline", "tok_s_spec"), ("baseline_tokens_per_s", "speculative_tokens_per_s"),
                       ("plain_throughput", "sd_throughput"), ("throughput_nospec", "throughput_spec"),
                       ("Base tok/s", "Spec tok/s"), ("no_spec_tok_s", "tokens_per_s_sd")]:
        table = _read(f"workload,concurrency,k,{base},{spec}\nchat,1,4,50,80\n")
        assert not table.errors, (base, spec, [str(p) for p in table.errors])
        assert table.rows["measured_speedup"].round(2).tolist() == [1.6], (base, spec)


def test_a_typo_is_read_by_its_close_name_and_the_message_says_did_you_mean():
    table = _read("workload,concurency,k,baseline_tok_s,spec_toks\nchat,8,4,50,80\nchat,32,4,50,45\n")
    assert table.rows["concurrency"].tolist() == [8, 32]  # no row dropped
    assert table.rows["measured_speedup"].round(2).tolist() == [1.6, 0.9]
    messages = [p.message for p in table.problems]
    assert any("did you mean `concurrency`?" in m for m in messages), messages
    assert any("did you mean `spec_tok_s`?" in m for m in messages), messages


def test_a_close_name_never_replaces_a_column_the_file_names_exactly():
    table = _read("workload,concurrency,k,spec_tok_z,spec_tok_s,baseline_tok_s\nchat,1,4,1,80,50\n")
    assert table.rows["measured_speedup"].round(2).tolist() == [1.6]
    assert any("did you mean `spec_tok_s`? ignored" in p.message for p in table.problems)


def test_an_unrelated_column_is_not_guessed():
    table = _read("workload,concurrency,k,baseline_tok_s,spec_tok_s,ttft_ms\nchat,1,4,50,80,30\n")
    [warning] = [p for p in table.problems if p.column == "ttft_ms"]
    assert "did you mean" not in warning.message and "ignored" in warning.message


def test_with_throughputs_and_no_alpha_the_banner_says_measured_as_the_rows_do():
    result = review(read_runs([INCIDENT]).rows)
    assert result.table["verdict_basis"].tolist() == ["measured speedup"] * 3
    headline = model_headline(result.summary, result.table)
    # the rows' verdicts are measured; the model is compared with them on a published (assumed) acceptance
    assert "(predicted)" not in headline and "takes its verdict from it" in headline


def _report_text(html_text: str) -> str:
    import re

    body = html_text.split("plotly.js", 1)[0] + html_text.rsplit("Runs as read", 1)[-1]
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body.replace("\u00ad", "").replace("\u200b", "")))


def test_the_html_report_names_what_it_predicted_on_and_its_columns_say_what_they_hold(tmp_path, capsys):
    from specmodel import cli

    out = tmp_path / "r.html"
    assert cli.main(["runs", str(INCIDENT), "--html", str(out), "--engine", "vllm"]) == 0
    text = _report_text(out.read_text())
    for part in ("target Llama 3.1 8B", "draft Llama 3.2 1B", "GPU L40S", "TP 1", "engine vllm",
                 "calibration uncalibrated", "specmodel 0.1.0"):
        assert part in text, part
    assert " margin " not in text  # no column called plain "margin"
    assert "measured speedup − 1" in text and "E ÷ break-even E − 1" in text
    assert "extraction 1 4 pays off measured speedup 1.83 +83%" in text
    assert "mixed 32 4 loses measured speedup 0.85 -15%" in text


def test_a_calibrated_report_says_so_with_every_changed_parameter(tmp_path, capsys):
    from specmodel import cli

    out = tmp_path / "r.html"
    assert cli.main(["runs", str(INCIDENT), "--html", str(out), "--overhead-scale", "0.5"]) == 0
    assert "calibration calibrated: overhead_scale 0.5× (range 0.3–3×)" in _report_text(out.read_text())


def test_the_runs_table_cells_never_show_none():
    from specmodel.show import runs_view

    rows = read_runs([INCIDENT]).rows
    cells, columns = runs_view.as_cells(rows, runs_view.RUNS_COLUMNS)
    assert cells["alpha"].tolist() == ["", "", ""] and cells["measured_speedup"].tolist() == ["1.83", "0.98", "0.85"]
    assert not cells.isin(["None", "nan", "NaN"]).any().any()
    assert all(fmt is None for _head, fmt, *_ in columns.values())  # formats applied in the text already
