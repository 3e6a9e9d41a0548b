"""The Past runs page in Streamlit's AppTest: upload files, read the flags, calibrate, export."""

import json

from streamlit.testing.v1 import AppTest

from specmodel.model.roofline import Efficiency
from specmodel.show.runs_view import SIDEBAR_FOR_UNKNOWN
from tests.conftest import FIXTURES, ROOT

APP = str(ROOT / "app.py")
TWO_WORKLOADS = (ROOT / "sample_runs" / "multi_workload.csv").read_bytes()


def open_page(query: dict | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=90)
    for key, value in (query or {}).items():
        at.query_params[key] = value
    at.run()
    return at.switch_page("pages/past-runs.py").run()


# st.dataframe without selection registers no key in AppTest: tell the two tables apart by a column.
MARKER = {"runs_table": "remarks", "break_even_table": "verdict_basis"}


def table_by_key(at: AppTest, key: str):
    return next(d.value for d in at.dataframe if MARKER[key] in d.value.columns)


def chart_titles(at: AppTest) -> list[str]:
    return [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]


def test_without_files_the_page_asks_for_them():
    at = open_page()
    assert not at.exception
    assert "Upload one or more run files" in at.info[0].value


def test_uploading_a_csv_shows_the_break_even_table_with_flags_and_charts():
    at = open_page()
    at.file_uploader(key="run_files").set_value(("runs.csv", TWO_WORKLOADS, "text/csv")).run()
    assert not at.exception
    table = table_by_key(at, "break_even_table")
    verdicts = table.groupby("workload")["verdict"].agg(set).to_dict()
    assert verdicts == {"code completion": {"clears"}, "open-ended chat": {"fails"}}
    assert table["advice"].str.contains("lower k to 1").any()
    flags = " ".join(m.value for m in at.markdown)
    assert "code completion pays off at concurrency 1, 8, 32, 64" in flags
    assert "open-ended chat loses at concurrency 1, 8, 32, 64" in flags
    assert chart_titles(at) == ["Predicted vs measured speedup", "Tokens per step: measured vs break-even",
                                "Speedup against batch: each setup's step fit (line, 80% band) and its runs"]
    assert [m.value for m in at.metric][:3] == ["8", at.metric[1].value, "100%"]
    assert at.metric[2].help.startswith("8 of 8 runs with a measured and a predicted speedup")
    assert at.get("download_button")  # CSV and HTML exports offered


def test_bad_rows_are_listed_beside_the_table_and_good_rows_load():
    bad_csv = b"workload,concurrency,k,alpha,speedup\ngood,1,4,0.7,1.5\nbad,1,4,lots,1.1\nworse,1,4,0.5,-1\n"
    at = open_page()
    at.file_uploader(key="run_files").set_value([("partly_bad.csv", bad_csv, "text/csv"),
                                                 ("garbage.json", bytes(range(256)), "application/json")]).run()
    assert not at.exception
    errors = [e.value for e in at.error]
    assert "partly_bad.csv, row 3, column 'alpha': 'lots' is not a number; expected the per-token acceptance α, " \
           "in [0, 1]; row not loaded" in errors
    assert any(e.startswith("partly_bad.csv, row 4, column 'speedup'") for e in errors)
    assert any(e.startswith("garbage.json: this is not a text file") for e in errors)
    assert list(table_by_key(at, "runs_table")["workload"]) == ["good"]


def test_nothing_readable_says_so_without_a_traceback():
    at = open_page()
    at.file_uploader(key="run_files").set_value(("empty.csv", b"", "text/csv")).run()
    assert not at.exception
    errors = [e.value for e in at.error]
    assert any("No run could be read" in e for e in errors)
    assert any(e.startswith("empty.csv: the file is empty") for e in errors)


def test_sample_from_the_url_then_calibrate_applies_parameters_session_wide():
    at = open_page({"sample": "Seed runs"})
    assert not at.exception
    assert at.pills(key="sample").value == "Seed runs"
    assert len(table_by_key(at, "runs_table")) == 3
    mape_before = at.metric[1].value
    at.button(key="calibrate").click().run()
    assert not at.exception
    fitted = at.session_state["calibration"]
    assert fitted != Efficiency()  # the fit moved something, and kept compute where GEMMs really are
    assert 0.45 <= fitted.eta_flops <= 0.8
    assert any("before →" in s.value for s in at.success)
    assert at.metric[1].value != mape_before
    # (AppTest's switch_page runs the page without app.py's sidebar; the browser test sees the sidebar)
    assert "cal" in at.query_params
    mixed = table_by_key(at, "break_even_table").set_index("workload").loc["mixed extraction+chat"]
    assert mixed["predicted_speedup"] < 1


def test_guidellm_sample_uses_the_k_box():
    at = open_page({"sample": "guidellm sweep"})
    assert len(table_by_key(at, "runs_table")) == 3
    assert any("k = 4 from the settings" in w.value for w in at.warning)
    at.number_input(key="runs_k").set_value(3).run()
    assert any("k = 3 from the settings" in w.value for w in at.warning)


def test_workload_names_are_shown_as_text_not_markdown():
    at = open_page()
    csv = b"workload,concurrency,k,alpha,speedup\n*loud* [link](http://x),1,4,0.8,1.6\n"
    at.file_uploader(key="run_files").set_value(("w.csv", csv, "text/csv")).run()
    assert not at.exception
    flags = " ".join(m.value for m in at.markdown)
    # A bare URL is broken too (a zero-width joiner): Streamlit's markdown would turn http://x into a link.
    assert "\\*loud\\* \\[link\\](http:\u200d//x) pays off at concurrency 1" in flags


def test_a_link_carries_all_five_calibrated_parameters_and_old_four_value_links_still_work():
    at = open_page({"cal": "0.7,0.5,1.5,0.5,0.1", "sample": "Seed runs"})
    assert not at.exception
    eff = at.session_state["calibration"]
    assert (eff.eta_bw, eff.eta_flops, eff.t_fixed_ms, eff.t_spec_overhead_ms, eff.small_model_exponent) == \
        (0.7, 0.5, 1.5, 0.5, 0.1)
    at = open_page({"cal": "0.7,0.5,1.5,0.5"})
    assert at.session_state["calibration"].small_model_exponent == 0.0  # the default
    at = open_page({"cal": "0.7,0.5,1.5,0.5,0.1,1.4"})  # six values: engine overheads scaled ×1.4
    assert at.session_state["calibration"].overhead_scale == 1.4
    at = open_page({"cal": "0.7,0.5,1.5,0.5,7"})
    assert "calibration" not in at.session_state and "cal" not in at.query_params


MEASURED_VS_MODEL = (FIXTURES / "measured_vs_model.csv").read_bytes()  # MT-Bench at 24: measured 0.71x


def test_a_measured_loss_the_model_calls_a_gain_is_a_loss_with_the_disagreement_shown():
    at = open_page()
    at.file_uploader(key="run_files").set_value(("m.csv", MEASURED_VS_MODEL, "text/csv")).run()
    assert not at.exception
    headline = [w.value for w in at.warning if "verdict differs" in w.value]
    assert headline and headline[0].startswith("The model's verdict differs from the measured one on 3 of 5 runs")
    assert "MT-Bench at concurrency 24: model: pays off" in headline[0] and "measured 0.71×" in headline[0]
    table = table_by_key(at, "break_even_table")
    row = table[(table["workload"] == "MT-Bench") & (table["concurrency"] == 24)].iloc[0]
    assert (row["verdict"], row["predicted_verdict"], row["model_agrees"]) == ("fails", "clears", False)
    assert row["disagreement"].startswith("model: pays off (") and row["disagreement"].endswith("measured 0.71×")
    flags = " ".join(m.value for m in at.markdown)
    assert "MT-Bench loses at concurrency 24, 64 (measured) — the model said pays off at 24, 64" in flags
    # its measured E (2.40) clears the model's break-even (2.12) by 13%, inside the model's band: uncertain
    assert "long context is uncertain at concurrency 32 (predicted)" in flags
    assert at.metric[2].value == "40%" and at.metric[2].help.startswith("2 of 5 runs")


def test_problems_are_one_collapsed_block_grouped_by_kind_errors_first():
    rows = "".join(f"w{i},{i + 1},4,0.7,1.5,1x Z9000\n" for i in range(41)) + "bad,1,4,lots,1.1,L40S\n"
    at = open_page()
    at.file_uploader(key="run_files").set_value(
        ("many.csv", ("workload,concurrency,k,alpha,speedup,gpu\n" + rows).encode(), "text/csv")).run()
    assert not at.exception
    block = next(e for e in at.expander if e.label.startswith("Problems in the input"))
    # the sidebar's GPU is for runs naming none: 'Z9000' is judged on its measurement, with no prediction
    assert block.label == "Problems in the input: 1 row not loaded, 41 warnings (1 kind)"
    [line] = [w.value for w in block.warning]
    assert line.startswith("41 rows: no prediction (judged on its measurement): GPU '1x Z9000' is no preset")
    assert (f"choose its GPU in the sidebar (a preset, or Custom GPU by its numbers) and tick '{SIDEBAR_FOR_UNKNOWN}' "
            "to predict it on one") in line
    assert "--gpu" not in line
    # ticked, the sidebar's GPU stands for it, as `runs --gpu L40S` does
    at.checkbox(key="runs_as_sidebar").check().run()
    assert not at.exception
    assert len(at.expander) >= 1
    block = next(e for e in at.expander if e.label.startswith("Problems in the input"))
    assert block.label == ("Problems in the input: 1 row not loaded, 41 warnings (1 kind), 41 rows predicted on a "
                           "fallback preset")
    assert [e.value for e in block.error] == ["many.csv, row 43, column 'alpha': 'lots' is not a number; expected "
                                              "the per-token acceptance α, in [0, 1]; row not loaded"]
    warnings = [w.value for w in block.warning]
    assert warnings[0].startswith("41 of 41 rows predicted on a fallback preset")
    assert warnings[1].startswith("41 rows: GPU '1x Z9000' is not a preset") and \
        warnings[1].endswith("many.csv, rows 2, 3, 4, 5, 6, 7, 8, 9, …")
    # the page names its own fallback: the sidebar (the command line names its flags instead)
    assert "fallback preset (the sidebar choice) because" in warnings[0]
    assert "predicted with L40S (the sidebar choice)" in warnings[1] and "--gpu" not in " ".join(warnings)


def test_uploaded_runs_survive_a_visit_to_another_page_until_cleared():
    at = open_page()
    at.file_uploader(key="run_files").set_value(("m.csv", MEASURED_VS_MODEL, "text/csv")).run()
    at.switch_page("pages/whatif.py").run()
    assert not at.exception
    at.switch_page("pages/past-runs.py").run()
    assert not at.exception
    assert len(table_by_key(at, "runs_table")) == 6
    assert any("Using the files uploaded earlier in this session: m.csv" in c.value for c in at.caption)
    at.run()  # a rerun on the page keeps them too
    assert len(table_by_key(at, "runs_table")) == 6
    at.button(key="runs_clear_uploads").click().run()
    assert "Upload one or more run files" in at.info[0].value


def test_a_run_without_k_keeps_its_k_spread_until_the_k_box_is_set():
    """As the command line does without --k: the empty k box is no statement about the run, so an
    EAGLE-3 run on vLLM without k is predicted at k = 3 with the band over k = 2..5; setting the box
    predicts it at the box's k."""
    head = "workload,hardware,target_model,draft_model_or_method,k,concurrency_or_batch,speedup,notes\n"
    row = "chat,1x H100 80GB,Llama-3.1-8B-Instruct,EAGLE-3,,1,1.9,vLLM 0.10.1\n"
    at = open_page()
    at.file_uploader(key="run_files").set_value(("nok.csv", (head + row).encode(), "text/csv")).run()
    assert not at.exception
    run = table_by_key(at, "runs_table").iloc[0]
    assert int(run["k"]) == 3 and "the band spans k = 2-5" in run["remarks"]
    at.number_input(key="runs_k").set_value(5).run()
    run = table_by_key(at, "runs_table").iloc[0]
    assert int(run["k"]) == 5 and "k = 5 from the settings" in run["remarks"]


NEAR_AND_CLEAR = (b"workload,gpu,target_model,draft_model,method,k,concurrency,alpha\n"
                  b"near,L40S,Llama 3.1 8B,Llama 3.2 1B,draft_model,4,40,0.7\n"
                  b"clear,L40S,Llama 3.1 8B,Llama 3.2 1B,draft_model,4,1,0.7\n")


def test_a_predicted_verdict_whose_band_straddles_one_reads_uncertain_as_on_what_if():
    """Two runs with an acceptance and no measured speedup: at batch 1 the model predicts 1.55x (band
    1.15-2.32x), at batch 40 1.07x (band 0.81-1.62x), which What-if calls uncertain. The page's table,
    its lines and its count say so for the second; the CSV export keeps the model's code."""
    at = open_page()
    at.file_uploader(key="run_files").set_value(("near.csv", NEAR_AND_CLEAR, "text/csv")).run()
    assert not at.exception
    table = table_by_key(at, "break_even_table").set_index("workload")
    assert table.loc["near", "verdict"] == "uncertain" and table.loc["clear", "verdict"] == "clears"
    assert table.loc["near", "predicted_verdict"] == "clears"  # the model's lean, as `runs --json` gives it
    flags = " ".join(m.value for m in at.markdown)
    assert "near is uncertain at concurrency 40 (predicted)" in flags and "clear pays off at concurrency 1" in flags
    metric = next(m for m in at.metric if m.label.startswith("Pay off"))
    assert metric.label == "Pay off · borderline · lose" and metric.value == "1 · 0 · 0" and metric.delta == "1 uncertain"
    assert "1 predicted are uncertain" in metric.help


def test_the_step_fit_of_the_real_engine_runs_checks_itself_on_the_run_it_did_not_see():
    """The recorded vLLM CPU lab uploaded together (tests/fixtures/real_engine/): fitted on concurrency 1 and 4,
    the n-gram server (measured 0.95×, 0.24×, 0.15×) loses at every batch with its band; the chart draws the
    run at 16 as predicted, not fitted; a calibration file with the step fits is offered."""
    at = open_page()
    lab = sorted((FIXTURES / "real_engine").glob("*.json"))
    at.file_uploader(key="run_files").set_value([(p.name, p.read_bytes(), "application/json") for p in lab]).run()
    at.number_input(key="fit_up_to").set_value(4).run()
    assert not at.exception
    lines = " ".join(m.value for m in at.markdown)
    assert "N-gram (prompt lookup)**: fitted on concurrency 1, 4" in lines
    ngram = lines.split("N-gram (prompt lookup)**: fitted on concurrency 1, 4")[1].split("**")[0]
    assert "speculation loses" in ngram and "stops paying above" not in ngram
    fig = next(json.loads(c.proto.spec) for c in at.get("plotly_chart")
               if json.loads(c.proto.spec)["layout"]["title"]["text"].startswith("Speedup against batch"))
    unseen = [t for t in fig["data"] if t.get("name", "").endswith("measured, predicted, not fitted")]
    assert sorted(x for t in unseen for x in t["x"]) == [16.0, 16.0]
    assert any("step fits" in b.proto.label for b in at.get("download_button"))


def test_a_fitted_run_off_the_drawn_line_is_explained_by_its_own_tokens_per_step():
    """Lab pass 6 (temperature 0.3): the draft-model server's E was 1.50 at concurrency 1 and 1.21 at 4. The
    fit's line is drawn at their mean (E 1.36), so the run at 1 (0.78×) sits above the line (0.70× there): the
    section says why, once, under that setup; the n-gram server's runs (E 1.10 and 1.05) sit on theirs and get
    no such line."""
    at = open_page()
    lab = sorted((FIXTURES / "real_engine" / "lab" / "pass6_temp0.3").glob("*_c*.json"))
    at.file_uploader(key="run_files").set_value([(p.name, p.read_bytes(), "application/json") for p in lab]).run()
    at.number_input(key="fit_up_to").set_value(4).run()
    assert not at.exception
    notes = [c.value for c in at.caption if "drawn at the runs' mean tokens per step" in c.value]
    assert notes == ["The line is drawn at the runs' mean tokens per step (E 1.36); these runs measured E 1.21–1.50, "
                     "and a run's speedup moves with its own E, so a fitted run sits off the line by as much (the "
                     "table's fit column is each run's fit at its own E)"]


REAL_ENGINE = sorted((FIXTURES / "real_engine").glob("*_c*.json"))  # plain, n-gram, draft at 1, 4, 16: 'tiny-llama'


def test_a_served_model_with_no_preset_keeps_its_measured_verdict_and_gets_no_prediction():
    """The real-engine lab's runs (tests/fixtures/real_engine/), uploaded together with the sidebar as it
    opens: 'tiny-llama' is no preset, so each run is judged on what the engine measured and the model
    predicts nothing; it was predicted as the sidebar's Llama 3.1 8B (n-gram at 1: "model: pays off
    (2.46×)" against a measured 0.95×; "Model error 443.9%")."""
    at = open_page()
    at.file_uploader(key="run_files").set_value([(p.name, p.read_bytes(), "application/json")
                                                 for p in REAL_ENGINE]).run()
    assert not at.exception
    table = table_by_key(at, "break_even_table").set_index(["method", "concurrency"])
    assert table["predicted_speedup"].isna().all() and table["predicted_verdict"].isna().all()
    assert not table["disagreement"].fillna("").any()
    assert (table["verdict_basis"] == "measured speedup").all()
    ngram = table.loc[("ngram", 1)]
    assert (round(ngram["measured_speedup"], 2), ngram["verdict"]) == (0.95, "borderline")
    assert [table.loc[("ngram", c), "verdict"] for c in (4, 16)] == ["fails", "fails"]
    assert [table.loc[("draft_model", c), "verdict"] for c in (1, 4, 16)] == ["clears"] * 3
    runs = table_by_key(at, "runs_table")
    assert (runs["target_preset"].fillna("") == "").all() and runs["no_prediction"].str.contains("'tiny-llama'").all()
    model_error = next(m for m in at.metric if m.label == "Model error")
    assert model_error.value == "–" and "6 runs judged on their measurement alone" in model_error.help
    flags = " ".join(m.value for m in at.markdown)
    assert "loses at concurrency 4, 16 (measured)" in flags and "the model said" not in flags
    said = " ".join(w.value for e in at.expander for w in e.warning)
    assert "target 'tiny-llama' is no preset" in said and "fallback preset" not in said
    assert (f"choose its target model in the sidebar (a preset, or from a config.json) and tick '{SIDEBAR_FOR_UNKNOWN}' "
            "to predict it as one") in said
    assert "--target" not in said and "predicted with Llama 3.1 8B" not in said


def test_step_fits_used_on_every_page_answer_what_if_first():
    """"Use these step fits on every page" after uploading the lab's runs: What-if at batch 16 (the sidebar's
    draft model, k = 4) answers from the draft-model server's fit before the model, and says it is a loss
    (fitted on 1, 4 and 16: the runs measured 2.57×, 1.42×, 1.48× at E = 5.0; What-if asks at its own α)."""
    at = open_page()
    lab = sorted((FIXTURES / "real_engine").glob("*.json"))
    at.file_uploader(key="run_files").set_value([(p.name, p.read_bytes(), "application/json") for p in lab]).run()
    at.button(key="use_step_fits").click().run()
    assert not at.exception
    at.switch_page("pages/whatif.py").run()
    at.number_input(key="conc").set_value(16).run()
    assert not at.exception
    boxes = [b.value for b in (*at.success, *at.error, *at.warning) if b.value.startswith("Your runs")]
    assert len(boxes) == 1 and "tiny-llama" in boxes[0] and "Draft model" in boxes[0] and "at 16" in boxes[0]


def test_step_fits_used_on_every_page_answer_capacity_first():
    """"Use these step fits on every page" reached What-if and Live; Capacity planned from the model alone
    (`capacity --calibration` answered from the fit). At 64 users and 150 tok/s each, the lab's draft-model server
    by its own step times: speculation 7 users a replica (10 replicas), plain not even one, before the model's plan."""
    at = open_page()
    lab = sorted((FIXTURES / "real_engine").glob("*.json"))
    at.file_uploader(key="run_files").set_value([(p.name, p.read_bytes(), "application/json") for p in lab]).run()
    at.button(key="use_step_fits").click().run()
    at.switch_page("pages/capacity.py").run()
    at.number_input(key="cap_tok_s").set_value(150.0).run()
    assert not at.exception
    assert [i.value for i in at.info if i.value.startswith("Your runs")] == [
        "Your runs (tiny-llama, 128 in / 128 out tokens, Draft model): speculation needs 10 replicas against no number "
        "of plain (measured step times); a replica holds no user plain and 7 users with speculation (5 at the band's "
        "slow edge). The model's plan follows."]


def test_step_fits_used_on_every_page_answer_the_traffic_mix_first():
    """As Capacity: `mix --calibration` answered each workload of the single pool from the fit, the page from the
    model alone. The lab's draft-model server at the mix's 16 sequences per replica, at each workload's own E."""
    at = open_page()
    lab = sorted((FIXTURES / "real_engine").glob("*.json"))
    at.file_uploader(key="run_files").set_value([(p.name, p.read_bytes(), "application/json") for p in lab]).run()
    at.button(key="use_step_fits").click().run()
    at.switch_page("pages/mix.py").run()
    assert not at.exception
    assert [i.value for i in at.info if i.value.startswith("Your runs")] == [
        "Your runs: measured fit (tiny-llama, 128 in / 128 out tokens, Draft model), the single pool at 16 sequences "
        "per replica: extraction 0.76× (0.56–1.02×, uncertain); chat 0.45× (0.34–0.60×, loses). The model's "
        "comparison follows."]


def _boxes(at: AppTest) -> str:
    """The text of every alert box as shown (Markdown's escapes, as in accept\\_rate, removed)."""
    return "\n".join(b.value for b in [*at.info, *at.warning, *at.error, *at.success]).replace("\\", "")


def test_an_ambiguous_acceptance_column_is_read_one_stated_way_and_the_page_lets_the_user_say_which():
    """Issue 40: a hand-written accept_rate column (meant as α) was read as vLLM's rate without a word."""
    text = (b"workload,concurrency,k,accept_rate,baseline_tok_s,spec_tok_s,gpu\n"
            b"extraction,1,4,0.7,48,88,L40S\nchat,1,4,0.4,48,47,L40S\n")
    at = open_page()
    at.file_uploader(key="run_files").set_value(("hand.csv", text, "text/csv")).run()
    assert not at.exception
    said = _boxes(at)
    assert ("'accept_rate' (2 rows of hand.csv) is read as the draft acceptance rate (accepted ÷ drafted): its name "
            "does not say which acceptance it is; say which if it is another (the 'Acceptance column means' choice "
            "above)") in said
    rows = table_by_key(at, "runs_table")
    assert rows["remarks"].str.contains("'accept_rate' read as the draft acceptance rate").all()
    before = table_by_key(at, "break_even_table").set_index("workload")["predicted_speedup"]
    at.selectbox(key="runs_acceptance_means").set_value("alpha").run()
    assert not at.exception
    assert "'accept_rate' (2 rows of hand.csv) is read as α (per-token acceptance), as said." in _boxes(at)
    after = table_by_key(at, "break_even_table").set_index("workload")["predicted_speedup"]
    assert after["chat"] < 1.0 < before["chat"]  # measured 0.98x: read as α, the model agrees


def test_runs_without_acceptance_say_in_the_headline_how_many_use_an_assumed_one_and_from_where():
    at = open_page()
    at.file_uploader(key="run_files").set_value(
        ("incident.csv", (FIXTURES / "incident_l40s.csv").read_bytes(), "text/csv")).run()
    assert not at.exception
    assert "3 of 3 rows use an assumed acceptance, none being in the file: 3 a published figure" in _boxes(at)
    assert any(e.label.startswith("Problems in the input:") and "3 rows on an assumed acceptance" in e.label
               for e in at.expander)


def test_a_link_whose_column_meaning_the_choice_does_not_offer_is_said_and_left_unsaid():
    at = open_page({"runs_acceptance_means": "per-token"})
    assert not at.exception and at.selectbox(key="runs_acceptance_means").value is None
    assert "The link's runs_acceptance_means=per-token is not one of: α, the per-token acceptance" in _boxes(at)
    at = open_page({"runs_acceptance_means": "α, the per-token acceptance"})  # as the choice writes it
    assert at.selectbox(key="runs_acceptance_means").value == "alpha" and "runs_acceptance_means" not in _boxes(at)


def test_a_verify_shaped_step_fit_names_its_shape_once_on_the_page(tmp_path):
    """The renamed-draft SpecDecode-Bench sweep (tests/test_step_fit.py acme_sweep): the fit's line names the model's
    shape once; the caption under it says what each arm took from the runs without repeating it."""
    from tests.test_step_fit import acme_sweep

    at = open_page()
    at.file_uploader(key="run_files").set_value([("acme.csv", acme_sweep(tmp_path).read_bytes(), "text/csv")]).run()
    at.number_input(key="fit_up_to").set_value(16).run()
    assert not at.exception
    gsm8k = next(m.value for m in at.markdown if m.value.startswith("**GSM8K**: fitted"))
    assert gsm8k.count("whose draft is no preset") == 1
    assert ("Plain step: level and growth the model's; speculative step: level from the runs, growth the model's"
            in [c.value for c in at.caption])


def test_the_verdict_table_reads_each_setup_by_concurrency_and_runs_as_read_keeps_the_upload_order():
    # the files arrive as a shell or a file picker sorts them: c1, c16, c4
    at = open_page()
    files = [p for p in REAL_ENGINE if not p.name.startswith("plain")]
    assert [p.stem for p in files][:3] == ["draft_c1", "draft_c16", "draft_c4"]
    plain = [p for p in REAL_ENGINE if p.name.startswith("plain")]
    at.file_uploader(key="run_files").set_value([(p.name, p.read_bytes(), "application/json")
                                                 for p in files + plain]).run()
    assert not at.exception
    table = table_by_key(at, "break_even_table")
    assert list(zip(table["method"], table["concurrency"])) == [
        ("draft_model", 1), ("draft_model", 4), ("draft_model", 16), ("ngram", 1), ("ngram", 4), ("ngram", 16)]
    assert table_by_key(at, "runs_table")["concurrency"].tolist()[:3] == ["1", "16", "4"]  # cells as read


def test_runs_that_name_no_preset_offer_no_calibration_button_to_press_for_an_error():
    """The field report's server (a CPU box and a tiny model, no preset): every run is judged on its measurement and
    the step fits come from the runs, but "Calibrate on these runs" was offered and answered with an error. It is
    greyed out, with the reason beside it from the start."""
    csv = ("workload,gpu,target_model,draft_model,method,k,concurrency,tokens_per_step,baseline_tok_s,spec_tok_s\n"
           + "".join(f"chat,cpu-box,tiny-llama,tiny-draft,draft_model,4,{c},1.8,{p},{s}\n"
                     for c, p, s in ((1, 107.3, 135.2), (4, 447.4, 527.9), (16, 653.7, 562.2)))).encode()
    at = open_page()
    at.file_uploader(key="run_files").set_value(("field.csv", csv, "text/csv")).run()
    assert not at.exception
    assert at.button(key="calibrate").disabled
    assert any(i.value.startswith("3 runs name no preset the model can predict (judged on the measurement alone), so "
                                  "the model has nothing to fit") for i in at.info)
    # runs the model predicts keep the button
    at.file_uploader(key="run_files").set_value(("runs.csv", TWO_WORKLOADS, "text/csv")).run()
    assert not at.button(key="calibrate").disabled


def test_runs_at_two_k_lead_the_page_with_one_schedule_across_k():
    from tests.test_step_fit import TWO_K

    csv = ("workload,gpu,target_model,draft_model,method,k,concurrency,tokens_per_step,baseline_tok_s,spec_tok_s\n"
           + "".join(f"chat,H100 SXM,Llama 3.1 8B,Llama 3.2 1B,draft_model,{k},{c},{e},{p},{s}\n"
                     for k, c, e, p, s in TWO_K)).encode()
    at = open_page()
    at.file_uploader(key="run_files").set_value(("two_k.csv", csv, "text/csv")).run()
    assert not at.exception
    shown = " ".join(m.value for m in at.markdown)
    assert "chat: k = 4 to batch " in shown and ", then 2 up to " in shown and "(your runs at k = 2 and 4)" in shown
    # under it, the two runs that would settle where k = 2 gets faster
    assert "Pin the switch: speculative runs at k = 4 and k = 2, at batch 9 and 20." in [c.value for c in at.caption]


def test_the_decisions_follow_the_step_fits_largest_concurrency():
    """The step-fit section's "Fit on runs at concurrency up to 4" refitted the section on the lab's n-gram server's
    runs at 1 and 4 (k = 4: "pays off up to batch 74, uncertain above"), while the decision box above still read the
    fits of every run ("on up to batch 152"): one fit, two answers on one page."""
    at = open_page()
    lab = sorted((FIXTURES / "real_engine" / "lab" / "pass10_ngram_k2_k4").glob("*_c*.json"))
    at.file_uploader(key="run_files").set_value([(p.name, p.read_bytes(), "application/json") for p in lab]).run()
    assert not at.exception

    def k4_line() -> str:
        return next(m.value for m in at.markdown if m.value.startswith("**128 in / 128 out tokens (k=4), k = 4: "))

    assert "on up to batch 152, uncertain above" in k4_line()
    at.number_input(key="fit_up_to").set_value(4).run()
    assert not at.exception
    assert "on up to batch 74, uncertain above" in k4_line()
    assert any("speculation pays off up to batch 74, uncertain above" in m.value for m in at.markdown)


def test_step_fits_at_two_k_used_on_every_page_give_what_if_the_schedule_across_k_too():
    """Runs of one server at k = 2 and 4, their step fits used on every page: What-if at k = 4 leads with the k = 4
    fit's line and then the server's schedule across both k, as `runs` and `predict --calibration` say it (the
    decision box had the k = 4 line alone)."""
    from tests.test_step_fit import TWO_K

    csv = ("workload,gpu,target_model,draft_model,method,k,concurrency,tokens_per_step,baseline_tok_s,spec_tok_s\n"
           + "".join(f"chat,H100 SXM,Llama 3.1 8B,Llama 3.2 1B,draft_model,{k},{c},{e},{p},{s}\n"
                     for k, c, e, p, s in TWO_K)).encode()
    at = open_page()
    at.file_uploader(key="run_files").set_value(("two_k.csv", csv, "text/csv")).run()
    at.button(key="use_step_fits").click().run()
    assert not at.exception
    at.switch_page("pages/whatif.py").run()
    assert not at.exception
    shown = " ".join(m.value for m in at.markdown)
    # the k = 4 line at What-if's own α (E 2.77, not the runs' 3.0); the schedule across k at the runs' own E
    assert shown.index("Draft model, k = 4: off above batch ") < shown.index(
        "chat: k = 4 to batch 14, then 2 up to 44, off above (your runs at k = 2 and 4)")
    # "What to deploy" wrote the model's schedule (k = 3 up to batch 92 on the sidebar's L40S) under the runs'
    # decision: it now writes the runs' own, the schedule across k, into vLLM's config
    config = json.loads(next(c.value for c in at.code if "num_speculative_tokens_per_batch_size" in c.value))
    assert config["num_speculative_tokens_per_batch_size"] == [[1, 14, 4], [15, 44, 2], [45, 512, 0]]
    assert config["num_speculative_tokens"] == 4
    assert any(c.value.startswith("From your runs' step fits") for c in at.caption)


def test_what_if_deploys_as_the_runs_say_with_what_their_off_state_cost():
    """Lab pass 11's runs (the draft model, and the same configured off at 0.60-0.73x of plain) used on every page:
    What-if at its own α (E 2.77 where the runs measured 1.00) deploys the runs' fit (on at every batch by the fit,
    its band reaching 1.0 above 16) and says under it what an off band cost on this server."""
    at = open_page()
    lab = sorted((FIXTURES / "real_engine" / "lab" / "pass11_off").glob("*_c*.json"))
    at.file_uploader(key="run_files").set_value([(p.name, p.read_bytes(), "application/json") for p in lab]).run()
    at.button(key="use_step_fits").click().run()
    at.switch_page("pages/whatif.py").run()
    assert not at.exception
    captions = [c.value for c in at.caption]
    assert any(c.startswith("From your runs' step fits") for c in captions)
    assert any(c.startswith("Off is not free here: configured and off (k = 0), your runs ran at 0.64× of plain")
               for c in captions)
    config = json.loads(next(c.value for c in at.code if "num_speculative_tokens_per_batch_size" in c.value))
    assert config["num_speculative_tokens_per_batch_size"] == [[1, 512, 4]]


def test_what_if_deploys_the_models_schedule_without_step_fits():
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    config = json.loads(next(c.value for c in at.code if "num_speculative_tokens_per_batch_size" in c.value))
    assert config["num_speculative_tokens_per_batch_size"][-1][2] == 0  # the model's, off above its threshold
    assert not any(c.value.startswith("From your runs' step fits") for c in at.caption)
