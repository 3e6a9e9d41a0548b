"""State that survives (pages/parts/common.py, pages/parts/calibration.py): calibration stays in every
page's link, a badge on every
verdict says whether the numbers are calibrated, the copy-link box holds the full link, and Traffic
mix edits come back after another page ran."""

from streamlit.testing.v1 import AppTest

from specmodel import Scenario, predict
from specmodel.show import links
from tests.conftest import ROOT

APP = str(ROOT / "app.py")
CAL = "0.7,0.5,1.5,0.5,0.1"


def app(query: dict | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=90)
    for key, value in (query or {}).items():
        at.query_params[key] = value
    return at.run()


def badges(at: AppTest) -> list[str]:
    return [m.value for m in at.markdown if "-badge[" in m.value]


def test_a_calibrated_link_badges_the_verdict_and_the_url_carries_every_parameter():
    # (that the sidebar's links keep `cal` is tests/test_browser_state.py: AppTest does not drop URL parameters)
    at = app({"cal": CAL})
    full = links.efficiency_to_link(links.efficiency_from_link(CAL))  # every parameter, the defaults included
    assert not at.exception and at.query_params["cal"] == full
    assert badges(at) == [":green-badge[calibrated]"]  # the What-if verdict says it is calibrated


def test_every_verdict_is_badged_uncalibrated_without_a_calibration():
    at = app()
    assert badges(at) == [":gray-badge[uncalibrated]"]
    assert "cal" not in at.query_params
    for page in ("pages/past-runs.py", "pages/capacity.py", "pages/mix.py"):
        at.switch_page(page).run()
        if page == "pages/past-runs.py":
            at.pills(key="sample").set_value("Seed runs").run()
        assert not at.exception
        assert badges(at) == [":gray-badge[uncalibrated]"], page


def test_the_copy_link_box_holds_the_page_link_with_its_inputs_and_calibration():
    at = app({"cal": CAL, "gpu": "H100 SXM"})
    codes = [c.value for c in at.code]
    full = links.efficiency_to_link(links.efficiency_from_link(CAL)).replace(",", "%2C")
    assert any(c.startswith("http://") and f"cal={full}" in c and "gpu=H100+SXM" in c for c in codes), codes
    assert links.view_link("http://h:1/past-runs", {"cal": CAL, "sample": ""}) == \
        "http://h:1/past-runs?cal=0.7%2C0.5%2C1.5%2C0.5%2C0.1"
    assert links.view_link(None, {}) == "http://localhost:8501/"


def _editor_page():
    """A page with an edited table, as Traffic mix has: the restore runs first (app.py's sidebar does
    it before every page), then the editor, then remember_table."""
    import pandas as pd
    import streamlit as st

    from pages.parts.common import remember_table, restore_tables

    restore_tables()
    if "mix_table" not in st.session_state:
        st.session_state["mix_table"] = pd.DataFrame({"label": ["chat", "code"], "share": [0.5, 0.5]})
    if st.session_state.get("show_editor", True):
        edited = st.data_editor(st.session_state["mix_table"], key="mix_editor")
        remember_table("mix_table", edited)


def test_traffic_mix_edits_come_back_after_another_page_ran():
    at = AppTest.from_function(_editor_page, default_timeout=60).run()
    assert not at.exception
    base, _ = at.session_state["mix_table__kept"]
    assert base is at.session_state["mix_table"]
    edited = base.copy()
    edited.loc[0, "label"] = "my edited workload"
    at.session_state["mix_table__kept"] = (base, edited)  # what remember_table keeps after an edit
    at.session_state["show_editor"] = False  # another page runs: the editor's state is dropped
    at.run()
    assert "mix_editor" not in at.session_state
    at.session_state["show_editor"] = True  # back on the page
    at.run()
    assert not at.exception
    assert list(at.session_state["mix_table"]["label"]) == ["my edited workload", "code"]


def test_edits_of_a_table_replaced_meanwhile_are_not_restored():
    at = AppTest.from_function(_editor_page, default_timeout=60).run()
    base, _ = at.session_state["mix_table__kept"]
    edited = base.copy()
    edited.loc[0, "label"] = "old edit"
    at.session_state["mix_table__kept"] = (base, edited)
    at.session_state["mix_table"] = base.copy()  # "Reset to the example" or "Fill from Past runs"
    at.session_state["show_editor"] = False
    at.run()
    at.session_state["show_editor"] = True
    at.run()
    assert list(at.session_state["mix_table"]["label"]) == ["chat", "code"]


def _sidebar(at: AppTest) -> dict:
    return {s.key: s.value for s in at.sidebar.selectbox}


def test_a_hand_written_link_opens_what_it_names_in_the_words_people_write():
    at = app({"gpu": "8x H100 (TP=8)", "target": "meta-llama/Llama-3.1-70B-Instruct", "method": "EAGLE-3",
              "engine": "sglang"})
    assert not at.exception and not at.sidebar.warning
    assert _sidebar(at) == {"gpu": "H100 SXM", "tp": 8, "target": "Llama 3.1 70B", "method": "eagle3", "engine": "sglang"}
    expected = predict(Scenario.from_names(gpu="H100 SXM", tp=8, target="Llama 3.1 70B", method="eagle3", engine="sglang",
                                alpha=0.7, k=4, concurrency=1, context_len=1024)).speedup
    speedup = next(m for m in at.metric if m.label == "Speedup")
    assert speedup.value == f"{float(expected):.2f}x" != "1.55x"  # predicted for what the link names, not the defaults


def test_a_link_value_that_names_nothing_known_is_said_and_the_default_kept():
    at = app({"gpu": "abacus", "tp": "3", "method": "eagle"})
    assert not at.exception
    warnings = " | ".join(w.value for w in at.sidebar.warning)
    assert "The link's gpu 'abacus' is not a GPU this tool knows" in warnings
    assert "The link's tp '3' is not one of 1, 2, 4, 8" in warnings
    assert _sidebar(at)["gpu"] == "L40S" and _sidebar(at)["tp"] == 1 and _sidebar(at)["method"] == "eagle"


def test_a_link_value_cannot_put_a_link_or_image_into_the_sidebar():
    at = app({"gpu": "![x](http://127.0.0.1:9/pixel.png) [click](http://127.0.0.1:9/)"})
    warning = " ".join(w.value for w in at.sidebar.warning)
    assert "is not a GPU this tool knows" in warning
    assert "](" not in warning and "]\\(" in warning  # escaped: shown as typed, never rendered as a link
