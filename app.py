"""Entry point: page config, the shared sidebar, then the page router (`streamlit run app.py`)."""

import streamlit as st

from pages.common import render_sidebar

st.set_page_config(page_title="Does speculative decoding pay off?", page_icon=":material/bolt:", layout="wide")

PAGES = [
    st.Page("pages/whatif.py", title="What-if", icon=":material/tune:", default=True),
    st.Page("pages/runs.py", title="Past runs", icon=":material/history:", url_path="past-runs"),
    st.Page("pages/live.py", title="Live", icon=":material/sensors:", url_path="live"),
    st.Page("pages/fleet.py", title="Fleet", icon=":material/lan:", url_path="fleet"),
    st.Page("pages/mix.py", title="Traffic mix", icon=":material/call_split:", url_path="mix"),
]

page = st.navigation(PAGES)
render_sidebar()
page.run()
