"""`scrape` against a real HTTP server replaying a real vLLM 0.32 server's /metrics (issue 39).

tests/fixtures/real_engine/metrics/ holds the /metrics page of the lab's n-gram and draft-model servers
right before and right after each `vllm bench serve` run (tests/fixtures/real_engine/README.md). A
server on 127.0.0.1 answers the "before" page, then the "after" page, and `scrape` is run over that
window in-process: what it prints must be what the two pages say, computed here from the files.
The verdict (judged on presets; the served 3.1 M-parameter 'tiny-llama' is none) is the next issue's
work and is not asserted, only that the output says what it was judged on.
"""

import json
import re
from http.server import BaseHTTPRequestHandler

import pytest

from specmodel import cli
from tests.conftest import ROOT
from tests.replay import start_quiet_server

METRICS = ROOT / "tests/fixtures/real_engine/metrics"


def _counter(text: str, name: str) -> float:
    """One vLLM counter's value on a page (the lab's servers have one engine, one model)."""
    [value] = re.findall(rf"^{re.escape(name)}\{{[^}}]*\}} (\S+)$", text, re.M)
    return float(value)


class _Pages:
    """A 127.0.0.1 server answering `pages` in turn (the last one from then on)."""

    def __init__(self, pages: list[bytes]):
        served = []

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):  # noqa: N802 (http.server's naming)
                body = pages[min(len(served), len(pages) - 1)]
                served.append(self.path)
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.served = served
        self.server = start_quiet_server(Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/metrics"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def _scrape(arm: str, capsys, *extra: str) -> tuple[str, str, str]:
    """(before page, after page, what scrape printed) for the arm's c = 16 run."""
    before = (METRICS / f"{arm}_c16_before.txt").read_text()
    after = (METRICS / f"{arm}_c16_after.txt").read_text()
    with _Pages([before.encode(), after.encode()]) as srv:
        capsys.readouterr()
        code = cli.main(["scrape", srv.url, "--window", "0.1", *extra])
        out = capsys.readouterr().out
        assert srv.served == ["/metrics", "/metrics"]
    assert code == 0
    return before, after, out


def _deltas(before: str, after: str) -> tuple[float, float, float]:
    names = ("vllm:spec_decode_num_accepted_tokens_total", "vllm:spec_decode_num_drafts_total",
             "vllm:spec_decode_num_draft_tokens_total")
    return tuple(_counter(after, n) - _counter(before, n) for n in names)


@pytest.mark.parametrize("arm, drafts_in_readme", [("ngram", 1732), ("draft", 1668)])
def test_scrape_of_the_real_engine_prints_the_counters_figures(arm, drafts_in_readme, capsys):
    before, after, out = _scrape(arm, capsys)
    accepted, drafts, drafted = _deltas(before, after)
    assert drafts == drafts_in_readme  # the README's table, read from the same pages
    e, rate = accepted / drafts + 1, accepted / drafted
    assert "model tiny-llama, k = 4 (" in out
    [line] = [ln for ln in out.splitlines() if ln.startswith("  tokens per step:")]
    assert line.startswith(f"  tokens per step:  {e:.3f} (95% ")
    assert f"draft acceptance rate {rate:.3f} [accepted / draft tokens counters]" in line
    assert re.search(rf"{e:.3f} \(95% [^)]*\) \[accepted / drafts counters\], α ", line)
    # the verdict rests on presets, and its headline says so (the verdict itself is not asserted here);
    # 'tiny-llama' is no preset: not the TinyLlama 1.1B preset, whose names are one word ('TinyLlama')
    [verdict] = [ln for ln in out.splitlines() if ln.startswith("  verdict:")]
    assert "the served model 'tiny-llama' is no preset: judged as Llama 3.1 8B on L40S (assumed)" in verdict
    assert "the server serves 'tiny-llama', which has no preset: the model uses Llama 3.1 8B (--target)" in out
    assert "TinyLlama" not in out

    _, _, out = _scrape(arm, capsys, "--json")
    data = json.loads(out)
    assert data["tokens_per_step"] == pytest.approx(e, rel=1e-9)
    assert data["spec_decode_acceptance_length"] == pytest.approx(e, rel=1e-9)
    assert data["draft_acceptance_rate"] == pytest.approx(rate, rel=1e-9)
    assert data["k"] == 4 and data["drafts"] == drafts and data["model_name"] == "tiny-llama"
    assert data["mean_draft_length"] == pytest.approx(drafted / drafts)
    assert data["model_assumed"] is True
    assert data["judged_as"] == "the served model 'tiny-llama' is no preset: judged as Llama 3.1 8B on L40S (assumed)"
    assert "TinyLlama" not in out
    assert data["model"]["target"] == "Llama 3.1 8B" and data["verdict_text"]  # the keys kept


def test_a_served_model_that_is_no_preset_is_named_in_the_headline(capsys):
    # The same pages with the served model renamed to a name no preset reads as.
    pages = [(METRICS / f"draft_c16_{when}.txt").read_text().replace('model_name="tiny-llama"',
                                                                     'model_name="lab-custom-3m"')
             for when in ("before", "after")]
    capsys.readouterr()
    with _Pages([p.encode() for p in pages]) as srv:  # each scrape command reads "before", then "after"
        assert cli.main(["scrape", srv.url, "--window", "0.1", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    with _Pages([p.encode() for p in pages]) as srv:
        assert cli.main(["scrape", srv.url, "--window", "0.1", "--target", "Llama 2 7B", "--gpu", "H100"]) == 0
    out = capsys.readouterr().out
    assert data["model_assumed"] is True
    assert data["judged_as"] == "the served model 'lab-custom-3m' is no preset: judged as Llama 3.1 8B on L40S (assumed)"
    [verdict] = [ln for ln in out.splitlines() if ln.startswith("  verdict:")]
    # the headline leads with what the verdict rests on: presets, no step fit or measured plain step given
    assert verdict.startswith("  verdict:          rests on presets (no step fit or measured plain step): the served "
                              "model 'lab-custom-3m' is no preset: judged as Llama 2 7B on H100 SXM (assumed): ")
    assert data["verdict_rests_on"] == "presets" and data["headline"].startswith("rests on presets (")


# --- issue 44, item 2: the server's own timing, a saved step fit, and what the verdict rests on -----------------

REAL = ROOT / "tests/fixtures/real_engine"


def _histogram(text: str, name: str) -> float:
    """One histogram's _sum or _count on a page (one engine, one model)."""
    return _counter(text, name)


def _timing(arm: str) -> dict:
    """The c = 16 window's step timing computed here from the two pages: vLLM 0.32 observes the inter-token
    latency once per request and engine step (a verify step's E tokens at once), the first token as time to
    first token, and iteration_tokens_total once per engine step."""
    before, after = ((METRICS / f"{arm}_c16_{w}.txt").read_text() for w in ("before", "after"))

    def d(name):
        return _histogram(after, name) - _histogram(before, name)
    latency, observations = d("vllm:inter_token_latency_seconds_sum"), d("vllm:inter_token_latency_seconds_count")
    decode = d("vllm:generation_tokens_total") - d("vllm:time_to_first_token_seconds_count")
    return {"ms_per_token": 1000 * latency / decode, "batch": observations / d("vllm:iteration_tokens_total_count")}


def _recorded_speedup(arm: str) -> float:
    """The bench's own speedup at c = 16: the arm's output throughput over plain's (README's table)."""
    tput = {a: json.loads((REAL / f"{a}_c16.json").read_text())["output_throughput"] for a in (arm, "plain")}
    return tput[arm] / tput["plain"]


@pytest.fixture(scope="module")
def calibration(tmp_path_factory):
    """The recorded runs calibrated on concurrency 1 and 4, as the issue asks: (file, its step fits by method)."""
    path = tmp_path_factory.mktemp("real_engine") / "cal.json"
    runs = sorted(str(p) for p in REAL.glob("*_c*.json"))
    assert cli.main(["runs", *runs, "--calibrate", "--fit-up-to", "4", "--save-calibration", str(path)]) == 0
    fits = {e["method"]: e["fit"] for e in json.loads(path.read_text())["step_fits"]}
    assert set(fits) == {"draft_model", "ngram"} and all(f["batches"] == [1.0, 4.0] for f in fits.values())
    return path, fits


def _linear(arm_fit: dict, batch: float) -> float:
    terms = arm_fit["terms"]
    return terms["fixed_ms"] + terms["per_sequence_ms"] * batch


def _scrape_json(arm: str, capsys, *extra: str, plain_pages: str | None = None) -> dict:
    pages = [(METRICS / f"{arm}_c16_{w}.txt").read_bytes() for w in ("before", "after")]
    capsys.readouterr()
    with _Pages(pages) as srv:
        if plain_pages is None:
            assert cli.main(["scrape", srv.url, "--window", "0.1", "--json", *extra]) == 0
        else:
            plain = [(METRICS / f"{plain_pages}_c16_{w}.txt").read_bytes() for w in ("before", "after")]
            with _Pages(plain) as p:
                assert cli.main(["scrape", srv.url, "--window", "0.1", "--json", "--plain-url", p.url, *extra]) == 0
                assert p.served == ["/metrics", "/metrics"]
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("arm", ["draft", "ngram"])
def test_the_servers_own_step_timing_is_read_from_its_histograms(arm, capsys):
    want = _timing(arm)
    data = _scrape_json(arm, capsys)
    assert data["timing"]["series"] == "vllm:inter_token_latency_seconds"
    assert data["timing"]["ms_per_token"] == pytest.approx(want["ms_per_token"], rel=1e-6)
    assert data["timing"]["batch"] == pytest.approx(want["batch"], rel=1e-6)
    # Recorded: draft 7.58 ms a token at batch 14.5, n-gram 86.9 ms at 14.5 (plain's own window: 12.1 ms at 12.8).
    assert want["ms_per_token"] == pytest.approx({"draft": 7.58, "ngram": 86.9}[arm], abs=0.05)
    # no step fit and no plain step: the headline says the verdict rests on presets, the step times are modelled
    assert data["verdict_rests_on"] == "presets" and data["headline"].startswith("rests on presets (")
    assert data["figures_modelled"] == ["every step time (the model on presets: Llama 3.1 8B on L40S)"]


def test_the_ngram_window_with_the_calibration_does_not_say_pays_off(calibration, capsys):
    """Calibrated on c = 1 and 4, the c = 16 window of the n-gram server: its measured 86.9 ms a token against
    the fit's plain step at the window's batch (14.5; the plain runs at 1, 4 and 16 pin it) loses, and so does the
    fit alone. Recorded: 0.15x."""
    path, fits = calibration
    timing = _timing("ngram")
    data = _scrape_json("ngram", capsys, "--calibration", str(path), "--method", "ngram")
    plain_ms = _linear(fits["ngram"]["plain"], round(timing["batch"], 1))
    expected = plain_ms / timing["ms_per_token"]
    assert data["verdict_rests_on"] == "measured + step fit"
    assert data["timed"]["speedup"] == pytest.approx(expected, abs=1e-3)
    assert expected == pytest.approx(0.158, abs=0.001)  # the plain step pinned by the plain run at 16 too
    assert abs(expected / _recorded_speedup("ngram") - 1) < 0.20  # 0.138 against the bench's 0.155
    assert data["verdict"] == "loses" and data["decision"] == "loses" and data["timed"]["speedup_high"] < 1
    assert "pays off" not in data["verdict_text"] and data["verdict_text"].startswith("measured + step fit: loses: 0.16x")
    # the fit alone predicts a loss too: its speculative line at 14.5 (E 4.73) against its plain one
    spec_ms = _linear(fits["ngram"]["spec"], 14.5)
    assert data["step_fit"]["decision"] == "loses"
    assert data["step_fit"]["speedup"] == pytest.approx(plain_ms / spec_ms * data["tokens_per_step"]
                                                        / fits["ngram"]["tokens_per_step"], rel=1e-3)
    assert data["step_fit"]["speedup"] == pytest.approx(0.103, abs=0.001)
    assert "time per token, speculative (vllm:inter_token_latency_seconds)" in data["figures_measured"]
    assert data["figures_modelled"] == ["time per token, plain (the step fit of runs at 1, 4 and plain runs at 16)"]
    assert data["model_verdict"] == "pays off"  # the model on presets (an 8B model on an L40S) still would say so


def test_the_draft_window_measures_what_the_fit_got_wrong(calibration, capsys):
    """The same for the draft-model server. The fit of c = 1 and 4 predicts a loss at 14.5 (0.81x: its speculative
    line grows from 3.0 ms a token at 1 to 16.9 ms at 14.5), but the window measured 7.58 ms a token: against the
    fit's plain step (13.7 ms: the plain runs at 1, 4 and 16 pin it) that is 1.81x, and the bench recorded 1.48x
    at c = 16 (README: draft 1621 tok/s, plain 1099; the plain server's own window ran at batch 12.8, not 16, so
    its throughput's step at 16 reads long). The measurement decides, says it pays off, and says the fit does
    not hold at this load."""
    path, fits = calibration
    timing = _timing("draft")
    data = _scrape_json("draft", capsys, "--calibration", str(path), "--method", "draft_model")
    expected = _linear(fits["draft_model"]["plain"], round(timing["batch"], 1)) / timing["ms_per_token"]
    assert data["timed"]["speedup"] == pytest.approx(expected, abs=1e-3)
    assert expected == pytest.approx(1.81, abs=0.01) and _recorded_speedup("draft") > 1.0
    assert data["verdict"] == "pays off" and data["verdict_rests_on"] == "measured + step fit"
    assert data["step_fit"]["decision"] == "loses" and data["step_fit"]["speedup"] == pytest.approx(0.81, abs=0.01)
    [contradicted] = [w for w in data["warnings"] if "the fit does not hold at this load" in w]
    assert "speculative step at 16.9 ms a token at batch 14.5; this window measured 7.6 ms" in contradicted
    assert "stops paying" not in data["advice"]  # a fit the window contradicts advises nothing


def test_without_a_method_the_calibrations_two_fits_are_named_not_guessed(calibration, capsys):
    path, _fits = calibration
    data = _scrape_json("draft", capsys, "--calibration", str(path))
    assert data["verdict_rests_on"] == "presets" and data["step_fit"] is None
    [why] = [w for w in data["warnings"] if "holds 2 step fits" in w]
    assert "Draft model (draft_model, k=4)" in why and "give the method (--method)" in why


@pytest.mark.parametrize("arm", ["draft", "ngram"])
def test_a_plain_servers_window_is_the_measured_plain_arm(arm, capsys):
    """--plain-url: the plain server's c = 16 pages over the same window; both arms measured."""
    spec, plain = _timing(arm), _timing("plain")
    data = _scrape_json(arm, capsys, plain_pages="plain")
    assert data["verdict_rests_on"] == "measured"
    assert data["timed"]["speedup"] == pytest.approx(plain["ms_per_token"] / spec["ms_per_token"], abs=1e-3)
    # 1.60x and 0.140x against the bench's 1.48x and 0.155x
    assert abs(data["timed"]["speedup"] / _recorded_speedup(arm) - 1) < 0.20
    assert data["verdict"] == {"draft": "pays off", "ngram": "loses"}[arm] and data["figures_modelled"] == []
    # the plain server ran at batch 12.8, the speculative one at 14.5: within a quarter, so no warning
    assert not any("not at the same load" in w for w in data["warnings"])


def test_a_measured_batch_one_plain_step_is_grown_by_the_model_and_said_so(capsys):
    data = _scrape_json("ngram", capsys, "--t-target-ms", "7.4")
    assert data["verdict_rests_on"] == "measured + model" and data["verdict"] == "loses"
    [modelled] = data["figures_modelled"]
    assert "from the measured batch-1 step of 7.4 ms" in modelled


def test_the_text_leads_with_the_measured_verdict_then_the_fit_then_the_model(calibration, capsys):
    path, _fits = calibration
    _, _, out = _scrape("ngram", capsys, "--calibration", str(path), "--method", "ngram")
    lines = out.splitlines()
    order = [next(i for i, ln in enumerate(lines) if ln.startswith(p))
             for p in ("  verdict:", "  step fit alone:", "  model (presets):", "  figures:")]
    assert order == sorted(order)
    assert lines[order[0]].startswith("  verdict:          measured + step fit: loses: 0.16x")
    assert "pays off" not in lines[order[0]] and "loses: 0.10×" in lines[order[1]]


PASS6 = ROOT / "tests/fixtures/real_engine/lab/pass6_temp0.3"


def _scrape_c16_calibrated(lab, runs_args: list, arm: str, method: str, tmp_path, capsys) -> dict:
    """`runs ARGS --calibrate --save-calibration`, then `scrape --json` of the lab's `arm` server's recorded
    c = 16 window (its /metrics before and after) with that calibration: the scrape's JSON."""
    cal = tmp_path / "cal.json"
    assert cli.main(["runs", *runs_args, "--calibrate", "--save-calibration", str(cal)]) == 0
    pages = [(lab / "metrics" / f"{arm}_c16_{w}.txt").read_bytes() for w in ("before", "after")]
    capsys.readouterr()
    with _Pages(pages) as srv:
        assert cli.main(["scrape", srv.url, "--window", "0.1", "--json", "--calibration", str(cal),
                         "--method", method]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(("arm", "method", "bench"), [("ngram", "ngram", 0.83), ("draft", "draft_model", 0.72)])
def test_sampled_lab_windows_at_16_with_the_calibration_of_1_and_4_lose(arm, method, bench, tmp_path, capsys):
    """Lab pass 6 (temperature 0.3; README): both servers lost at c = 16 (bench: n-gram 0.83x, draft model 0.72x).
    Calibrated on the runs at 1 and 4 only, `scrape` of each server's c = 16 window judges the window's own
    timing against the fit's plain step (pinned at 16 by the plain server's run there): a loss, never "pays off",
    within 2% of the bench (recorded: n-gram 0.81x, draft model 0.71x; 0.60x and 0.53x before the plain run at 16
    pinned the plain step)."""
    runs = sorted(str(p) for p in PASS6.glob("*_c*.json"))
    data = _scrape_c16_calibrated(PASS6, [*runs, "--fit-up-to", "4"], arm, method, tmp_path, capsys)
    assert data["verdict_rests_on"] == "measured + step fit"
    assert data["verdict"] == "loses" and "pays off" not in data["verdict_text"]
    assert data["timed"]["speedup_high"] < 1.0 and data["step_fit"]["decision"] == "loses"
    assert data["timed"]["speedup"] == pytest.approx({"ngram": 0.81, "draft": 0.71}[arm], abs=0.01)
    assert abs(data["timed"]["speedup"] / bench - 1) < 0.03


PASS7 = ROOT / "tests/fixtures/real_engine/lab/pass7_temp0.5"


@pytest.mark.parametrize(("arm", "method", "bench"), [("ngram", "ngram", 0.639), ("draft", "draft_model", 0.381)])
def test_pass7_windows_at_16_with_a_calibration_of_runs_at_4_and_below_alone_lose(arm, method, bench, tmp_path,
                                                                                   capsys):
    """Lab pass 7 (temperature 0.5, models rebuilt at this tree; README): every speculative run lost (n-gram 0.36x
    to 0.70x, draft model 0.38x to 0.40x). Calibrated on the files at concurrency 1, 2 and 4 only (no run at 16 of
    either server, the plain one included: issue 44's setting), `scrape` of each server's c = 16 window does not
    say "pays off": the window's own inter-token latency against the fit's plain step at 16 (modelled: no plain run
    there), n-gram 0.55x (0.29-1.06x: "uncertain", loses by the estimate) for 0.64x measured by the bench, draft
    model 0.47x (0.40-0.55x, loses) for 0.38x. Within 20% of the bench: the n-gram (-13%), not the draft (+23%)."""
    runs = sorted(str(p) for p in PASS7.glob("*_c*.json") if int(p.stem.split("_c")[1]) <= 4)
    data = _scrape_c16_calibrated(PASS7, runs, arm, method, tmp_path, capsys)
    assert data["verdict_rests_on"] == "measured + step fit"
    assert data["verdict"] == "loses" and "pays off" not in data["verdict_text"]
    assert data["timed"]["speedup"] == pytest.approx({"ngram": 0.55, "draft": 0.47}[arm], abs=0.01)
    # the n-gram's band holds the bench's figure; the draft model's (0.40-0.55x) sits just above its 0.38x
    assert (data["timed"]["speedup_low"] < bench < data["timed"]["speedup_high"]) == (arm == "ngram")


LAB = ROOT / "tests/fixtures/real_engine/lab"


@pytest.mark.parametrize(("folder", "arm", "method", "own", "across"), [
    # n-gram, greedy (README, pass 10): k = 4 measured 1.46x at 16, k = 2 1.22x
    ("pass10_ngram_k2_k4", "ngram_k4", "ngram", "k = 4: on up to batch 73, uncertain above", "k = 4 up to batch 512+"),
    ("pass10_ngram_k2_k4", "ngram_k2", "ngram", "k = 2: on up to batch 167, uncertain above", "k = 4 up to batch 512+"),
    # draft model, temperature 0.1 (pass 8): both k lost at every concurrency
    ("pass8_k2_k4", "draft_k4", "draft_model", "k = 4: off at every batch, band included", "off at every batch"),
])
def test_scrape_with_the_servers_runs_at_two_k_says_which_k_to_run_under_its_own_decision(
        folder, arm, method, own, across, tmp_path, capsys):
    """The lab's server measured at k = 2 and k = 4 (`runs --calibrate --fit-up-to 4` of its runs at 1 and 4): `scrape`
    of one k's c = 16 window puts under its own decision the schedule across both k, at the window's acceptance (its
    measured E at the k it runs, E at its α at the other): the k = 2 server is told to run k = 4, which measured
    1.46x at 16 where k = 2 measured 1.22x; where both lost, off."""
    cal = tmp_path / "cal.json"
    files = sorted(str(p) for p in (LAB / folder).glob("*_c*.json"))
    assert cli.main(["runs", *files, "--calibrate", "--fit-up-to", "4", "--save-calibration", str(cal)]) == 0
    capsys.readouterr()
    pages = [(LAB / folder / "metrics" / f"{arm}_c16_{w}.txt").read_bytes() for w in ("before", "after")]
    args = ["--window", "0.1", "--calibration", str(cal), "--method", method]
    with _Pages(pages) as srv:  # each scrape a server of its own: it answers the window's two pages in turn
        assert cli.main(["scrape", srv.url, *args]) == 0
    text = capsys.readouterr().out.splitlines()
    with _Pages(pages) as srv:
        assert cli.main(["scrape", srv.url, *args, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    line = f"tiny-llama: {across} (your runs at k = 2 and 4, at this window's acceptance)"
    assert data["decision_line"].startswith(f"tiny-llama, {own}")
    assert data["decision_across_k"]["decision_line"] == line
    at = text.index(f"  decision:         {data['decision_line']}")
    assert text[at + 1] == f"  across k:         {line}"


def test_the_schedule_across_k_is_the_servers_whose_fit_answered_whatever_method_the_flags_default_to(
        tmp_path, capsys):
    """The Live page passes the sidebar's method (a draft model by default): the n-gram server's own fit still
    answered (the only fit at its k), but the schedule across k looked for draft-model runs and said nothing. It is
    now the answering fit's server's: here without --method, as the page without its sidebar set."""
    cal = tmp_path / "cal.json"
    files = sorted(str(p) for p in (LAB / "pass10_ngram_k2_k4").glob("*_c*.json"))
    assert cli.main(["runs", *files, "--calibrate", "--fit-up-to", "4", "--save-calibration", str(cal)]) == 0
    capsys.readouterr()
    pages = [(LAB / "pass10_ngram_k2_k4" / "metrics" / f"ngram_k2_c16_{w}.txt").read_bytes() for w in ("before", "after")]
    with _Pages(pages) as srv:
        assert cli.main(["scrape", srv.url, "--window", "0.1", "--calibration", str(cal), "--method", "draft_model",
                         "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["step_fit"]["method"] == "ngram"
    assert data["decision_across_k"]["decision_line"].startswith("tiny-llama: k = 4 up to batch 512+")


def test_scrape_with_a_calibration_of_one_k_says_no_schedule_across_k(tmp_path, capsys):
    cal = tmp_path / "cal.json"
    files = sorted(str(p) for p in (LAB / "pass10_ngram_k2_k4").glob("*_c*.json") if "_k2_" not in p.name)
    assert cli.main(["runs", *files, "--calibrate", "--save-calibration", str(cal)]) == 0
    capsys.readouterr()
    pages = [(LAB / "pass10_ngram_k2_k4" / "metrics" / f"ngram_k4_c16_{w}.txt").read_bytes() for w in ("before", "after")]
    with _Pages(pages) as srv:
        assert cli.main(["scrape", srv.url, "--window", "0.1", "--calibration", str(cal), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["verdict_rests_on"] != "presets" and "decision_across_k" not in data


PASS11 = LAB / "pass11_off"


def test_a_server_with_speculation_configured_and_off_is_off_not_idle(capsys):
    """Lab pass 11's draft-model server configured with k = 0 at every batch, its c = 16 window: 8,192 tokens generated,
    no draft proposed. `scrape` said "the server is idle or decoding nothing" and exited 2; it is speculation
    switched off at this load, and the window is judged so."""
    pages = [(PASS11 / "metrics" / f"draft_off_c16_{w}.txt").read_bytes() for w in ("before", "after")]
    with _Pages(pages) as srv:
        assert cli.main(["scrape", srv.url, "--window", "0.1", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["verdict"] == "off" and data["model_verdict"] == "off"
    assert data["model_verdict_text"].startswith("speculation is configured but switched off at this load")
    assert any("while the server generated 8,192 tokens: speculation is configured but switched off" in w
               for w in data["warnings"])
    assert not any("idle" in w for w in data["warnings"])


def test_configured_and_off_against_the_plain_servers_window_measures_what_off_costs(capsys):
    """The same window against the plain server's c = 16 window (--plain-url): 14.2 against 10.0 ms a token, 0.71x
    (the bench: 0.73x). The advice said "turn speculation off at this load" of a server whose speculation was off;
    it says that the off state itself costs, and to serve the load without speculation configured."""
    off = [(PASS11 / "metrics" / f"draft_off_c16_{w}.txt").read_bytes() for w in ("before", "after")]
    plain = [(PASS11 / "metrics" / f"plain_c16_{w}.txt").read_bytes() for w in ("before", "after")]
    with _Pages(off) as a, _Pages(plain) as b:
        assert cli.main(["scrape", a.url, "--window", "0.1", "--plain-url", b.url, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["verdict_rests_on"] == "measured" and data["verdict"] == "loses"
    assert data["timed"]["speedup"] == pytest.approx(0.71, abs=0.01)
    assert ": configured and off 14.2 ms a token" in data["verdict_text"]
    assert data["advice"].startswith("speculation is already off at this load (batch 15.8) and its off state still "
                                     "costs: serve this load without speculation configured")
