"""Credentials typed or linked into a metrics or Prometheus URL: moved out of the URL (and so out of the
page's link and the browser history) into the session-only user and password fields."""

from __future__ import annotations

import streamlit as st

from pages.parts.streamlit_mode import write_bound_url
from specmodel.metrics import scrape


def move_link_credentials(url_key: str, user_key: str, password_key: str) -> None:
    """Call before the URL widget: a `user:password@` in its value moves to the unlinked user and
    password fields, so the URL the page puts in its link, the browser history and every message
    carries no secret. A link opened with credentials in it seeds the widget on the first run (the
    URL wins there): `rerun_without_credentials` after the widget makes this run again on the rerun."""
    raw = st.session_state.get(url_key)
    if not raw or "@" not in raw:
        return
    url, user, password = scrape.split_credentials(raw)
    if user is None:
        return
    st.session_state[url_key] = url  # the bound widget's value: Streamlit rewrites the link from it
    st.session_state[user_key] = user
    if password:
        st.session_state[password_key] = password
    st.session_state[f"{url_key}_moved_note"] = (
        "The user name and password in the URL were moved to the credential fields below (kept for this "
        "session only), so the page link and your browser history do not carry them.")


def rerun_without_credentials(url_key: str, url: str) -> None:
    """Call right after the URL widget. If its value still holds credentials (a link opened with
    them), rerun at once, before anything is fetched; move_link_credentials then takes them out.
    After they were moved, write the clean URL into the browser's address bar: the frontend put
    the typed value there itself, and a bound widget's programmatic value does not replace it."""
    if "@" in url and scrape.split_credentials(url)[1] is not None:
        st.rerun()
    if st.session_state.get(f"{url_key}_moved_note"):
        write_bound_url(url_key, url)
