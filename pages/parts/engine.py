"""The sidebar's serving engine and its version ("0.5.9"): versions differ where it costs time."""

from __future__ import annotations

import streamlit as st

from pages.parts.method_alpha import engine_changed
from pages.parts.text import plain
from specmodel.model.engines import attention_backend, engine_names, parse_version
from specmodel.model.scenario import resolved_engine


def engine_inputs(sb, start: int) -> None:
    """Draw the engine selectbox (starting at option `start`) and the version box; an unreadable
    version is said under it (the band then spans the versions)."""
    sb.selectbox("Serving engine", engine_names(), key="engine", bind="query-params",
                 index=start, format_func=lambda e: resolved_engine(e).label, on_change=engine_changed,
                 help="Each engine's own cost per step, per draft pass and per sequence (scheduling, launches, "
                      "sampling), with its source; 'No engine overhead' is kernels only.")
    sb.text_input("Engine version", key="engine_version", bind="query-params", placeholder="e.g. 0.5.9 (optional)",
                  help="As released (0.5.9, v0.10.1): versions differ where it costs time (e.g. SGLang before 0.5.11 "
                       "runs speculation without its overlap scheduler). Without one the band spans the versions. "
                       "An attention backend forced with --attention-backend may follow (0.19.0 ROCM_AITER_FA).")
    version = st.session_state.get("engine_version")
    if version and parse_version(version) is None and attention_backend(st.session_state.get("engine"), version) is None:
        sb.warning(f"'{plain(version[:40])}' is not a version number (e.g. 0.5.9): taken as no version "
                   "given, so the band spans the versions.")
