"""The Fleet page's rules file and Grafana dashboard for download, for the sidebar's model and the page's window:
once the fleet is read, each instance carries the k, target and draft the fleet judged it on (`--instance`), so the
alert and the table agree on every instance."""

import streamlit as st

from pages.parts.display import show_error
from pages.parts.text import no_links
from specmodel import SpecModelError
from specmodel.export import dashboard, rules


def offer_rules(box, scenario, window: str, instances=()) -> None:
    """Fill `box` (an expander) with the caption and the two download buttons; a bad window or model is shown."""
    with box:
        st.caption(no_links("A rules file (recording rules for E, α and per-position acceptance per instance, and the "
                   f"alert `{rules.ALERT}` when E stays below the model's break-even at the instance's load) and a "
                   "Grafana dashboard over it, for the sidebar's GPU and models and the window above"
                   + (f", each of the {len(instances)} instance(s) read at the k, target and draft the table judges "
                      "it on" if instances else "") + ". Same as `python -m specmodel rules` and `python -m specmodel "
                   "dashboard` (with `--instance INSTANCE=K,TARGET,DRAFT` per instance)."))
        try:
            rules_text = rules.rules_yaml(scenario, window=window, instances=instances)
            dashboard_text = dashboard.dashboard_json(scenario, window=window, instances=instances)
        except SpecModelError as exc:
            show_error(exc)
            return
        dl = st.columns(2)
        dl[0].download_button("Prometheus rules (YAML)", rules_text, file_name="specmodel-rules.yml",
                              mime="application/yaml", key="fleet_rules_download")
        dl[1].download_button("Grafana dashboard (JSON)", dashboard_text, file_name="specmodel-dashboard.json",
                              mime="application/json", key="fleet_dashboard_download")
