"""Calibration shown whole (issue 23, item 3): every parameter, its whole name and its physical range, in
the sidebar, the badge and the Past runs table; a calibration with a value outside its range (the
incident's overhead_scale = 1.76e-14) is never applied, from a link or from a file."""

import json

import pytest
from streamlit.testing.v1 import AppTest

from specmodel import Efficiency, SpecModelError
from specmodel.model.calibration_file import calibration_from_json, parameter_rows
from specmodel.words.calibration import calibration_line
from specmodel.model.parameters import PARAMETERS
from specmodel.show import links
from tests.conftest import ROOT

APP = str(ROOT / "app.py")


def test_the_table_has_every_parameter_by_its_whole_name_with_its_range():
    eff = Efficiency(eta_bw=0.82, overhead_scale=0.45)
    rows = parameter_rows(eff, fitted=("eta_bw", "overhead_scale"), held=("t_fixed_ms",))
    assert [r["parameter"] for r in rows] == list(PARAMETERS)
    by_name = {r["parameter"]: r for r in rows}
    assert by_name["overhead_scale"] == {"parameter": "overhead_scale", "value": "0.45×", "physical range": "0.3–3×",
                                         "status": "fitted", "means": "engine overheads relative to the engine preset"}
    assert by_name["t_fixed_ms"]["value"] == "0 ms" and by_name["t_fixed_ms"]["status"] == "held at its starting value"
    assert by_name["eta_kv"]["status"] == "default"


def test_the_one_line_names_every_parameter_away_from_its_default_and_counts_the_rest():
    line = calibration_line(Efficiency(eta_bw=0.82, eta_flops=0.6, t_fixed_ms=0.3, t_spec_overhead_ms=0.2,
                                       overhead_scale=0.45))
    for part in ("eta_bw 0.82 (range 0.6–0.95)", "eta_flops 0.6", "t_fixed_ms 0.3 ms", "t_spec_overhead_ms 0.2 ms",
                 "overhead_scale 0.45× (range 0.3–3×)", f"the other {len(PARAMETERS) - 5} parameters at their defaults"):
        assert part in line, (part, line)


def test_a_link_or_file_with_overhead_scale_outside_its_range_is_refused():
    with pytest.raises(SpecModelError, match=r"overhead_scale = 1\.76e-14 outside 0\.3–3"):
        links.efficiency_from_link("0.9,0.65,0,0,0,1.76e-14")
    doc = {"format": "specmodel-calibration", "version": 2, "parameters": {"overhead_scale": 1.76e-14}}
    with pytest.raises(SpecModelError, match="cal.json, field 'parameters': not applied, overhead_scale"):
        calibration_from_json(json.dumps(doc), "cal.json")


def test_a_link_carries_every_parameter_so_the_recipient_gets_the_whole_calibration():
    eff = Efficiency(eta_bw=0.8, kernel_us=6.0, eta_kv=0.85, attn_floor_us=25.0, smooth_p=2.5)
    assert links.efficiency_from_link(links.efficiency_to_link(eff)) == eff


def _sidebar(query):
    at = AppTest.from_file(APP, default_timeout=90)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception
    return at


def test_the_sidebar_lists_the_whole_calibration_and_refuses_one_outside_its_range():
    at = _sidebar({"cal": "0.82,0.6,0.3,0.2,0,0.45"})
    [shown] = [s.value for s in at.sidebar.success]
    assert "overhead_scale 0.45× (range 0.3–3×)" in shown and "t_spec_overhead_ms 0.2 ms" in shown
    at = _sidebar({"cal": "0.82,0.6,0.3,0.2,0,1.76e-14"})
    assert not at.sidebar.success  # not "Calibrated" with a value outside its range
    assert any("overhead_scale = 1.76e-14 outside 0.3–3" in w.value and "not applied" in w.value
               for w in at.sidebar.warning)
    assert [m.value for m in at.markdown if "-badge[" in m.value] == [":gray-badge[uncalibrated]"]
