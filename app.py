"""Entry point: page config, the shared sidebar, then the page router (`streamlit run app.py`)."""

import streamlit as st

from pages.common import render_sidebar

# Page titles are text only: emoji icons show as empty boxes where no emoji font is installed, and
# Material icons make the browser fetch them from the internet.
st.set_page_config(page_title="Does speculative decoding pay off?", layout="wide")

PAGES = [
    st.Page("pages/whatif.py", title="What-if", default=True),
    st.Page("pages/runs.py", title="Past runs", url_path="past-runs"),
    st.Page("pages/live.py", title="Live", url_path="live"),
    st.Page("pages/fleet.py", title="Fleet", url_path="fleet"),
    st.Page("pages/mix.py", title="Traffic mix", url_path="mix"),
    st.Page("pages/capacity.py", title="Capacity", url_path="capacity"),
]

page = st.navigation(PAGES)
render_sidebar()
page.run()
