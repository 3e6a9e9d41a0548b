"""What-if's "my traffic is mixed" (issue 23, item 5): the button opens Traffic mix with What-if's k and
concurrency and the workloads prefilled, and Traffic mix answers the incident (mixed traffic loses at 32)."""

import pandas as pd
from streamlit.testing.v1 import AppTest

from specmodel.plan.workloads import mixed_from_whatif
from specmodel.runs import read_runs
from tests.conftest import ROOT
from tests.test_page_links import follow_link

APP = str(ROOT / "app.py")


def test_without_runs_the_rows_are_whatifs_alpha_and_an_example_chat_to_replace():
    rows, source = mixed_from_whatif(0.7)
    assert [(r["label"], r["share"], r["alpha"]) for r in rows] == [
        ("this traffic (What-if α)", 0.5, 0.7), ("chat at temperature 0.8 (example)", 0.5, 0.4)]
    assert "example" in source


def test_with_runs_that_carry_alpha_the_rows_are_their_workloads():
    runs = read_runs([("r.csv", "workload,concurrency,k,alpha,baseline_tok_s,spec_tok_s\n"
                                "extraction,1,4,0.75,48,88\nchat,1,4,0.4,48,47\n")]).rows
    rows, source = mixed_from_whatif(0.7, runs)
    assert [(r["label"], r["alpha"]) for r in rows] == [("extraction", 0.75), ("chat", 0.4)]
    assert source == "the workloads of the runs loaded on Past runs"


def test_the_link_opens_traffic_mix_with_alpha_k_concurrency_and_workloads():
    at = AppTest.from_file(APP, default_timeout=90)
    at.run()
    at.number_input(key="conc").set_value(32).run()
    assert any("**My traffic is mixed.**" in c.value and "k = 4 and 32 concurrent" in c.value for c in at.caption)
    follow_link(at, "Open in Traffic mix")
    assert not at.exception
    assert at.slider(key="mix_k").value == 4 and at.number_input(key="mix_conc").value == 32
    table = at.session_state["mix_table"]
    assert isinstance(table, pd.DataFrame) and table["alpha"].tolist() == [0.7, 0.4]
    assert any("Opened from What-if" in i.value for i in at.info)
    plans = at.dataframe[1].value["plan"].tolist()
    assert "single pool, draft_model k=4" in plans and "single pool, speculation off" in plans
    assert any("this traffic (What-if α)" in b.value and "chat at temperature 0.8 (example)" in b.value
               for b in [*at.success, *at.warning, *at.error, *at.info])
