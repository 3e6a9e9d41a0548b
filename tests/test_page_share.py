"""Links that say what they hold (issue 23, item 7): on Past runs with uploads the link box says the runs
cannot travel in it and offers them and the report; a recipient of a calibrated link without runs is
told the runs did not come with it."""

import io
import zipfile

from streamlit.testing.v1 import AppTest

from pages.parts.share import runs_zip
from tests.conftest import FIXTURES, ROOT

APP = str(ROOT / "app.py")
INCIDENT = (FIXTURES / "incident_l40s.csv").read_bytes()


def _past_runs(query=None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=90)
    for key, value in (query or {}).items():
        at.query_params[key] = value
    at.run()
    at.switch_page("pages/past-runs.py").run()
    assert not at.exception
    return at


def _link_box(page_path: str, uploads) -> AppTest:
    def script():
        import streamlit as st

        from pages.parts.share import link_popover

        link_popover(st.sidebar, calibrated=True, page_path=st.session_state["page_path"])

    at = AppTest.from_function(script, default_timeout=30)
    at.session_state["page_path"] = page_path
    if uploads:
        at.session_state["runs_uploads"] = uploads
    at.run()
    assert not at.exception
    return at


def test_with_uploads_the_link_box_says_they_cannot_travel_and_offers_the_runs_and_the_report():
    at = _link_box("past-runs", [("incident.csv", INCIDENT)])
    [box] = [w.value for w in at.sidebar.warning]
    assert "holds these inputs and the whole calibration, **not the uploaded runs** (incident.csv)" in box
    assert "uploads cannot travel in a link" in box and "Report (HTML)" in box
    assert [b.proto.label for b in at.sidebar.get("download_button")] == ["The uploaded runs (zip)"]
    plain = _link_box("past-runs", None)  # no uploads: the link holds everything the page shows
    assert not plain.sidebar.warning
    assert "opens this page with these inputs and the whole calibration" in plain.sidebar.caption[0].value
    assert not _link_box("", [("incident.csv", INCIDENT)]).sidebar.warning  # What-if holds no uploads


def test_the_runs_zip_holds_every_file_under_a_distinct_name():
    data = runs_zip([("runs.csv", b"a"), ("runs.csv", b"b")])
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        assert z.namelist() == ["runs.csv", "2-runs.csv"] and z.read("2-runs.csv") == b"b"


def test_a_calibrated_link_without_runs_says_the_runs_did_not_come_with_it():
    at = _past_runs({"cal": "0.82,0.6,0.3,0.2,0,0.45"})
    assert any("the runs it was fitted on did not: a link cannot carry uploaded files" in i.value for i in at.info)
    assert "calibration" in at.session_state  # the calibration itself came


def test_two_uploads_with_one_name_get_distinct_names():
    from pages.parts.run_files import distinct_names

    assert [n for n, _ in distinct_names([("results.json", b"a"), ("results.json", b"b"), ("x.csv", b"c")])] == \
        ["results.json", "results.json (2)", "x.csv"]


def test_the_baseline_file_gets_no_baseline_selector_of_its_own():
    """Issue 40: a baseline file was offered as a baseline of its own. A selector goes only to a file that loaded
    runs of its own, and offers only the files that did not (the baselines)."""
    def script():
        import streamlit as st

        from pages.parts.run_files import paired_by_hand, pairing_choices

        files = [("spec.json", b""), ("other.json", b""), ("base.json", b"")]
        pairs, where = paired_by_hand(files)
        st.session_state["pairs"] = pairs
        pairing_choices(where, files, ["spec.json", "other.json"])  # base.json loaded no run of its own

    at = AppTest.from_function(script, default_timeout=30).run()
    assert [s.label for s in at.selectbox] == ["Baseline for spec.json", "Baseline for other.json"]
    assert all(s.options == ["automatic", "base.json"] for s in at.selectbox)
    at.selectbox(key="pair_spec.json").set_value("base.json").run()
    at.run()  # the choice is read before the files are, as the page does
    assert at.session_state["pairs"] == {"spec.json": "base.json"}
