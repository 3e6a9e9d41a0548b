"""What-if's "my traffic is mixed": one α stands for one kind of traffic; a mix of kinds is answered on
Traffic mix. The button carries What-if's k and concurrency there, with the workloads prefilled."""

from __future__ import annotations

import streamlit as st

from specmodel.plan.workloads import mixed_from_whatif

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


def _send(alpha: float, k: int, concurrency: int) -> None:
    import pandas as pd  # the mix table, made only when the button is pressed

    rows, _ = mixed_from_whatif(alpha, _runs())
    st.session_state[MIX_TABLE] = pd.DataFrame(rows)  # a new table: edits kept from before are not restored
    st.session_state.pop(MIX_EDITOR, None)
    st.session_state["mix_k"], st.session_state["mix_conc"] = int(k), int(concurrency)
    st.session_state["mix_sent_from_whatif"] = True


def mixed_traffic_path(alpha: float, k: int, concurrency: int) -> None:
    """A line and a button: for mixed traffic, open Traffic mix with this k, concurrency and workloads."""
    _, source = mixed_from_whatif(alpha, _runs())
    text, button = st.columns([4, 1.3], vertical_alignment="center")
    text.caption("**My traffic is mixed.** One α stands for one kind of traffic; averaging the α of several "
                 "hides that the low-acceptance part pays for the verify work of the rest. Traffic mix "
                 f"answers it per workload, at k = {k} and {concurrency} concurrent sequences, starting from "
                 f"{source}.")
    if button.button("Open in Traffic mix", key="whatif_to_mix", on_click=_send, args=(alpha, k, concurrency),
                     width="stretch"):
        st.switch_page("pages/mix.py")
