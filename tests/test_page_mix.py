"""The Traffic mix page in Streamlit's AppTest: what a reviewer sees after editing the workload table."""

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import ROOT

APP = str(ROOT / "app.py")


def open_page(query: dict | None = None, state: dict | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    for key, value in (query or {}).items():
        at.query_params[key] = value
    for key, value in (state or {}).items():
        at.session_state[key] = value
    at.run()
    return at.switch_page("pages/mix.py").run()


def edit(at: AppTest, edited=None, added=None, deleted=None) -> AppTest:
    at.session_state["mix_editor"] = {"edited_rows": edited or {}, "added_rows": added or [],
                                      "deleted_rows": deleted or []}
    return at.run()


def comparison(at: AppTest) -> pd.DataFrame:
    # the first read-only table: the comparison (the second, under an expander, is the same per workload)
    return [d for d in at.dataframe if d.editing_mode == "read_only"][0].value


def test_page_opens_with_the_example_and_shows_comparison_chart_and_advice():
    at = open_page()
    assert not at.exception
    assert at.title[0].value.startswith("Traffic mix")
    table = at.data_editor[0].value
    assert list(table["label"]) == ["extraction", "chat"]
    assert list(table["alpha"]) == [0.7, 0.4] and list(table["temperature"]) == [0.0, 0.8]
    plans = list(comparison(at)["plan"])
    assert plans[:3] == ["single pool, draft_model k=4", "single pool, speculation off", "single pool, best setting"]
    assert plans[3] == "split #1"
    # the example's split gains inside the model's band: advised in an amber box that says so
    assert not at.success and "Best: split" in at.warning[0].value and "Uncertain: across" in at.warning[0].value
    charts = at.get("plotly_chart")
    assert len(charts) == 1 and "One pool vs split" in charts[0].proto.spec


def test_an_edited_table_changes_the_comparison_and_says_shares_were_normalised():
    at = open_page()
    before = comparison(at)
    at = edit(at, edited={1: {"alpha": 0.1}}, added=[{"label": "code", "share": 0.5, "alpha": 0.8}])
    assert not at.exception
    assert any("normalised to extraction 0.333, chat 0.333, code 0.333" in i.value for i in at.info)
    after = comparison(at)
    assert "code: ITL ms" in after.columns
    chat_on_before = before.loc[0, "chat: tok/s per sequence"]
    assert after.loc[0, "chat: tok/s per sequence"] < chat_on_before  # α 0.4 -> 0.1 in the shared pool
    advice = [a.value for a in (*at.success, *at.info, *at.warning) if "Best:" in a.value]
    assert len(advice) == 1 and "code " in advice[0]  # the new workload's latency is in the advice


def test_a_workload_without_acceptance_is_refused_by_name_and_the_rest_still_compare():
    at = edit(open_page(), edited={1: {"alpha": None}})
    assert not at.exception
    assert len(at.error) == 1 and "workload 'chat' refused" in at.error[0].value
    assert "chat: ITL ms" not in comparison(at).columns
    assert "extraction: ITL ms" in comparison(at).columns


def test_every_row_refused_stops_before_the_comparison():
    at = edit(open_page(), edited={0: {"alpha": None}, 1: {"alpha": None}})
    assert not at.exception
    assert len(at.error) == 2
    assert not at.get("plotly_chart")


def test_url_sets_concurrency_gpus_and_k_and_one_gpu_has_nothing_to_split():
    at = open_page({"mix_conc": "16", "mix_gpus": "1", "mix_k": "2"})
    assert at.number_input(key="mix_conc").value == 16 and at.slider(key="mix_k").value == 2
    assert list(comparison(at)["plan"]) == ["single pool, draft_model k=2", "single pool, speculation off",
                                            "single pool, best setting"]
    assert any("nothing to split" in c.value for c in at.caption)


def test_a_plan_that_does_not_fit_in_memory_is_marked():
    at = open_page({"mix_conc": "300"})
    assert any("does not fit in memory" in w.value for w in at.warning)
    assert comparison(at).loc[0, "fits in memory"] == "no: 32 sequences queue"


def test_fill_from_past_runs_when_that_page_left_its_runs():
    runs = pd.DataFrame({"workload": ["summarise", "summarise", "qa"], "concurrency": [8, 8, 24],
                         "alpha": [0.6, 0.62, 0.35], "temperature": [0.0, 0.0, 0.7], "notes": ["", "", "support bot"]})
    at = open_page(state={"runs_rows": runs})
    at.button(key="mix_from_runs").click().run()
    assert not at.exception
    table = at.data_editor[0].value
    assert list(table["label"]) == ["summarise", "qa"]
    assert list(table["share"]) == pytest.approx([0.25, 0.75])
    assert "summarise: ITL ms" in comparison(at).columns
    at.button(key="mix_reset").click().run()
    assert list(at.data_editor[0].value["label"]) == ["extraction", "chat"]


def test_without_past_runs_the_page_says_where_to_load_them():
    at = open_page()
    assert not [b for b in at.button if b.key == "mix_from_runs"]
    assert any("Past runs page" in c.value for c in at.caption)


def test_the_comparisons_numbers_read_alike_in_every_row():
    # 1384 beside 1327.4 read as if one were rounded: one format per column, whole tok/s, three decimals vs off
    import json

    at = open_page()
    tables = [d for d in at.dataframe if d.editing_mode == "read_only"]
    main, per_workload = (json.loads(t.proto.columns) for t in tables[:2])
    assert main["aggregate tok/s"]["type_config"]["format"] == "%.0f"
    assert main["vs off (×)"]["type_config"]["format"] == "%.3f"
    assert per_workload["chat: ITL ms"]["type_config"]["format"] == "%.2f"
    assert per_workload["extraction: tok/s per sequence"]["type_config"]["format"] == "%.1f"
