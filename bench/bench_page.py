"""What-if page rerun after a slider change (AppTest) against a page with the same widgets and no model."""

from __future__ import annotations

import contextlib
import statistics
import tempfile
from pathlib import Path

from streamlit.testing.v1 import AppTest

from bench import against_goal, timed_run

ROOT = Path(__file__).resolve().parents[1]

# The What-if page's widgets (the shared sidebar included: presets, engine, context, the link popover)
# with nothing computed or drawn: the floor any page with these controls pays per rerun.
WIDGETS_ONLY = '''
import streamlit as st
from specmodel import presets
sb = st.sidebar
sb.selectbox("GPU", presets.gpu_names(), key="gpu")
sb.selectbox("GPUs per replica", [1, 2, 4, 8], key="tp")
sb.selectbox("Target model", presets.model_names(), key="target")
sb.selectbox("Speculation method", presets.METHODS, key="method")
sb.selectbox("Draft model", presets.model_names(), key="draft")
sb.selectbox("Serving engine", ["vllm", "sglang", "trtllm", "ideal"], key="engine")
sb.select_slider("Mean context length", [128, 256, 512, 1024, 2048, 4096, 8192], value=1024, key="ctx")
sb.caption("Model parameters: defaults (η_bw 0.9, η_flops 0.65, engine overheads as listed for the engine).")
with sb.popover("Copy link to this view", width="stretch"):
    st.caption("This link opens this page with these inputs")
    st.code("http://localhost:8501/?alpha=0.7&k=4", language=None, wrap_lines=True)
st.title("What-if")
st.radio("Step times", ["from hardware", "measured"], key="timings")
st.slider("Acceptance", 0.0, 1.0, 0.7, 0.01, key="alpha")
st.text_input("profile", key="profile")
st.slider("k", 0, 8, 4, key="k")
st.number_input("Concurrent sequences", 1, 4096, step=1, key="conc")
st.select_slider("Concurrent sequences on a log scale", [2 ** i for i in range(10)], key="conc_slider")
'''

# The same widgets, the same verdict box, metrics, captions, mixed-traffic line, deploy block and tabs,
# measurement plan and the same five charts, drawn from values and figures computed once: what the page
# would cost per rerun if the model were free.
CHARTS_NO_MODEL = WIDGETS_ONLY + '''
import json
from specmodel import Scenario, summarize
from specmodel.export.deploy import deploy_by_engine
from specmodel.export.prediction import prediction_dict
from specmodel.plan.measure import measurement_plan
from specmodel.show.figures import whatif as figures

@st.cache_resource
def _view():
    s = Scenario()
    summary = summarize(s)
    return (prediction_dict(summary), [figures.speedup_vs_alpha(s), figures.alpha_k_heatmap(s),
                                       figures.speedup_vs_concurrency(s), figures.best_k_by_batch(s),
                                       figures.deploy_options(summary)],
            deploy_by_engine(summary)[0], measurement_plan(summary))

out, figs, by_engine, plan = _view()
st.caption("Speedup = speculative throughput ÷ plain throughput")
st.success("**" + out["verdict_text"] + "** — " + out["advice"])
st.badge("uncalibrated", color="gray", help="Model parameters at their defaults")
m = st.columns(5)
for col, (label, key) in zip(m, [("Speedup", "speedup"), ("Tokens per step E", "tokens_per_step"),
                                 ("Break-even α", "break_even_alpha"), ("Best k here", "best_k"),
                                 ("Crossover batch", "crossover_concurrency")]):
    col.metric(label, str(out[key]), help="help text")
st.caption("Plain: … ms per step · Speculative: … ms per step")
text, button = st.columns([4, 1.3], vertical_alignment="center")
text.caption("**My traffic is mixed.** One α stands for one kind of traffic …")
button.button("Open in Traffic mix", key="whatif_to_mix", width="stretch")
c1, c2 = st.columns(2)
for i, fig in enumerate(figs[:4]):
    with (c1 if i % 2 == 0 else c2):
        st.plotly_chart(fig, key=f"fig{i}", width="stretch", config={"displaylogo": False})
st.subheader("What to deploy")
st.write("vLLM `--speculative-config` with the best k for each batch-size range")
st.code(json.dumps(out["vllm_speculative_config"]), language="json", wrap_lines=True)
st.caption("Threshold caption.")
with st.expander("The same decision in vLLM, SGLang and TensorRT-LLM terms"):
    for tab, entry in zip(st.tabs(["vLLM", "SGLang", "TensorRT-LLM"]), by_engine.values()):
        with tab:
            if entry is None:
                st.info("cannot run the method")
                continue
            st.code(entry["command"], language="bash", wrap_lines=True)
            if entry["config"] is not None:
                st.code(json.dumps(entry["config"], indent=1), language="json")
st.plotly_chart(figs[4], key="fig4", width="stretch", config={"displaylogo": False})
st.subheader("Measure what the model cannot know")
st.caption(f"{len(plan.runs)} runs on {plan.engine} with `{plan.bench}`")
with st.expander("The runs, as commands", expanded=False):
    st.code("\\n\\n".join(r.command for r in plan.runs), language="bash", wrap_lines=True)
with st.expander("How the model computes this"):
    st.markdown("- Tokens per step: E = (1 − α^(k+1)) / (1 − α)")
'''


@contextlib.contextmanager
def _one_script_cache():
    """AppTest compiles every script afresh on each run (a new ScriptCache per run); a server
    compiles a page once and keeps its bytecode. Share one cache across runs, as the server does,
    so a long page is not charged a compile per rerun that no user ever waits for."""
    from streamlit.runtime.scriptrunner.script_cache import ScriptCache
    from streamlit.testing.v1 import app_test, local_script_runner

    shared = ScriptCache()
    saved = app_test.ScriptCache, local_script_runner.ScriptCache
    app_test.ScriptCache = local_script_runner.ScriptCache = lambda: shared
    try:
        yield
    finally:
        app_test.ScriptCache, local_script_runner.ScriptCache = saved


def _rerun(at: AppTest, alpha: float) -> float:
    at.slider(key="alpha").set_value(alpha)
    return timed_run(at)


def run():
    rounds, per_round = 3, 12
    # Every move goes to an α no arm has seen (the page caches per scenario); the three arms take
    # turns on each move, so a burst of load on this shared machine falls on all three alike.
    cold = [[round(0.30 + 0.05 * i + 0.01 * r, 2) for i in range(per_round)] for r in range(rounds)]
    times: dict[str, list[float]] = {"base": [], "drawn": [], "page": []}
    with tempfile.TemporaryDirectory() as tmp, _one_script_cache():
        scripts = {"base": Path(tmp) / "widgets_only.py", "drawn": Path(tmp) / "charts_no_model.py"}
        scripts["base"].write_text(f"import sys; sys.path.insert(0, {str(ROOT)!r})\n" + WIDGETS_ONLY)
        scripts["drawn"].write_text(f"import sys; sys.path.insert(0, {str(ROOT)!r})\n" + CHARTS_NO_MODEL)
        scripts["page"] = ROOT / "app.py"
        apps = {name: AppTest.from_file(str(path), default_timeout=120).run() for name, path in scripts.items()}
        order = list(apps)
        for n, alpha in enumerate(a for r in cold for a in r):
            for name in order[n % 3:] + order[:n % 3]:
                times[name].append(_rerun(apps[name], alpha))
        # Back to settings seen before (a slider moved there and back, another session's view).
        warm = [_rerun(apps["page"], alpha) for alpha in cold[0]]
    b, c, p, w = (statistics.median(times["base"]), statistics.median(times["drawn"]),
                  statistics.median(times["page"]), statistics.median(warm))
    return [
        f"widgets only, nothing drawn: median {b * 1e3:.1f} ms per rerun ({rounds * per_round} slider moves, "
        "arms interleaved)",
        f"the same widgets, boxes, plan and 5 charts, no model: median {c * 1e3:.1f} ms per rerun",
        f"What-if page (model, verdict, plan, 5 charts), α never seen before: median {p * 1e3:.1f} ms per rerun",
        f"ratio to the page without the model: {against_goal(p / c, 1.5)}; to bare widgets: {p / b:.1f}x",
        f"What-if page back at an α seen before (cached per scenario): median {w * 1e3:.1f} ms per rerun, "
        f"{w / c:.2f}x the page without the model",
    ]
