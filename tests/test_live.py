"""The live measurement on the model (verdict, k' ≤ k), its figures, and the `scrape` command."""

import dataclasses
import json
import subprocess
import sys

import pytest

from specmodel import Scenario, cli
from specmodel.metrics import live, prom, samples
from specmodel.model import acceptance
from specmodel.notes import severity_of
from specmodel.show.figures import live as figures_live
from tests import replay
from tests.cli_runner import run_cli as cli_run
from tests.conftest import ROOT
from tests.replay import ReplayServer


def window_stats(k=3, drafts=1000, per_position=(800, 500, 200), running=12.0, spec=True,
                 generation_tokens=5000) -> prom.LiveStats:
    w = prom.SpecWindow(server="vllm-v1", k=k if spec else None, window_s=10.0, spec_enabled=spec,
                        drafts=drafts if spec else None, draft_tokens=drafts * k if spec else None,
                        accepted=sum(per_position) if spec else None,
                        per_position=tuple(per_position) if spec else None, generation_tokens=generation_tokens,
                        running=running, waiting=0.0, model_name="meta-llama/Llama-3.1-8B-Instruct")
    return prom.stats_from_window(w)


def test_k_options_use_the_measured_profile_for_every_shorter_k():
    stats = window_stats()
    v = live.live_verdict(stats, Scenario())
    assert [o.k for o in v.k_options] == [0, 1, 2, 3]
    expected = acceptance.tokens_per_step_at_k([0, 1, 2, 3], survival=stats.survival)
    assert [o.tokens_per_step for o in v.k_options] == pytest.approx(list(expected))  # 1, 1.8, 2.3, 2.5
    assert v.k_options[0].speedup == 1.0
    assert v.concurrency == 12 and v.measured
    assert v.best_k == max(v.k_options, key=lambda o: (o.speedup, -o.k)).k
    assert v.speedup == pytest.approx(v.k_options[3].speedup)
    lo, hi = v.speedup_range
    assert lo <= v.speedup <= hi
    assert f"batch 12, measured E = {stats.tokens_per_step:.2f}" in v.text


def test_the_live_verdict_carries_the_models_band_with_the_acceptance_interval_folded_in():
    from specmodel.model.decide import BAND_RATIO

    few = live.live_verdict(window_stats(drafts=10, per_position=(8, 5, 2)), Scenario())  # 10 drafts: a wide α interval
    many = live.live_verdict(window_stats(drafts=40_000, per_position=(32_000, 20_000, 8_000)), Scenario())
    for v in (few, many):
        lo, hi = v.band
        assert lo <= v.speedup_range[0] and v.speedup_range[1] <= hi  # the counters' interval inside the band
        assert lo <= v.speedup_range[0] * BAND_RATIO[0] + 1e-9 and hi >= v.speedup_range[1] * BAND_RATIO[1] - 1e-9
        out = v.to_dict()
        assert (out["speedup_low"], out["speedup_high"]) == pytest.approx(v.band)
        assert out["uncertain"] == (lo < 1.0 < hi)
    assert few.band[1] - few.band[0] > many.band[1] - many.band[0]  # fewer drafts counted, a wider band
    off = live.live_verdict(window_stats(spec=False), Scenario.from_names(alpha=0.7, k=3))
    assert off.band is not None and off.band[0] < off.speedup < off.band[1]  # assumed α: the model's band alone


def test_load_decides_the_verdict_at_the_same_acceptance():
    light = live.live_verdict(window_stats(running=1), Scenario())
    heavy = live.live_verdict(window_stats(running=400), Scenario())
    assert light.label == "pays off"
    assert heavy.speedup < light.speedup
    assert heavy.concurrency == 400


def test_speculation_off_predicts_with_the_base_scenario_at_the_measured_load():
    stats = window_stats(spec=False, running=8)
    v = live.live_verdict(stats, Scenario.from_names(alpha=0.8, k=4))
    assert v.label == "off" and not v.measured and v.concurrency == 8
    assert "speculation is off on this server" in v.text and "k = 4 at α = 0.80" in v.text
    assert v.speedup == pytest.approx(float(live.predict(Scenario.from_names(alpha=0.8, k=4, concurrency=8)).speedup))


def test_model_mismatch_and_idle_server_are_noted():
    v = live.live_verdict(window_stats(running=0), Scenario.from_names(target="Llama 3.1 70B", gpu="H100", tp=4,
                                                                       draft="Llama 3.2 1B"))
    assert v.concurrency == 1
    assert any("serves Llama 3.1 8B but --target is Llama 3.1 70B: give --target Llama 3.1 8B" in n for n in v.notes)
    assert any("no requests were running" in n for n in v.notes)
    assert not any("sidebar" in n or "page" in n for n in v.notes)  # the command line's words by default


def test_the_caller_names_the_inputs_its_notes_point_to():
    page = live.InputNames(target="the sidebar's target", choose_target="choose {model} in the sidebar",
                           assumed="the α and k to assume on this page")
    base = Scenario.from_names(target="Llama 3.1 70B", gpu="H100", tp=4, draft="Llama 3.2 1B", alpha=0.6, k=3)
    mismatch = live.live_verdict(window_stats(), base, page)
    assert any("serves Llama 3.1 8B but the sidebar's target is Llama 3.1 70B: choose Llama 3.1 8B in the sidebar"
               in n for n in mismatch.notes)
    off = live.live_verdict(window_stats(spec=False), base, page)
    assert "α = 0.60 and k = 3 are assumed (the α and k to assume on this page)" in " ".join(off.notes)
    cli_off = live.live_verdict(window_stats(spec=False), base)
    assert "α = 0.60 and k = 3 are assumed (--alpha and --spec-k)" in " ".join(cli_off.notes)


def test_notes_that_call_for_attention_are_warnings_and_json_keeps_strings():
    off = window_stats(spec=False)
    restarted = prom.stats_from_window(prom.SpecWindow(
        server="vllm-v1", k=3, window_s=10.0, spec_enabled=True, drafts=0.0, draft_tokens=0.0, accepted=0.0,
        per_position=(0.0, 0.0, 0.0), generation_tokens=0.0, running=0.0, waiting=0.0, counter_reset=True))
    severities = {n: severity_of(n) for n in (*off.notes, *restarted.notes)}
    assert [n for n, s in severities.items() if s == "warning" and "off on this server" in n]
    assert [n for n, s in severities.items() if s == "warning" and "restarted" in n]
    assert [n for n, s in severities.items() if s == "warning" and "no drafts" in n]
    verdict = live.live_verdict(off, Scenario())
    assert verdict.notes and all(severity_of(n) == "info" for n in verdict.notes)
    assert json.loads(json.dumps(off.to_dict()))["notes"] == [str(n) for n in off.notes]


def test_verdict_tones():
    assert live.live_verdict(window_stats(running=1), Scenario()).tone == "good"
    # a loss whose band stays below 1.0 is red; with fewer drafts the same E's band reaches 1.03x: amber
    assert live.live_verdict(window_stats(running=1, drafts=10000, per_position=(200, 20, 2)), Scenario()).tone == "bad"
    assert live.live_verdict(window_stats(running=1, per_position=(50, 10, 1)), Scenario()).tone == "caution"
    assert live.live_verdict(window_stats(spec=False), Scenario()).tone == "neutral"
    # the recorded server as its load rises: where the band straddles 1.0 a "pays off" reads amber, not green
    snaps = [samples.live_sample_snapshot(i, 10.0 * i) for i in range(samples.live_sample_length())]
    verdicts = [live.live_verdict(prom.stats_from_window(prom.window_between(a, b)), Scenario())
                for a, b in zip(snaps, snaps[1:])]
    unsure = [v for v in verdicts if v.label == "pays off" and v.uncertain]
    assert unsure and {v.tone for v in unsure} == {"caution"}


def test_a_session_keeps_the_newest_snapshots_and_starts_over_for_another_model():
    snap = samples.live_sample_snapshot(0, 0.0)
    session = live.LiveSession(("url", 0), cap=3)
    for t in range(5):
        session = session.with_snapshot(dataclasses.replace(snap, at=float(t)))
    assert [s.at for s in session.snapshots] == [2.0, 3.0, 4.0] and session.first_model == snap.model_name
    session = session.with_latest_point().with_latest_point()  # the same interval twice: one point
    assert [p["at"] for p in session.history] == [4.0]
    other = session.with_snapshot(dataclasses.replace(snap, at=5.0, model_name="another"))
    assert [s.at for s in other.snapshots] == [5.0] and other.history == ()
    assert other.first_model == snap.model_name  # the session stays on the model the first scrape chose
    assert other.watching(("url", 0)) is other and other.watching(("url", 3)).snapshots == ()


def test_history_is_capped_and_windows_pick_their_start():
    history = []
    for i in range(400):
        history = live.append_history(history, {"at": float(i)})
    assert len(history) == live.HISTORY_CAP and history[0]["at"] == 400 - live.HISTORY_CAP

    class S:
        def __init__(self, at):
            self.at = at
    snaps = [S(float(t)) for t in range(0, 130, 10)]  # every 10 s for two minutes
    assert live.window_start(snaps, "last interval") == len(snaps) - 2
    assert snaps[-1].at - snaps[live.window_start(snaps, "1 min")].at == 60
    assert live.window_start(snaps, "session") == 0


def test_figures_have_titles_units_and_the_operating_point():
    stats = window_stats()
    v = live.live_verdict(stats, Scenario())
    fig = figures_live.operating_point_figure(v)
    assert "Operating point" in fig.layout.title.text
    assert "(running" in fig.layout.xaxis.title.text and "(×)" in fig.layout.yaxis.title.text
    point = [t for t in fig.data if t.name == "right now (bar: 80% band)"][0]
    assert list(point.x) == [12] and point.y[0] == pytest.approx(v.speedup)
    hist = [live.history_point(stats, 1.8e9 + 5 * i, v) for i in range(3)]
    rolling = figures_live.rolling_figure(hist)
    names = {t.name for t in rolling.data}
    assert {"tokens per step E", "running requests", "E, 95% interval"} <= names
    assert "(tokens)" in rolling.layout.yaxis.title.text and "(count)" in rolling.layout.yaxis2.title.text
    surv = figures_live.survival_figure(stats)
    assert list(surv.data[0].y) == pytest.approx([0.8, 0.5, 0.2])
    assert "(probability)" in surv.layout.yaxis.title.text


def run_cli(args, capsys):
    code = cli.main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_scrape_command_json_has_the_public_keys(capsys):
    with ReplayServer("vllm_v1_specdecode_sample.txt", increments=replay.V1_SPEC, gauges=replay.V1_GAUGES) as srv:
        code, out, err = run_cli(["scrape", srv.url, "--window", "0.1", "--json"], capsys)
    assert code == 0, err
    data = json.loads(out)
    for key in ("server", "k", "tokens_per_step", "alpha", "per_position", "draft_acceptance_rate",
                "running_requests", "generation_tok_s", "window_s", "verdict"):
        assert key in data
    assert (data["server"], data["k"], data["tokens_per_step"]) == ("vllm-v1", 3, 2.5)
    assert data["per_position"] == pytest.approx([0.8, 0.5, 0.2])
    assert data["draft_acceptance_rate"] == pytest.approx(0.5) and data["running_requests"] == 12
    assert data["verdict"] in ("pays off", "borderline", "loses")
    assert data["window_s"] >= 0.1 and data["generation_tok_s"] == pytest.approx(2500 / data["window_s"], rel=0.05)


def test_scrape_command_for_speculation_off_and_sglang(capsys):
    with ReplayServer("vllm_v1_nospec_sample.txt", increments=replay.V1_NOSPEC) as srv:
        code, out, _ = run_cli(["scrape", srv.url, "--window", "0.1", "--json"], capsys)
    data = json.loads(out)
    assert code == 0 and data["verdict"] == "off" and data["tokens_per_step"] is None
    assert "model predicts k = 4" in data["verdict_text"]
    with ReplayServer("sglang_specdecode_sample.txt", increments=replay.SGLANG) as srv:
        code, out, _ = run_cli(["scrape", srv.url, "--window", "0.1"], capsys)
    assert code == 0 and "sglang" in out and "tokens per step:  2.500" in out


def test_scrape_text_puts_each_source_after_the_figure_it_describes(capsys):
    # Issue 39: "E, α, draft acceptance rate 0.998 [accepted / drafts counters]" read as if the rate came
    # from accepted ÷ drafts; the label belongs to E, and the rate has its own source.
    with ReplayServer("vllm_v1_specdecode_sample.txt", increments=replay.V1_SPEC) as srv:
        code, out, _ = run_cli(["scrape", srv.url, "--window", "0.1"], capsys)
    [line] = [ln for ln in out.splitlines() if "tokens per step:" in ln]
    assert code == 0 and line.split("[")[0].rstrip().startswith("  tokens per step:  2.500")
    e_part, rate_part = line.split(", draft acceptance rate ")
    assert e_part.split(", α")[0].endswith("[accepted / drafts counters]")
    assert rate_part == "0.500 [accepted / draft tokens counters]"
    with ReplayServer("sglang_specdecode_sample.txt", increments=replay.SGLANG) as srv:
        code, out, _ = run_cli(["scrape", srv.url, "--window", "0.1"], capsys)
    [line] = [ln for ln in out.splitlines() if "tokens per step:" in ln]
    assert line.endswith("draft acceptance rate 0.500 [(E − 1) / k]")  # SGLang counts no draft tokens


@pytest.mark.parametrize("mode, message", [("404", "HTTP 404"), ("html", "HTML page")])
def test_scrape_command_failures_exit_2_with_one_line(mode, message, capsys):
    with ReplayServer("vllm_v1_specdecode_sample.txt", mode=mode) as srv:
        code, out, err = run_cli(["scrape", srv.url, "--window", "0.1"], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err


def test_scrape_command_without_traffic_exits_2(capsys):
    with ReplayServer("vllm_v1_specdecode_sample.txt") as srv:
        code, _, err = run_cli(["scrape", srv.url, "--window", "0.1"], capsys)
    assert code == 2 and "no drafts were proposed" in err


def test_scrape_command_as_a_process_and_its_argument_errors():
    with ReplayServer("vllm_v1_specdecode_sample.txt", increments=replay.V1_SPEC) as srv:
        done = subprocess.run([sys.executable, "-m", "specmodel", "scrape", srv.url, "--window", "0.1", "--json"],
                              capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["tokens_per_step"] == 2.5
    bad = cli_run("scrape", "http://127.0.0.1:9/metrics", "--window", "0")  # argparse's refusal: in-process
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--window" in bad.stderr


def _snapshots_with_running(running_levels):
    """Snapshots of the recorded vLLM V1 page 10 s apart, counters advancing alike, the running gauge as given."""
    base = prom.parse_snapshot((ROOT / "tests/fixtures/vllm_v1_specdecode_sample.txt").read_text(), at=0.0)
    return [dataclasses.replace(base, at=10.0 * i, counters={n: v * (1 + i) for n, v in base.counters.items()},
                                per_position=tuple(v * (1 + i) for v in base.per_position),
                                gauges={**base.gauges, "running": float(r)})
            for i, r in enumerate(running_levels)]


def test_a_0_to_32_jump_is_judged_at_the_window_end_and_says_load_changed():
    stats = prom.stats_from_window(prom.window_over(_snapshots_with_running([0, 0, 32])))
    assert stats.running == pytest.approx(8.0)  # the mean over the window: no operating point the server ran at
    assert (stats.running_end, stats.running_low, stats.running_high) == (32.0, 0.0, 32.0)
    v = live.live_verdict(stats, Scenario())
    assert v.concurrency == 32 and f"at batch 32, measured E = {stats.tokens_per_step:.2f}" in v.text
    [note] = [n for n in v.notes if "load changed" in n]
    assert severity_of(note) == "warning" and "from 0 to 32" in note and "judged at the window's end, batch 32" in note


def test_a_load_that_falls_says_it_fell():
    # Issue 39: a real vLLM bench run ended inside the window (16 running, then 0): the warning printed
    # "went from 0 to 16", the opposite of what happened.
    stats = prom.stats_from_window(prom.window_over(_snapshots_with_running([16, 0])))
    assert (stats.running_start, stats.running_end) == (16.0, 0.0)
    v = live.live_verdict(stats, Scenario())
    [note] = [n for n in v.notes if "load changed" in n]
    assert "went from 16 to 0" in note and "from 0 to 16" not in note
    assert "judged at the window's end, batch 1" in note
    snaps = _snapshots_with_running([16, 24, 16, 0])  # over several scrapes: first to last, the peak beside it
    [note] = [n for n in live.live_verdict(prom.stats_from_window(prom.window_over(snaps)), Scenario()).notes
              if "load changed" in n]
    assert "went from 16 to 0 (lowest 0, highest 24 within the window)" in note
    snaps = _snapshots_with_running([0, 32, 0])  # a burst that came and went: no direction to tell
    [note] = [n for n in live.live_verdict(prom.stats_from_window(prom.window_over(snaps)), Scenario()).notes
              if "load changed" in n]
    assert "ranged from 0 to 32 within the window, 0 at its end" in note


def test_a_steady_load_has_no_load_change_note():
    v = live.live_verdict(prom.stats_from_window(prom.window_over(_snapshots_with_running([31, 32, 32]))), Scenario())
    assert v.concurrency == 32 and not [n for n in v.notes if "load changed" in n]


def test_an_idle_server_with_speculation_on_is_predicted_at_its_own_k_with_the_assumed_alpha():
    # vLLM exposes k (1 + the largest per-position label) even in a window with no drafts: the prediction is
    # for the k the server runs, only α is the assumed one.
    idle = live.live_verdict(window_stats(k=3, drafts=0, per_position=(0, 0, 0), running=0.0, generation_tokens=0),
                             Scenario.from_names(alpha=0.6, k=5))
    assert not idle.measured and idle.label == "unknown"
    assert "the model predicts k = 3 at α = 0.60" in idle.text
    notes = " ".join(idle.notes)
    assert "α = 0.60 is assumed (--alpha and --spec-k), not measured on this server; k = 3 is the server's" in notes
    assert "k = 5" not in notes and "k = 5" not in idle.text
    # the same window with tokens generated and no draft: not idle but switched off at this load (configured off)
    off = live.live_verdict(window_stats(k=3, drafts=0, per_position=(0, 0, 0), running=12.0),
                            Scenario.from_names(alpha=0.6, k=5))
    assert off.label == "off" and off.text.startswith("speculation is configured but switched off at this load")
