"""What to deploy in each engine's own terms (specmodel.export.deploy.deploy_by_engine), as tabs: the
command, the config, the first release of each key and the traps that apply."""

from __future__ import annotations

import json

import streamlit as st

from pages.parts.text import code, own_words, plain
from specmodel.export.deploy import deploy_by_engine
from specmodel.bounds import bounded_cache

LABELS = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}


@bounded_cache(64, key_args=2)
def _by_engine(scenario, schedule: tuple, summary):
    """deploy_by_engine once per scenario, schedule (the model's, or the user's runs') and process."""
    return deploy_by_engine(summary)


def deploy_tabs(summary) -> None:
    """One tab per engine; an engine that cannot run the method says why."""
    by_engine, why = _by_engine(summary.scenario, tuple(map(tuple, summary.schedule)), summary)
    for tab, engine in zip(st.tabs([LABELS[e] for e in LABELS]), LABELS):
        with tab:
            entry = by_engine[engine]
            if entry is None:
                st.info(f"{LABELS[engine]}: {plain(why[engine])}.")
                continue
            st.code(entry["command"], language="bash", wrap_lines=True)
            if entry.get("yaml"):
                st.code(entry["yaml"], language="yaml")
            elif entry["config"] is not None:
                st.code(json.dumps(entry["config"], indent=1), language="json")
            if entry["min_version"]:
                st.caption("First release that accepts each key: " + ", ".join(
                    f"`{code(k)}` {plain(v)}" for k, v in entry["min_version"].items()) + ".")
            for warning in entry["warnings"]:
                st.caption(f"⚠ {own_words(warning)}")  # the app's own words, flags in backticks
            if entry.get("note"):
                st.caption(own_words(entry["note"]))
