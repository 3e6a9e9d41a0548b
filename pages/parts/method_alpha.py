"""The What-if page's α when the sidebar's method changes: the new method's own default acceptance."""

from __future__ import annotations

import streamlit as st

from specmodel.model import scenario, spec_defaults
from specmodel.words import converted_words


def method_changed() -> None:
    """A new method brings its own default acceptance (model.spec_defaults, with its source) to the
    What-if page's α, instead of keeping the previous method's; a method without one keeps α."""
    method = st.session_state.get("method", "draft_model")
    chosen = scenario.resolved_method(method)
    label = chosen.label
    found = spec_defaults.method_default_acceptance(
        method, scenario.default_proposal_rate(chosen, scenario.resolved_engine(st.session_state.get("engine"))))
    if found is None:
        st.session_state["alpha_from"] = (f"{label} has no published default acceptance in the table: α kept.",
                                          st.session_state.get("alpha"))
        return
    alpha = round(found.alpha, 2)
    st.session_state["alpha"] = alpha
    converted = f" ({converted_words(found)})" if found.converted else ""
    st.session_state["alpha_from"] = (f"α {alpha:.2f}: {label}'s default acceptance, from {found.label} "
                                      f"({found.source}){converted}. Move the slider to your own.", alpha)


def engine_changed() -> None:
    """A new engine re-reads the method's default acceptance while it is still the one in use (the slider
    not moved): a published figure's convention depends on the engine (model.spec_defaults: Spec-Bench's
    n-gram figure counts every step, which vLLM's proposal rate must not count again)."""
    said, for_alpha = st.session_state.get("alpha_from") or (None, None)
    if said and for_alpha is not None and st.session_state.get("alpha") == for_alpha:
        method_changed()
