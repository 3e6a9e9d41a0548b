"""What-if page rerun after a slider change (AppTest) against a page with the same widgets and no model."""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]

# The What-if page's widgets (sidebar included) with nothing computed or drawn: the floor any page
# with these controls pays per rerun.
WIDGETS_ONLY = '''
import streamlit as st
from specmodel import presets
sb = st.sidebar
sb.selectbox("GPU", presets.gpu_names(), key="gpu")
sb.selectbox("GPUs per replica", [1, 2, 4, 8], key="tp")
sb.selectbox("Target model", presets.model_names(), key="target")
sb.selectbox("Speculation method", presets.METHODS, key="method")
sb.selectbox("Draft model", presets.model_names(), key="draft")
sb.select_slider("Mean context length", [128, 256, 512, 1024, 2048, 4096, 8192], value=1024, key="ctx")
st.title("What-if")
st.radio("Step times", ["from hardware", "measured"], key="timings")
st.slider("Acceptance", 0.0, 1.0, 0.7, 0.01, key="alpha")
st.text_input("profile", key="profile")
st.slider("k", 0, 8, 4, key="k")
st.slider("Concurrent sequences", 1, 512, 1, key="conc")
'''

# The same widgets and the same four charts, drawn from figures computed once: what the page would
# cost per rerun if the model were free.
CHARTS_NO_MODEL = WIDGETS_ONLY + '''
from specmodel import Scenario, figures

@st.cache_resource
def _figures():
    s = Scenario()
    return [figures.speedup_vs_alpha(s), figures.alpha_k_heatmap(s), figures.speedup_vs_concurrency(s),
            figures.best_k_by_batch(s)]

for i, fig in enumerate(_figures()):
    st.plotly_chart(fig, key=f"fig{i}")
'''


def _rerun_times(script: str, moves: list[float]) -> list[float]:
    at = AppTest.from_file(script, default_timeout=120).run()
    times = []
    for value in moves:
        at.slider(key="alpha").set_value(value)
        start = time.perf_counter()
        at.run()
        times.append(time.perf_counter() - start)
        assert not at.exception, at.exception
    return times


def run():
    moves = [0.3 + 0.05 * i for i in range(12)]
    with tempfile.TemporaryDirectory() as tmp:
        baseline = Path(tmp) / "widgets_only.py"
        baseline.write_text(f"import sys; sys.path.insert(0, {str(ROOT)!r})\n" + WIDGETS_ONLY)
        base = _rerun_times(str(baseline), moves)
        charts = Path(tmp) / "charts_no_model.py"
        charts.write_text(f"import sys; sys.path.insert(0, {str(ROOT)!r})\n" + CHARTS_NO_MODEL)
        drawn = _rerun_times(str(charts), moves)
    page = _rerun_times(str(ROOT / "app.py"), moves)
    b, c, p = statistics.median(base), statistics.median(drawn), statistics.median(page)
    return [
        f"widgets only, nothing drawn: median {b * 1e3:.0f} ms per rerun ({len(moves)} slider moves)",
        f"widgets + the same 4 charts, no model: median {c * 1e3:.0f} ms per rerun",
        f"What-if page (model, verdict, 4 charts): median {p * 1e3:.0f} ms per rerun",
        f"ratio to the page without the model: {p / c:.2f}x (goal ≤ 2x); to bare widgets: {p / b:.0f}x",
    ]
