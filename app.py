"""Entry point: page config, the shared sidebar, then the page router (`streamlit run app.py`)."""

import streamlit as st

from pages.common import render_sidebar

# Icons are emoji, not Material icons: those make the browser fetch SVGs from the internet.
st.set_page_config(page_title="Does speculative decoding pay off?", layout="wide")

PAGES = [
    st.Page("pages/whatif.py", title="What-if", icon="🎛️", default=True),
    st.Page("pages/runs.py", title="Past runs", icon="🗂️", url_path="past-runs"),
    st.Page("pages/live.py", title="Live", icon="📡", url_path="live"),
    st.Page("pages/fleet.py", title="Fleet", icon="🛰️", url_path="fleet"),
    st.Page("pages/mix.py", title="Traffic mix", icon="🔀", url_path="mix"),
    st.Page("pages/capacity.py", title="Capacity", icon="🖥️", url_path="capacity"),
]

page = st.navigation(PAGES)
render_sidebar()
page.run()
