"""Entry point: page config, the shared sidebar, then the page router (`streamlit run app.py`)."""

import streamlit as st

from pages.common import render_sidebar

st.set_page_config(page_title="Does speculative decoding pay off?", page_icon="⚡", layout="wide")

PAGES = [
    st.Page("pages/whatif.py", title="What-if", icon="🎛️", default=True),
    st.Page("pages/runs.py", title="Past runs", icon="📂", url_path="past-runs"),
]

page = st.navigation(PAGES)
render_sidebar()
page.run()
