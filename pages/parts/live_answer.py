"""The Live page's answer for the window: the decision line first (the step fit's threshold, measured step
times, or the model's schedule over k' ≤ k; under it the schedule across k where the calibration holds the server's
runs at other k too), the verdict in one short box, the two charts, then the figures,
and the whole verdict with what it rests on, its advice and the notes behind an expander."""

from __future__ import annotations

import streamlit as st

from pages.parts.calibration import calibration_badge
from pages.parts.common import base_scenario
from pages.parts.decision import decision_slot, show_decisions, why_box
from pages.parts.display import chart, column_config, show_readouts, tone_box
from pages.parts.text import no_links
from specmodel.metrics import live
from specmodel.model.decide import JUDGED
from specmodel.show import readouts
from specmodel.show.decisions import server_decisions
from specmodel.show.figures import live as figures_live
from specmodel.words.decision_line import verdict_at
from specmodel.words.served import figures_line


def _short(verdict, j) -> str:
    """The verdict a reader sees first, in one clause: the step times' where they decide, else the model's."""
    if j.decides:
        return verdict_at(j.label, j.speedup, j.band, j.batch) + f" ({j.rests_on})"
    if verdict.label not in JUDGED:  # off on the server, or unknown: the model's words say what they are
        return verdict.text
    return verdict_at(verdict.label, verdict.speedup, verdict.band, verdict.concurrency)


def show_results(session, window: str, assumed: tuple[float, int], fits, plain_ms: float | None, names) -> None:
    """The window's decision, verdict, charts and figures; the why and the notes in an expander."""
    stats, intervals = live.window_stats(session.snapshots, window)
    verdict = live.live_verdict(stats, base := base_scenario(alpha=assumed[0], k=int(assumed[1])), names)
    st.session_state["live_session"] = session = session.with_latest_point()
    j = live.judged(stats, verdict, fits, base.method.name, t_target_ms=plain_ms)
    show_decisions(decision_slot(), server_decisions(verdict, j, fits, base.method.name, stats,
                                                     stats.model_name or "this server"))
    tone_box(j.tone or verdict.tone)(f"**{no_links(f'Right now: {_short(verdict, j)}')}**")  # our bold, its text inert
    left, right = st.columns(2)
    with left:
        chart(figures_live.operating_point_figure(verdict), key="live_operating_point")
    with right:
        chart(figures_live.rolling_figure(list(session.history)), key="live_rolling")
    calibration_badge()
    st.caption(no_links(readouts.live_window_line(stats, session.snapshots[-1], intervals)))
    show_readouts(readouts.live_readouts(stats))
    _, text, advice = live.headline(verdict, j)
    under = [figures_line(list(j.measured), list(j.modelled))]
    if j.fit is not None and j.rests_on != "step fit":
        under.append(f"The step fit alone ({j.fit['setup']}): {j.fit['words']}")
    under.append(f"The model alone, on presets: {verdict.text}" if j.decides else readouts.live_band_line(verdict) or "")
    threshold = verdict.decision.threshold_text if verdict.decision is not None else None
    under.append(threshold[:1].upper() + threshold[1:] + "." if threshold else "")  # the crossover beside the threshold
    notes = stats.notes + verdict.notes + j.notes
    why_box(f"Why, and {len(notes)} note(s)" if notes else "Why", under, notes,
            verdict=(j.tone or verdict.tone, no_links(f"Right now: {text}"), no_links(advice)), notes_as="caption")
    if verdict.k_options:
        left, right = st.columns(2)
        with left:
            st.markdown("**What k' ≤ k would give at this load** (from the measured acceptance)")
            st.dataframe(readouts.live_k_rows(verdict), hide_index=True, key="live_k_table",
                         column_config=column_config(readouts.LIVE_K_COLUMNS))
        with right:
            if stats.survival:
                chart(figures_live.survival_figure(stats), key="live_survival")
