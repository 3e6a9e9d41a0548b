"""Links between pages after any widget change, and link or session values no widget accepts (issue 40,
item 2): What-if's "Open in Traffic mix" raised `StreamlitAPIException: Cannot clear query parameters ...
bound to widgets: 'alpha', 'conc'` once α or the batch had moved off its default (then in the address);
a value a widget does not take is its default and a note, never an exception.
tests/test_browser_links.py follows every link in a real browser."""

from urllib.parse import parse_qsl

import pytest
from streamlit.testing.v1 import AppTest

from specmodel.show import links
from tests.conftest import ROOT

APP = str(ROOT / "app.py")
SHARED = ("gpu", "tp", "target", "draft", "method", "engine", "cal")  # what the browser keeps on a page change


def follow_link(at: AppTest, label: str) -> AppTest:
    """Follow a page link as the browser does: the link's own parameters with those the sidebar's navigation
    keeps (the sidebar's and the calibration; the page left takes its own along), then the page it names."""
    link = next(e.proto for e in at.get("page_link") if e.proto.label == label)
    kept = {k: v for k, v in at.query_params.items() if k in SHARED}
    for key in list(at.query_params):
        del at.query_params[key]
    for key, value in {**kept, **dict(parse_qsl(link.query_string))}.items():
        at.query_params[key] = value
    return at.switch_page(f"pages/{link.page}.py").run()


def open_app(query: dict | None = None, held: dict | None = None, page: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=90)
    for key, value in (query or {}).items():
        at.query_params[key] = value
    for key, value in (held or {}).items():
        at.session_state[key] = value
    at.run()
    return at.switch_page(page).run() if page else at


def warnings(at: AppTest) -> str:
    return "\n".join(w.value for w in at.warning)


def test_the_traffic_mix_link_works_after_alpha_and_the_batch_moved():
    # α and the batch off their defaults, in the address as the browser's bound widgets write them
    at = open_app({"gpu": "H100 SXM", "alpha": "0.6", "conc": "8"})
    at.slider(key="alpha").set_value(0.55).run()
    at.number_input(key="conc").set_value(16).run()
    assert not at.exception
    follow_link(at, "Open in Traffic mix")
    assert not at.exception
    assert at.title[0].value.startswith("Traffic mix")
    assert at.number_input(key="mix_conc").value == 16 and at.slider(key="mix_k").value == 4
    assert at.session_state["mix_table"]["alpha"].tolist()[0] == 0.55
    assert any("Opened from What-if" in i.value for i in at.info)
    assert at.session_state["gpu"] == "H100 SXM"  # the sidebar came along
    assert links.FROM_WHATIF not in at.query_params  # used once: a reload keeps the table's edits


def test_the_link_overrides_what_traffic_mix_held_from_an_earlier_visit():
    at = open_app(page="pages/mix.py")
    at.number_input(key="mix_conc").set_value(48).run()
    at.switch_page("pages/whatif.py").run()
    at.number_input(key="conc").set_value(8).run()
    follow_link(at, "Open in Traffic mix")
    assert not at.exception and at.number_input(key="mix_conc").value == 8


@pytest.mark.parametrize(("page", "query", "said", "key", "default"), [
    (None, {"alpha": "2"}, "alpha=2 is not a valid number", "alpha", 0.7),
    (None, {"k": "99"}, "k=99 is not a valid number", "k", 4),
    (None, {"conc": "0"}, "conc=0 is not a valid number", "conc", 1),
    (None, {"timings": "from measurements"}, "timings=from measurements is not one of", "timings", "from hardware"),
    ("pages/mix.py", {"mix_k": "9"}, "mix_k=9 is not a valid number", "mix_k", 4),
    ("pages/mix.py", {"mix_gpus": "lots"}, "mix_gpus=lots is not a valid number", "mix_gpus", 2),
    ("pages/capacity.py", {"cap_alpha": "1.5"}, "cap_alpha=1.5 is not a valid number", "cap_alpha", 0.7),
])
def test_a_link_value_no_widget_accepts_gives_the_default_and_a_note(page, query, said, key, default):
    at = open_app(query, page=page)
    assert not at.exception
    assert f"The link's {said}" in warnings(at) and "the default is used" in warnings(at)
    assert at.session_state[key] == default


def test_a_fractional_whole_number_in_a_link_says_what_the_widget_kept():
    at = open_app({"k": "2.5"})
    assert not at.exception and at.slider(key="k").value == 2
    assert "The link's k=2.5 is not a whole number of draft tokens per step k (a whole number): 2 is used" in warnings(at)


@pytest.mark.parametrize(("page", "held", "key", "default"), [
    (None, {"alpha": 3.0}, "alpha", 0.7), (None, {"k": 20}, "k", 4), (None, {"timings": "bogus"}, "timings",
                                                                         "from hardware"),
    ("pages/mix.py", {"mix_conc": 99999}, "mix_conc", 32), ("pages/capacity.py", {"cap_alpha": 5.0}, "cap_alpha", 0.7),
])
def test_a_session_value_no_widget_accepts_gives_the_default_and_a_note(page, held, key, default):
    """Streamlit itself raises for a slider held out of its range ("The `value` 3.0 is greater than the
    `max_value` 1.0"): the page drops the value before the widget and says so."""
    at = open_app(held=held, page=page)  # held before the page's widgets exist, as a hand-over leaves it
    assert not at.exception
    assert f"This session's {key}=" in warnings(at) and "the default is used" in warnings(at)
    assert at.session_state[key] == default


def test_a_bad_alpha_in_the_traffic_mix_link_leaves_the_table_as_it_was():
    at = open_app({links.FROM_WHATIF: "seven"}, page="pages/mix.py")
    assert not at.exception
    assert "The link's whatif_alpha=seven is not an acceptance α between 0 and 1" in warnings(at)
    assert at.session_state["mix_table"]["label"].tolist() == ["extraction", "chat"]  # the example, untouched


def test_the_link_bounds_are_the_widgets_own_ranges():
    at = open_app()
    widgets = {"alpha": at.slider(key="alpha"), "k": at.slider(key="k"), "conc": at.number_input(key="conc")}
    for key, widget in widgets.items():
        assert (widget.min, widget.max) == links.WHATIF_NUMBERS[key][:2], key
    at.radio(key="timings").set_value("measured").run()
    for key in ("t_target", "t_draft"):
        widget = at.number_input(key=key)
        assert (widget.min, widget.max) == links.WHATIF_NUMBERS[key][:2], key
    at.switch_page("pages/mix.py").run()
    mix = {"mix_conc": at.number_input(key="mix_conc"), "mix_gpus": at.number_input(key="mix_gpus"),
           "mix_k": at.slider(key="mix_k")}
    for key, widget in mix.items():
        assert (widget.min, widget.max) == links.MIX_NUMBERS[key][:2], key
