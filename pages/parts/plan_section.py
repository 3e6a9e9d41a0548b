"""The measurement plan on What-if and Past runs (specmodel.plan.measure): the few runs that pin what
the model cannot know, as commands for the sidebar engine's benchmark; on Past runs, the band before
and after calibrating on the uploaded runs."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from pages.parts.display import show_error
from pages.parts.text import code, no_links, own_words, plain
from specmodel import Efficiency, SpecModelError, summarize
from specmodel.bounds import bounded_cache
from specmodel.plan.measure import calibrated_band, measurement_plan


@bounded_cache(64, key_args=1)
def _plan_of(scenario, summary):
    """The measurement plan of a scenario's summary, once per scenario and process (the summary is
    the scenario's own, so the scenario alone keys it, by its own hash)."""
    return measurement_plan(summary)


def plan_section(summary=None, scenario=None, rows=None, key: str = "plan") -> None:
    """The plan for a summary (or the scenario's); with `rows`, a button that calibrates on them and
    shows the band before and after."""
    st.subheader("Measure what the model cannot know")
    try:
        summary = summary if summary is not None else summarize(scenario)
        plan = _plan_of(summary.scenario, summary)
    except SpecModelError as exc:
        show_error(exc)
        return
    st.caption(f"{len(plan.runs)} runs on {plain(plan.engine)} with `{code(plan.bench)}` (about {plan.total_seconds / 60:.0f} "
               f"min with {len(plan.servers)} server starts): batch 1 pins the fixed cost of a step, the ends of the "
               "range where the model places the off threshold bracket it and separate the per-sequence cost. Upload the results "
               "on Past runs to calibrate.")
    # drawn while open (opening reruns the page), so a closed box sends no commands with the page
    with st.expander("The runs, as commands", key=f"{key}_commands", on_change="rerun") as commands:
        if commands.open:
            script = [f"# plain server\n{plan.servers['plain']}", f"# speculative server\n{plan.servers['speculative']}"]
            if "speculative_off" in plan.servers:
                script.append(f"# speculation configured, off\n{plan.servers['speculative_off']}")
            script += [f"# batch {r.concurrency}, {r.arm} "
                       f"(~{r.seconds / 60:.1f} min): {r.why}\n{r.command}" for r in plan.runs]
            st.code("\n\n".join(script), language="bash", wrap_lines=True)
            for note in plan.notes:  # the app's own words: commands and flags in backticks
                st.caption(own_words(note))
    if rows is None:
        return
    if st.button("Band before and after calibrating on these runs", key=f"{key}_band"):
        try:
            with st.spinner("Fitting …"):
                uncalibrated = replace(summary.scenario, efficiency=Efficiency())  # "before": the model as shipped
                st.session_state[f"{key}_band_result"] = calibrated_band(uncalibrated, rows)
        except SpecModelError as exc:
            show_error(exc)
    result = st.session_state.get(f"{key}_band_result")
    if result:
        b1, b2 = st.columns(2)
        b1.metric("Band before", f"{result['before'][0]:.2f}x – {result['before'][1]:.2f}x",
                  help="80% interval of the speedup at the sidebar's scenario, uncalibrated")
        b2.metric("Band after", f"{result['after'][0]:.2f}x – {result['after'][1]:.2f}x",
                  delta=f"{result['width_after'] - result['width_before']:+.2f} width", delta_color="inverse",
                  help=f"calibrated on these runs; the runs fit {result['engine_after']} best")
        st.caption(no_links(result["calibration"]["message"]))
