"""Entry point: page config, the shared sidebar, then the page router (`streamlit run app.py`)."""

import os
import time

import streamlit as st

from pages.parts.streamlit_mode import (app_run, imports_in_turn, leave_pages_directory_mode, plotly_waits_for_imports,
                                       skip_direct_run_check)

# Both before the page's own imports (numpy, the model): a fresh server's first session leaves folder mode
# (a rerun) before spending them, and the first element drawn does not walk every module loaded.
skip_direct_run_check()
leave_pages_directory_mode()
plotly_waits_for_imports()  # before any page builds a figure while another session imports pandas

with imports_in_turn(__file__):  # one session's imports at a time (pages/parts/streamlit_mode.py, 5)
    from pages.parts.common import render_sidebar  # after the rerun above
    from pages.parts.display import show_error
    from specmodel import SpecModelError

# Page titles are text only: emoji icons show as empty boxes where no emoji font is installed, and
# Material icons make the browser fetch them from the internet.
st.set_page_config(page_title="Does speculative decoding pay off?", layout="wide")

PAGES = [
    st.Page("pages/whatif.py", title="What-if", default=True),
    st.Page("pages/past-runs.py", title="Past runs", url_path="past-runs"),
    st.Page("pages/live.py", title="Live", url_path="live"),
    st.Page("pages/fleet.py", title="Fleet", url_path="fleet"),
    st.Page("pages/mix.py", title="Traffic mix", url_path="mix"),
    st.Page("pages/capacity.py", title="Capacity", url_path="capacity"),
]

# bench/bench_load.py sets this to a file: each script run appends its wall-clock end, page, outcome and
# duration, so the benchmark reports the server's own time per rerun beside what the browsers measured.
RUN_TIMES = os.environ.get("SPECMODEL_RUN_TIMES")

started = time.perf_counter()
page, outcome = None, "ok"
try:
    page = st.navigation(PAGES)
    render_sidebar(page.url_path)
    try:
        with app_run(page.url_path):
            page.run()
    except SpecModelError as exc:  # a sidebar choice the page cannot use (a Custom GPU's number out of range, a
        show_error(exc)            # config.json not given): said in the page, as the sidebar says it, never a traceback
        outcome = "SpecModelError"
except BaseException as exc:  # st.stop() and st.rerun() end a run by raising; so does an interrupted rerun
    outcome = type(exc).__name__
    raise
finally:
    if RUN_TIMES:
        with open(RUN_TIMES, "a", encoding="utf-8") as log:
            log.write(f"{time.time():.3f}\t{page.title if page else '?'}\t{outcome}\t"
                      f"{(time.perf_counter() - started) * 1e3:.2f}\n")
