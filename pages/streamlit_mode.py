"""The one workaround for a Streamlit behaviour (streamlit/streamlit#9624), isolated here and pinned by
tests/test_streamlit_mode.py, which fails when a Streamlit upgrade changes what it relies on.

Streamlit decides once per process, when the first session starts, whether the app is an old-style
multipage app: it is whenever a `pages/` folder sits beside the main script, which this project's
fixed layout requires. Until some session has run app.py's st.navigation, a link such as /live is
served from that folder: pages/live.py runs alone, without the shared sidebar. Streamlit 1.67 has no
setting for this (st.navigation turns the mode off only once it has run; `client.showSidebarNavigation`
only hides the list), so:

- every page file is named as its URL path (pages/live.py is /live, pages/past-runs.py is /past-runs),
  so the folder-mode lookup finds the page the link names instead of showing "Page not found";
- that page imports pages/common.py, which calls leave_pages_directory_mode(): the process switches
  to st.navigation mode and the run starts again through app.py, with the sidebar, on the same page.
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
