"""Fleet's decision, first: one line per instance (show.decisions.live_decision, the words of the Live page and
of `fleet`), in a table, since a fleet has as many as it has instances, with the two concurrencies that would
pin an open threshold beside each."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from pages.parts.decision import decision_slot
from specmodel.metrics import live
from specmodel.show.decisions import server_decisions
from specmodel.words.decision_line import pin_batches

# Column widths in pixels: the main block is 818 px wide at 1280 (pages/parts/tables.py).
DECISION_WIDTHS = {"instance": 130, "decision": 470, "runs that pin it": 210}
# with the schedule across k beside the decision: the four in the same 818 px (a cell's rest on hover or widening)
ACROSS_WIDTHS = {"instance": 130, "decision": 300, "across k": 290, "runs that pin it": 98}
DECISION_HELP = ("What to deploy on each instance: the k to run and the batch above which to turn speculation off, "
                 "from the model at the instance's measured acceptance (or its step times or a step fit where they "
                 "decide). In brackets, the range the model's 80% band leaves for that batch.")
ACROSS_HELP = ("Where the step fits in use (Past runs' \"Use these step fits on every page\") hold the instance's runs "
               "at other k too: which k to run up to which batch, at the instance's measured acceptance.")


def fleet_decisions(report, shown, fits=(), method: str | None = None) -> None:
    """The decision per instance of `shown` (the page's rows, as its filters leave them), before anything else
    the page shows about them; where the session's step fits (`fits`) hold an instance's runs at other k too, the
    schedule across them beside it (show.decisions.server_decisions)."""
    keys = set(zip(shown["job"], shown["instance"], shown["model_name"]))
    rows = []
    for i in report.instances:
        if (i.job, i.instance, i.model_name) not in keys:
            continue
        judgement = i.judgement or live.judgement_of(i.stats, i.verdict)
        d, *across = server_decisions(i.verdict, judgement, fits, method, i.stats, "")
        rows.append({"instance": i.instance, "decision": d.line, "across k": across[0].line if across else "",
                     "runs that pin it": pin_batches(d.runs)})
    if not rows:
        return
    frame = pd.DataFrame(rows)
    widths = ACROSS_WIDTHS if frame["across k"].any() else DECISION_WIDTHS
    if "across k" not in widths:
        frame = frame.drop(columns="across k")
    decision_slot().dataframe(frame, key="fleet_decisions", hide_index=True, width="stretch", column_config={
        "instance": st.column_config.TextColumn("instance", width=widths["instance"], pinned=True),
        "decision": st.column_config.TextColumn("decision", width=widths["decision"], help=DECISION_HELP),
        "across k": st.column_config.TextColumn("across k", width=widths.get("across k"), help=ACROSS_HELP),
        "runs that pin it": st.column_config.TextColumn(
            "runs that pin it", width=widths["runs that pin it"],
            help="The two concurrencies to run, plain and speculative, that would pin an open threshold (`plan`)")})
