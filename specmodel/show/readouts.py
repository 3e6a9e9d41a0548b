"""The headline figures a page shows beside a result: label, value as text, help, interval.

Each function chooses the wording of its result's figures (a dash where the model has none,
"unreachable", "off", "impossible") so that a page only places them in metric boxes, and the
one-line summaries that go with them. Pure functions of results; nothing here draws.

>>> from specmodel import Scenario, summarize
>>> [(r.label, r.value) for r in whatif_readouts(summarize(Scenario(alpha=0.7, k=4, t_target_ms=19, t_draft_ms=3)))][:2]
[('Speedup', '1.70x'), ('Tokens per step E', '2.77')]
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from specmodel.export.prediction import prediction_dict
from specmodel.model.decide import JUDGED, band_text, straddles

if TYPE_CHECKING:  # names for the annotations only: the What-if page loads no scraper, pandas or planner
    from specmodel.metrics.fleet import FleetReport
    from specmodel.metrics.live import LiveVerdict
    from specmodel.metrics.prom import LiveStats, Snapshot
    from specmodel.words import Summary
    from specmodel.plan.capacity import CapacityPlan


@dataclass(frozen=True)
class Readout:
    label: str
    value: str  # as shown: "2.50", "—" where there is no figure
    help: str | None = None  # the tooltip
    delta: str | None = None  # a signed difference shown under the value
    caption: str | None = None  # a line under the figure (an interval)


def fmt(value, spec: str) -> str:
    """A number as shown, or "—" where the model has none (e.g. nothing fits with speculation)."""
    return "—" if value is None else format(value, spec)


# --- What-if -------------------------------------------------------------------------------------

def whatif_readouts(summary: Summary) -> list[Readout]:
    """Speedup, tokens per step against break-even, break-even α, best k, crossover batch."""
    out = prediction_dict(summary, with_deploy=False)
    k = out["k"]
    be, tps, bea, cross = (out["break_even_tokens_per_step"], out["tokens_per_step"], out["break_even_alpha"],
                           out["crossover_concurrency"])
    return [
        Readout("Speedup", "n/a" if out["speedup"] is None else f"{out['speedup']:.2f}x",
                help="Speculative ÷ plain throughput at this concurrency. Under it, the model's 80% band: on "
                     "published runs of setups it was not tuned to, 8 in 10 measurements fell inside it "
                     "(`python -m bench fidelity`); it widens where the engine version, the acceptance or a "
                     "name was guessed. Where it straddles 1.0 the verdict says uncertain.",
                caption=_band_caption(out)),
        Readout("Tokens per step E", fmt(tps, ".2f"),
                delta=f"{tps - be:+.2f} vs {be:.2f}" if be is not None and tps is not None and k else None,
                help="Tokens emitted per verify step, bonus token included (vLLM's mean acceptance length). "
                     "Under it: E minus the break-even E at this concurrency (\"+0.98 vs 1.79\": 0.98 above "
                     "break-even 1.79)."),
        Readout("Break-even α", "unreachable" if bea is None and k else fmt(bea, ".2f"),
                help="The α at which speculation with this k just matches plain decoding here."),
        Readout("Best k here", f"{out['best_k']} ({fmt(out['best_k_speedup'], '.2f')}x)" if out["best_k"] else "off",
                help="The k the deploy schedule runs at this concurrency (0 = turn speculation off): the fastest k of batch 1, "
                     "switched only where another k gains more than 2% (run-to-run noise); the same k as the config.",
                caption=slower_caption(out)),
        Readout("Crossover batch", "> 4096" if cross is None else ("loses at 1" if cross == 0 else f"{cross}"),
                help="Largest batch up to which the k set here never loses. The schedule's off threshold (What to deploy) "
                     "can differ: it is where plain decoding beats the schedule's own k by more than 2%."),
    ]


def slower_caption(out: dict) -> str | None:
    """Under "Best k here", where the schedule's k is slower at this batch than the k set here (within the noise the
    schedule does not switch for): that the k set here is faster, so the readout never names a worse k as best."""
    best, speed, own = out.get("best_k"), out.get("best_k_speedup"), out.get("speedup")
    if not best or best == out.get("k") or speed is None or own is None or speed >= own:
        return None
    return f"k = {out['k']} set here is faster: {own:.2f}x"


def _band_caption(out: dict) -> str | None:
    """"80% band 1.15–2.32x" from a prediction dict's speedup_low/high (None where it has none)."""
    low, high = out.get("speedup_low"), out.get("speedup_high")
    if low is None or high is None or not out.get("k"):
        return None
    return f"80% band {band_text(low, high)}x" + (" (straddles 1.0)" if straddles((low, high)) else "")


def whatif_arms_line(summary: Summary) -> str:
    """Step time, throughput, what fits and inter-token latency of both arms, in one line."""
    out = prediction_dict(summary, with_deploy=False)
    p, sp = out["plain"], out["spec"]
    return (f"Plain: {fmt(p['step_ms'], '.1f')} ms per step, {fmt(p['throughput_tok_s'], ',.0f')} tok/s, up to "
            f"{p['max_concurrency']} sequences fit · Speculative: {fmt(sp['step_ms'], '.1f')} ms per step, "
            f"{fmt(sp['throughput_tok_s'], ',.0f')} tok/s, up to {sp['max_concurrency']} sequences fit · "
            f"inter-token latency {fmt(p['itl_ms'], '.1f')} → {fmt(sp['itl_ms'], '.1f')} ms")


# --- Live ----------------------------------------------------------------------------------------

def live_band_line(verdict: LiveVerdict) -> str | None:
    """The model's 80% band at the operating point, in one line (None without a prediction)."""
    if verdict.band is None or verdict.speedup is None:
        return None
    low, high = verdict.band
    folded = " (the window's acceptance interval folded in)" if verdict.speedup_range is not None else ""
    line = f"The model's 80% band here: {band_text(low, high)}x{folded}"
    if verdict.uncertain:
        return line + ": it straddles 1.0, so the model cannot say whether speculation pays off at this load"
    return line + "."


def live_readouts(stats: LiveStats) -> list[Readout]:
    """E, α and draft acceptance rate (with 95 % intervals where measured), load, throughput, KV use."""
    d = stats.to_dict()
    ci, aci = d["tokens_per_step_ci"], d["alpha_ci"]
    e_text = "—" if stats.tokens_per_step is None else f"{stats.tokens_per_step:.2f}"
    acceptance = [
        Readout("Tokens per step E", e_text,
                help="Tokens per verify step, bonus included (needs no k)."
                     + (f" 95% interval {ci[0]:.2f}–{ci[1]:.2f}." if ci else ""),
                caption=f"95%: {ci[0]:.2f}–{ci[1]:.2f}" if ci else None),
        Readout("α (per token)", "—" if stats.alpha is None else f"{stats.alpha:.3f}",
                help="The constant per-token acceptance that gives this E at this k.",
                caption=(f"95%: {aci[0]:.3f}–{aci[1]:.3f}" if aci else
                         "needs k" if stats.needs_k else None)),
        Readout("Accepted ÷ drafted", fmt(stats.draft_acceptance_rate, ".3f"),
                help="What vLLM calls the draft acceptance rate: accepted ÷ drafted tokens, from the engine's "
                     "draft-token counter ((E − 1) / k where it has none). Not α: lower than α for the same drafts."
                     + (f" Mean draft length {stats.mean_draft_length:.2f} of at most {stats.max_draft_length}."
                        if stats.mean_draft_length is not None and stats.max_draft_length else "")),
    ]
    running = ("—" if stats.running is None else f"{stats.running:.3g} / {stats.waiting:.3g}"
               if stats.waiting is not None else f"{stats.running:.3g}")  # window means: "101 / 0" fits its box
    end = stats.running_end
    moved = end is not None and stats.running is not None and round(end) != round(stats.running)
    return acceptance + [
        Readout("Running / waiting", running, help="Window means. The verdict is judged at the running requests of "
                "the window's last scrape" + (f" ({end:.3g})." if end is not None else "."),
                caption=f"now {end:.3g} running (verdict's batch)" if moved else None),
        Readout("Generated tokens/s", fmt(stats.generation_tok_s, ",.0f")),
        Readout("KV cache used", fmt(stats.kv_usage, ".0%"),
                help=(f"Block budget {stats.num_gpu_blocks:,} blocks × {stats.block_size} tokens = "
                      f"{stats.kv_capacity_tokens:,} tokens." if stats.kv_capacity_tokens else None)),
    ] + _timing_readouts(stats)


def _timing_readouts(stats: LiveStats) -> list[Readout]:
    """The server's own step timing over the window, where it exposes it (metrics/timing.py)."""
    t = stats.timing
    if t is None:
        return []
    batch = f", batch {t.batch:.3g}" if t.batch is not None else ""
    return [Readout("Time per token", f"{t.ms_per_token:.3g} ms", caption=f"step {t.step_ms:.3g} ms{batch}",
                    help=f"Measured by the server ({t.series}): decode time per emitted token and sequence over the "
                         "window; the step is what one decode step took, the batch the sequences decoding per "
                         "engine step.")]


def live_window_line(stats: LiveStats, last: Snapshot, intervals: int) -> str:
    """Which server and model, where k came from, how long the window is and where E came from."""
    return (f"{last.server}, model {stats.model_name or 'unknown'}, k = {stats.k or '—'} "
            f"({stats.k_source or last.k_source}); "
            f"window of {stats.window_s:.0f} s over {intervals} scrape interval(s); E from {stats.source}.")


def live_first_scrape(snap: Snapshot, interval_s: int, auto: bool) -> str:
    """What the first scrape found, and when the first window completes."""
    return (f"First scrape done: {snap.server}, model {snap.model_name or 'unknown'}, "
            + ("speculation on, k = " + str(snap.k) if snap.spec_enabled else "speculation off")
            + ". The first window completes with the next scrape"
            + (f" in {interval_s} s." if auto else ": press Scrape now."))


def live_k_rows(verdict: LiveVerdict) -> list[dict]:
    """The k' ≤ k table: tokens per step and speedup of each k' from the measured acceptance."""
    return [{"k'": o.k, "tokens per step": o.tokens_per_step, "speedup (×)": o.speedup} for o in verdict.k_options]


LIVE_K_COLUMNS = {"k'": ("k'", None, None), "tokens per step": ("tokens per step", "%.3f", None),
                  "speedup (×)": ("speedup (×)", "%.3fx", None)}  # the k' ≤ k table, for display.column_config


# --- Capacity ------------------------------------------------------------------------------------

def capacity_readouts(result: CapacityPlan) -> list[Readout]:
    """GPUs each arm needs (or "impossible", and why), GPUs saved, the verdict."""
    arms = []
    for arm, label in ((result.plain, "GPUs without speculation"),
                       (result.spec, f"GPUs with speculation (k = {result.spec.k})")):
        if arm.meets_target:
            arms.append(Readout(label, f"{arm.gpus:,}", help=f"{arm.replicas:,} replica(s), {arm.batch_per_replica:,} "
                                                             f"users on the fullest, {result.target.reach(arm.user_tok_s)}"))
        else:
            arms.append(Readout(label, "impossible", help=f"Misses the target: {arm.reason}."))
    saved, d = result.gpus_saved, result.to_dict()
    low, high = d["gpus_saved_low"], d["gpus_saved_high"]
    signed = lambda n: f"{n:+,}" if n else "0"  # noqa: E731
    band = (f"80% band {signed(low)} to {signed(high)}" + (" (uncertain)" if result.uncertain else "")
            if low is not None and high is not None else None)
    return arms + [Readout("GPUs saved by speculation", "—" if saved is None else f"{saved:+,}",
                           help="Plain GPUs − speculative GPUs (negative: speculation costs GPUs); the band: the same "
                                "plan with the speculative arm at the ends of the model's 80% band.", caption=band),
                   Readout("Verdict", result.verdict,
                           caption="uncertain: one end of the band says deploy it, the other not" if result.uncertain
                           else None)]


# --- Fleet ---------------------------------------------------------------------------------------

# The fleet table's columns in the order shown: column -> (heading, number format or None, help or None).
FLEET_COLUMNS = {
    "instance": ("Instance", None, None), "job": ("Job", None, None), "model_name": ("Model", None, None),
    "verdict": ("Verdict", None, "The model at this instance's own concurrency and measured acceptance: pays off, "
                "borderline (within 5% of break-even), loses; 'uncertain' where its 80% band straddles 1.0 (the "
                "lines under the table say between which batch sizes to measure); 'off' with speculation off."),
    "predicted_on": ("Predicted on", None, "The target (+ draft) the model used for this instance: its own model "
                     "from the model_name label or its scrape target's labels; 'unknown model' when it has no preset "
                     "(not predicted, not counted as paying off)."),
    "predicted_speedup": ("Predicted speedup", "%.2fx", "The model's speedup at this instance's concurrency."),
    "speedup_band": ("80% band ×", None, "The model's 80% band around the predicted speedup, the window's acceptance "
                     "interval folded in (speedup_low, speedup_high in `fleet --json`)."),
    "tokens_per_step": ("E (tokens/step)", "%.2f", "Tokens per verify step, bonus token included."),
    "alpha": ("α", "%.2f", "Per-token acceptance giving that E at k."), "k": ("k", None, None),
    "running_requests": ("Running", "%.1f", "Running requests, averaged over the window."),
    "generation_tok_s": ("Generation tok/s", "%.0f", None), "server": ("Server", None, None),
    "advice": ("Advice", None, None),
}


@dataclass(frozen=True)
class Alert:
    tone: str  # specmodel.notes.TONES
    instance: str  # who (text from Prometheus' labels)
    detail: str  # the rest of the sentence (quotes model and job names from the labels)


def fleet_alerts(report: FleetReport) -> list[Alert]:
    """One line per instance that needs a look: those where speculation loses (bad; caution where the band
    reaches 1.0), those that are down, and those whose series could not be read (caution)."""
    alerts = [Alert(i.verdict.tone, i.instance, f"({i.model_name}, job {i.job}) {i.verdict.text}"  # caution: uncertain
                    + (f" — {i.verdict.advice}." if i.verdict.advice else ".")) for i in report.losing]
    alerts += [Alert("caution", d["instance"], f"(job {d['job']}) is down: {d['last_error'] or 'Prometheus cannot scrape it'}")
               for d in report.down]
    return alerts + [Alert("caution", p["instance"], f"(job {p['job']}) is not shown: {p['reason']}")
                     for p in report.problems]


UNCERTAIN = "uncertain"  # the verdict shown where the model's 80% band straddles 1.0


def fleet_shown(table):
    """The fleet table as the page shows it: an instance whose model band straddles 1.0 has the verdict
    "uncertain" (the model cannot tell whether speculation pays off there; its predicted speedup and
    band stay in their columns, and `fleet --json` keeps the model's label with `uncertain`: true);
    every other verdict as the model gave it."""
    if table.empty or "uncertain" not in table:
        return table
    unsure = table["uncertain"].eq(True) & table["verdict"].isin(JUDGED)  # None (not predicted) is not True
    return table.assign(verdict=table["verdict"].where(~unsure, UNCERTAIN))


def fleet_uncertain(table) -> list[tuple[str, str]]:
    """(instance, the model's words) for each instance shown as uncertain: its speedup, what was measured,
    its band and between which batch sizes to measure (the same words as `fleet` and the Live page)."""
    if table.empty or "verdict_text" not in table:
        return []
    unsure = table[table["verdict"] == UNCERTAIN]
    return list(zip(unsure["instance"], unsure["verdict_text"]))


def fleet_counts(verdicts) -> str:
    """How many instances got each verdict: "3 pays off, 1 loses" (most frequent first, ties as they came)."""
    return ", ".join(f"{n} {label}" for label, n in Counter(verdicts).most_common())

