"""What-if's "my traffic is mixed": one α stands for one kind of traffic; a mix of kinds is answered on
Traffic mix. The link carries What-if's α, k and concurrency there in its address, with the workloads
prefilled from them on arrival."""

from __future__ import annotations

import streamlit as st

from pages.parts.text import no_links
from specmodel.plan.workloads import mixed_from_whatif
from specmodel.show import links

MIX_TABLE = "mix_table"  # the table Traffic mix's editor starts from
MIX_EDITOR = "mix_editor"
RUNS_KEY = "runs_rows"  # where Past runs leaves its canonical run table for other pages


def _runs():
    """Past runs' table, if that page left one (it loaded pandas to make it: What-if itself never does)."""
    runs = st.session_state.get(RUNS_KEY)
    if runs is None:
        return None
    import pandas as pd

    return runs if isinstance(runs, pd.DataFrame) else None


def mixed_traffic_path(alpha: float, k: int, concurrency: int) -> None:
    """A line and a link: for mixed traffic, open Traffic mix with this α, k and concurrency.

    A page link, not a button and st.switch_page: switch_page clears the address first and refuses to
    while a widget is bound to it ("Cannot clear query parameters ... bound to widgets: 'alpha', 'conc'"
    once α or the batch moved). The link carries What-if's values under Traffic mix's own keys; the
    browser keeps the sidebar's parameters and the calibration, as the sidebar's navigation does."""
    _, source = mixed_from_whatif(alpha, _runs())
    text, button = st.columns([4, 1.3], vertical_alignment="center")
    text.caption("**My traffic is mixed.** One α stands for one kind of traffic; averaging the α of several "
                 "hides that the low-acceptance part pays for the verify work of the rest. Traffic mix "
                 f"answers it per workload, at k = {k} and {concurrency} concurrent sequences, starting from "
                 f"{source}.")
    button.page_link("pages/mix.py", label="Open in Traffic mix", width="stretch",
                     query_params=links.whatif_to_mix(alpha, k, concurrency))


def receive_from_whatif() -> None:
    """On Traffic mix, before its widgets: a link from What-if (its α in the address) fills the workload
    table once; the α then leaves the address, so a reload keeps the edits. A value no table accepts
    (an older or hand-edited link) leaves the table as it was and says so."""
    raw = st.query_params.get(links.FROM_WHATIF)
    if raw is None:
        return
    del st.query_params[links.FROM_WHATIF]
    for key in links.link_numbers(st.query_params, links.MIX_NUMBERS):
        st.session_state.pop(key, None)  # the widget starts from the link's k and batch, not an earlier visit's
    alpha, problem = links.alpha_from_link(raw)
    if problem:
        st.warning(no_links(problem))
        return
    import pandas as pd

    rows, _ = mixed_from_whatif(alpha, _runs())
    st.session_state[MIX_TABLE] = pd.DataFrame(rows)  # a new table: edits kept from before are not restored
    st.session_state.pop(MIX_EDITOR, None)
    st.session_state["mix_sent_from_whatif"] = True  # said above the table
