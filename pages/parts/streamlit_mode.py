"""The app's workarounds for Streamlit behaviours, isolated here and pinned by
tests/test_streamlit_mode.py, which fails when a Streamlit upgrade changes what they rely on.

1. Folder mode (streamlit/streamlit#9624). Streamlit decides once per process, when the first
   session starts, whether the app is an old-style multipage app: it is whenever a `pages/` folder
   sits beside the main script, which this project's fixed layout requires. Until some session has
   run app.py's st.navigation, a link such as /live is served from that folder: pages/live.py runs
   alone, without the shared sidebar. Streamlit 1.67 has no setting for this (st.navigation turns
   the mode off only once it has run; `client.showSidebarNavigation` only hides the list), so
   - every page file is named as its URL path (pages/live.py is /live, pages/past-runs.py is
     /past-runs), so the folder-mode lookup finds the page the link names, not "Page not found";
   - that page imports pages/parts/common.py, which calls leave_pages_directory_mode(): the process
     switches to st.navigation mode and the run starts again through app.py, on the same page.
2. Bound widgets given a value through session state: write_bound_url below.
3. The first element of a process walks the whole call stack (skip_direct_run_check below).
"""

from __future__ import annotations

import streamlit as st
from streamlit.runtime.pages_manager import PagesManager


def leave_pages_directory_mode() -> None:
    """If this process still serves pages from the `pages/` folder, switch it to st.navigation mode
    (app.py's page list) and rerun this session through app.py."""
    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()


def skip_direct_run_check() -> None:
    """3. Call before the first element of the process is drawn. Streamlit's first element in a process
    asks whether it runs in a plain `python` REPL instead of `streamlit run`, to print a warning
    (streamlit/delta_generator.py `_maybe_print_use_warning`, `env_util.is_repl`): `inspect.stack()`
    with source context, which maps every frame to its module by resolving the path of every module
    loaded (~900 with numpy and specmodel: ~90 ms of the first page's CPU). app.py runs only under
    `streamlit run` (or AppTest), where that warning never applies, so it is marked as given."""
    from streamlit import delta_generator

    delta_generator._use_warning_has_been_displayed = True


def write_bound_url(key: str, text: str) -> None:
    """2. Call after the widget bound to `key` (bind="query-params") ran: put `text` in the browser's
    address bar as that widget's URL value. A value given to a bound widget through session state (a
    link's "h100" read as "H100 SXM", a URL with credentials cleaned) reaches the widget, but Streamlit
    leaves the address bar with the link's original value or drops it as invalid; its own URL
    correction for bound widgets (the call below) writes it as the widget would have."""
    from streamlit.runtime.state.session_state_proxy import get_session_state

    with get_session_state().query_params() as params:
        params.set_corrected_value(key, text, "string_value")
