"""Fleet view: the Live page's statistics for every instance a Prometheus server scrapes.

One PromQL query (instant or range) fetches, per (job, instance), the window's counter increases
(`increase()`, which handles counter resets as the Live page does), gauge averages
(`avg_over_time()`), vLLM's cache_config_info and `up`. Per instance those values are handed to
the Live statistics unchanged: they become prometheus_client samples for `prom.snapshot_from_samples`
(server detection, engine summing, SGLang rank de-duplication, k inference, model choice), set
against an all-zero snapshot one window earlier, so `prom.window_between` yields exactly the
increases and `prom.stats_from_window` the statistics. Each instance is then
held against the model at its own concurrency exactly as the Live page does (`live.live_verdict`),
and its JSON has the `scrape` command's keys (`live.result_dict`).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections import defaultdict
from dataclasses import dataclass

import httpx
import pandas as pd
from prometheus_client.samples import Sample

from specmodel import bounds
from specmodel.errors import SpecModelError
from specmodel.fit.saved import SavedFit
from specmodel.metrics import live, prom, promapi, timed
from specmodel.metrics import schemas as engines
from specmodel.model.instances import UNKNOWN_MODEL, InstanceModel, decide
from specmodel.model.scenario import Scenario
from specmodel.words.served import refusal

SERIES_LABEL = "specmodel_series"  # added by label_replace: which metric a result row belongs to
BY = "job, instance, model_name, engine, position, token_position, tp_rank, pp_rank"  # what snapshot_from_samples still needs
CACHE_INFO = "vllm:cache_config_info"
TARGET_MODEL_LABELS = ("model_name", "model", "served_model_name", "model_id")  # target labels naming the model
HISTORY_POINTS = 60  # chosen: points per instance in the E / concurrency chart


def _catalogue() -> list[tuple[str, str]]:
    """(metric, how it is reduced over the window) for every series the Live statistics read, for
    every engine `specmodel.model.engines` knows (TensorRT-LLM under both of its prefixes)."""
    out = engines.catalogue()
    out[CACHE_INFO] = "info"
    return sorted(out.items())


_INCREASES = frozenset(name for name, how in _catalogue() if how == "increase")  # counters: increase() per window


def check_selector(selector: str) -> str:
    """A label filter such as `job="vllm"` or `job=~"vllm-.*", namespace="prod"`, braces optional."""
    text = (selector or "").strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    if any(c in text for c in "{}[]\n"):
        raise SpecModelError(f"label filter '{selector}' should be label matchers only, e.g. "
                             'job="vllm" or job=~"vllm-.*"')
    return text


def fleet_promql(window: str, selector: str = "") -> str:
    """The one query behind the fleet table and history: every series, reduced over `window`."""
    promapi.parse_duration(window)
    sel = check_selector(selector)
    parts = []
    for name, how in _catalogue():
        series = f"{name}{{{sel}}}[{window}]"
        if how == "increase":
            expr = f"sum by ({BY}) (increase({series}))"
        elif how == "avg":
            expr = f"sum by ({BY}) (avg_over_time({series}))"
        else:
            expr = f"max by (job, instance, engine, num_gpu_blocks, block_size) (last_over_time({series}))"
        parts.append(f'label_replace({expr}, "{SERIES_LABEL}", "{name}", "", "")')
    parts.append(f'label_replace(max by (job, instance) (up{{{sel}}}), "{SERIES_LABEL}", "up", "", "")')
    return "\nor ".join(parts)


def fleet_timing_promql(window: str, selector: str = "") -> str:
    """The query of the servers' own step timing (schemas.Engine.timing: histogram sums and counts), increased
    over `window`: asked apart from fleet_promql, and only where a step fit can use it."""
    promapi.parse_duration(window)
    sel = check_selector(selector)
    return "\nor ".join(f'label_replace(sum by ({BY}) (increase({name}{{{sel}}}[{window}])), "{SERIES_LABEL}", '
                        f'"{name}", "", "")' for name in engines.timing_catalogue())


# --- from query results to the Live statistics -----------------------------------------------------

def samples_of(rows: list[tuple[dict, float]]) -> list[Sample]:
    """The (labels incl. SERIES_LABEL, value) rows of one instance as the samples its /metrics page
    would give: named by SERIES_LABEL, without job and instance; NaN and infinite values left out (a gauge's
    average over a window without samples; a counter's is refused first, in windows_for_instance)."""
    return [Sample(labels[SERIES_LABEL], {k: str(v) for k, v in sorted(labels.items())
                                          if k not in (SERIES_LABEL, "job", "instance")}, value)
            for labels, value in rows if math.isfinite(value)]


def windows_for_instance(rows: list[tuple[dict, float]], window_s: float, at_s: float,
                         k: int | None = None) -> list[tuple[prom.Snapshot, prom.SpecWindow]]:
    """(snapshot, window) per model an instance serves, from its reduced series (no `up` rows);
    `k` overrides the inferred draft tokens per step (for vLLM V0, which may not reveal it)."""
    if not any(engines.family(labels[SERIES_LABEL]) for labels, _ in rows):
        return []
    samples = samples_of(rows)
    if not samples:
        raise SpecModelError("every series of this instance is NaN or infinite over the window: check the "
                             "server's /metrics")
    broken = sorted({labels[SERIES_LABEL] for labels, value in rows
                     if labels[SERIES_LABEL] in _INCREASES and not math.isfinite(value)})
    if broken:  # left out, the instance would read as "speculation off" or with the wrong k
        raise SpecModelError(f"the increase of {', '.join(broken[:3])}{', …' if len(broken) > 3 else ''} over the "
                             "window is NaN or infinite, not a count: check the server's /metrics")
    first = prom.snapshot_from_samples(samples, at=at_s, k=k)
    out = []
    for model in first.model_names or (None,):
        snap = first if model == first.model_name else prom.snapshot_from_samples(samples, model_name=model,
                                                                                  at=at_s, k=k)
        # Values are already increases over the window: against an all-zero snapshot one window
        # earlier, window_between returns them unchanged and applies the per-engine conversions.
        start = dataclasses.replace(snap, at=at_s - window_s, counters={k: 0.0 for k in snap.counters},
                                    per_position=(0.0,) * len(snap.per_position), gauges={},
                                    timing={k: 0.0 for k in snap.timing})
        out.append((snap, prom.window_between(start, snap)))
    return out


def _unknown_model_verdict(verdict: live.LiveVerdict, model_name: str, refused: str | None = None) -> live.LiveVerdict:
    """An instance whose model has no preset (or whose draft is refused): measured figures kept, no prediction,
    never counted as paying off or losing."""
    text = (f"'{model_name}' is not a model this tool has a preset for, so no speedup is predicted; its measured "
            "E and α are shown as measured") if refused is None else (
        f"not predicted: {refused}; its measured E and α are shown as measured")
    return dataclasses.replace(verdict, label=UNKNOWN_MODEL if refused is None else "unknown", text=text, advice="",
                               speedup=None, speedup_range=None, band=None, best_k=None, best_k_speedup=None,
                               crossover_concurrency=None, k_options=(),
                               notes=tuple(n for n in verdict.notes if "has no preset" not in n))


def judge_instance(stats: prom.LiveStats, base: Scenario, names: live.InputNames,
                   given: InstanceModel | None = None) -> tuple[live.LiveVerdict, str]:
    """The instance's verdict on its own model (and the user's override for it), and what it was predicted on."""
    judged = decide(base, stats.model_name, given, server=stats.server)
    if judged.scenario is None:
        verdict = live.live_verdict(stats, base, names)
        return _unknown_model_verdict(verdict, stats.model_name, refusal(judged)), judged.predicted_on
    return live.live_verdict(stats, judged.scenario, names), judged.predicted_on


def instance_models(report: FleetReport) -> tuple[InstanceModel, ...]:
    """Each judged instance's k and model as `--instance` gives them, for the rules and the dashboard of the same
    fleet: they then judge every instance on what fleet judged it on (its target, draft and k now)."""
    out = {}
    for i in report.instances:
        s = i.verdict.scenario
        if i.predicted_on == UNKNOWN_MODEL or not i.verdict.measured or not s.k or i.instance in out:
            continue
        draft = s.draft.name if s.method.name == "draft_model" and s.draft else None
        out[i.instance] = InstanceModel(i.instance, int(s.k), s.target.name, draft)
    return tuple(out.values())


def _target_models(client, server) -> dict[tuple[str, str], str]:
    """(job, instance) -> the model a scrape target's labels name (relabelled `model`, `model_name`, …)."""
    out = {}
    for t in promapi.targets(client, server):
        name = next((t["labels"][k] for k in TARGET_MODEL_LABELS if t["labels"].get(k)), None)
        if name:
            out[(t["job"], t["instance"])] = name
    return out


@dataclass(frozen=True)
class Instance:
    """One served model on one scrape target, over one window, held against the model."""

    job: str
    instance: str
    up: bool | None  # Prometheus' `up` at the end of the window (None: not known)
    snapshot: prom.Snapshot  # the window's increases and averages, as parsed (k source, model names)
    stats: prom.LiveStats
    verdict: live.LiveVerdict  # the model at this instance's concurrency, as on the Live page
    last_error: str = ""
    predicted_on: str = ""  # the target (and draft) the verdict was computed for, or "unknown model"
    judgement: timed.Judgement | None = None  # what the verdict rests on (live.judgement_of; None: presets)

    @property
    def model_name(self) -> str | None:
        return self.stats.model_name

    @property
    def loses(self) -> bool:
        if self.judgement is not None and self.judgement.decides:
            return self.judgement.label == "loses"
        return self.verdict.measured and self.verdict.label == "loses"

    @property
    def headline(self) -> str:
        """The verdict a reader sees first, led by what it rests on (live.headline)."""
        return live.headline(self.verdict, self.judgement or live.judgement_of(self.stats, self.verdict))[1]

    def to_dict(self) -> dict:
        """The `scrape` command's keys, plus instance, job, up, predicted_speedup, predicted_on and last_error."""
        out = live.result_dict(self.instance, self.snapshot, self.stats, self.verdict, self.judgement)
        del out["url"], out["url_given"]
        return {"instance": self.instance, "model_name": self.stats.model_name, "job": self.job, "up": self.up,
                **out, "predicted_speedup": out["speedup"], "predicted_on": self.predicted_on,
                "decision_line": live.decision_line_of(self.verdict, self.judgement, self.instance),
                "last_error": self.last_error or None}


@dataclass(frozen=True)
class FleetReport:
    instances: tuple[Instance, ...]
    down: tuple[dict, ...]  # targets Prometheus reports down that have no data in the window
    window: str
    window_s: float
    prometheus: str  # the server's URL as it may be shown
    # Instances whose series could not be read (job, instance, reason): listed, never blanking the others.
    problems: tuple[dict, ...] = ()

    @property
    def losing(self) -> tuple[Instance, ...]:
        return tuple(i for i in self.instances if i.loses)

    def table(self) -> pd.DataFrame:
        return pd.DataFrame([i.to_dict() for i in self.instances])


def select(frame: pd.DataFrame, models=(), jobs=(), like: pd.DataFrame | None = None) -> pd.DataFrame:
    """Rows of a fleet table or history for the chosen models and jobs (none chosen: all), or for
    the (job, instance, model_name) rows present in `like`."""
    keep = pd.Series(True, index=frame.index)
    if models:
        keep &= frame["model_name"].isin(list(models))
    if jobs:
        keep &= frame["job"].isin(list(jobs))
    if like is not None:
        keys = set(zip(like["job"], like["instance"], like["model_name"]))
        keep &= pd.Series([k in keys for k in zip(frame["job"], frame["instance"], frame["model_name"])],
                          index=frame.index, dtype=bool)
    return frame[keep]


def notes(report: FleetReport, shown: pd.DataFrame | None = None) -> dict[str, list[str]]:
    """What each instance's statistics and verdict could not say or assumed, by "instance (job)"."""
    keys = None if shown is None else set(zip(shown["job"], shown["instance"], shown["model_name"]))
    out: dict[str, list[str]] = {}
    for i in report.instances:
        if keys is not None and (i.job, i.instance, i.model_name) not in keys:
            continue
        lines = list(dict.fromkeys((*i.stats.notes, *i.verdict.notes)))
        if lines:
            out[f"{i.instance} ({i.job}, {i.model_name})"] = lines
    return out


def _group(samples) -> dict[tuple[str, str], list[tuple[dict, float]]]:
    groups: dict[tuple[str, str], list] = defaultdict(list)
    for labels, value in samples:
        groups[(labels.get("job", ""), labels.get("instance", ""))].append((labels, value))
    return groups


def _no_data(server: promapi.PromServer, window: str, selector: str, down: list[dict]) -> SpecModelError:
    where = f" matching {{{selector}}}" if selector else ""
    if down:
        shown = "; ".join(f"{d['instance']} (job {d['job']}): {d['last_error'] or 'down'}" for d in down[:5])
        return SpecModelError(f"Prometheus at {server.shown} has no {engines.SERVERS_IN_WORDS} series{where} in "
                              f"the last {window}, and {len(down)} scrape target(s) are down: {shown}")
    return SpecModelError(f"Prometheus at {server.shown} has no {engines.SERVERS_IN_WORDS} series{where} in the "
                          f"last {window}: check that it scrapes your inference servers' /metrics (see "
                          "docs/live-and-fleet.md, scrape config), the label filter, and the window")


def _down_targets(client, server, rows_by_target, relevant_jobs: set[str] | None) -> list[dict]:
    """Targets whose `up` is 0, with Prometheus' last scrape error."""
    down = [key for key, rows in rows_by_target.items()
            if any(l[SERIES_LABEL] == "up" and v == 0 for l, v in rows)
            and (relevant_jobs is None or key[0] in relevant_jobs)]
    if not down:
        return []
    errors = {(t["job"], t["instance"]): t["last_error"] for t in promapi.targets(client, server)}
    return [{"job": j, "instance": i, "last_error": errors.get((j, i), "")} for j, i in sorted(down)]


def _judge_all(by_target, window_s, at_s, k, base, names, target_models, instances, problems, fits=(),
               method=None, given=None) -> None:
    """Judge every instance into `instances` (or `problems`), in order, until the work deadline passes:
    the instances left are then one problem saying how many and why (bounds.MAX_WORK_S)."""
    targets = sorted(by_target.items())
    for done, ((job, inst), rows) in enumerate(targets):
        if bounds.out_of_time():
            left = len(targets) - done
            problems.append({"job": "any", "instance": f"{left:,} more instance(s)",
                             "reason": f"not judged: judging stopped after the {bounds.MAX_WORK_S:g} s limit on "
                                       "processing one answer; narrow the series with a selector (--match, or the "
                                       "page's filter) to fewer instances"})
            return
        up_values = [v for l, v in rows if l[SERIES_LABEL] == "up"]
        up = None if not up_values else bool(up_values[0] > 0)
        own = (given or {}).get(inst)  # the user's --instance for it: its k, target and draft
        try:  # one instance with impossible counters is listed with its reason; the others still show
            found = []
            for snap, w in windows_for_instance([r for r in rows if r[0][SERIES_LABEL] != "up"], window_s, at_s,
                                                own.k if own else k):
                stats = prom.stats_from_window(w)
                if not stats.model_name and (job, inst) in target_models:
                    stats = dataclasses.replace(stats, model_name=target_models[(job, inst)])
                verdict, predicted_on = judge_instance(stats, base, names, own)
                # what it rests on: the step fit of its own model, k and method; the model on presets where none is
                judgement = live.judged(stats, verdict, fits, method, own_model_only=True) if fits else None
                found.append(Instance(job, inst, up, snap, stats, verdict, predicted_on=predicted_on,
                                      judgement=judgement))
        except SpecModelError as exc:
            problems.append({"job": job, "instance": inst, "reason": str(exc)})
            continue
        except (ArithmeticError, ValueError):  # counters near the float limits: this instance only
            problems.append({"job": job, "instance": inst, "reason": "its counters are too large to compute with "
                             "(near the float limit, e.g. 1e300): check the server's /metrics"})
            continue
        instances.extend(found)


def fleet(client: httpx.Client, server: promapi.PromServer, base: Scenario, window: str = "5m",
          selector: str = "", at_s: float | None = None, k: int | None = None,
          names: live.InputNames = live.COMMAND_LINE, fits: tuple[SavedFit, ...] = (),
          method: str | None = None, instances=()) -> FleetReport:
    """Every instance's statistics over `window`, held against the model built on `base`
    (whose α and k stand for instances with speculation off); `k` overrides inferred k; `instances`
    (InstanceModel, as the rules' --instance) give an instance its own k, target and draft; the
    verdicts' notes name the inputs as `names` says. With step fits (`fits`, a calibration's), each instance
    is judged first on the one for its model, k and `method` (metrics/timed.py) and on its own step timing,
    which a second query asks for."""
    window_s = promapi.parse_duration(window)
    at_s = time.time() if at_s is None else float(at_s)
    sel = check_selector(selector)
    given = {m.instance: m for m in instances}
    samples = promapi.query(client, server, fleet_promql(window, sel), at_s=at_s)
    if fits:
        samples = list(samples) + list(promapi.query(client, server, fleet_timing_promql(window, sel), at_s=at_s))
    by_target = _group((s.labels, s.value) for s in samples if SERIES_LABEL in s.labels)  # others: not ours
    instances, problems = [], []
    unnamed = any(not any(l.get("model_name") for l, _ in rows if l[SERIES_LABEL] != "up")
                  for rows in by_target.values())
    target_models = _target_models(client, server) if unnamed else {}  # only asked when a series names none
    with bounds.work_deadline():
        _judge_all(by_target, window_s, at_s, k, base, names, target_models, instances, problems, fits, method, given)
    jobs = {i.job for i in instances} | {p["job"] for p in problems}
    down = _down_targets(client, server, by_target, None if sel else jobs)
    if not instances:
        if problems:
            shown = "; ".join(f"{p['instance']} (job {p['job']}): {p['reason']}" for p in problems[:3])
            raise SpecModelError(f"Prometheus at {server.shown}: no instance could be read ({len(problems)} with "
                                 f"problems): {shown}")
        raise _no_data(server, window, sel, down)
    errors = {(d["job"], d["instance"]): d["last_error"] for d in down}
    instances = [dataclasses.replace(i, last_error=errors.get((i.job, i.instance), "")) for i in instances]
    seen = {(i.job, i.instance) for i in instances}
    seen |= {(p["job"], p["instance"]) for p in problems}
    return FleetReport(tuple(instances), tuple(d for d in down if (d["job"], d["instance"]) not in seen),
                       window, window_s, server.shown, tuple(problems))


def history(client: httpx.Client, server: promapi.PromServer, window: str = "5m", span: str = "1h",
            selector: str = "", end_s: float | None = None, points: int = HISTORY_POINTS) -> pd.DataFrame:
    """E, running requests and generation tok/s per instance over the last `span`, each point a
    `window` of increases: columns time, job, instance, model_name, server, tokens_per_step, running,
    generation_tok_s."""
    window_s = promapi.parse_duration(window)
    span_s = promapi.parse_duration(span)
    end_s = time.time() if end_s is None else float(end_s)
    step_s = max(1.0, math.ceil(span_s / points))
    series = promapi.query_range(client, server, fleet_promql(window, selector), end_s - span_s, end_s, step_s)
    by_time: dict[tuple[str, str, float], list] = defaultdict(list)
    for s in (s for s in series if SERIES_LABEL in s.labels):
        for t, v in zip(s.times_s.tolist(), s.values.tolist()):
            by_time[(s.labels.get("job", ""), s.labels.get("instance", ""), t)].append((s.labels, v))
    records = []
    with bounds.work_deadline():
        for (job, inst, t), rows in sorted(by_time.items()):
            if bounds.out_of_time():
                raise SpecModelError(f"the history of {len(by_time):,} instance-points took more than the "
                                     f"{bounds.MAX_WORK_S:g} s limit on processing one answer: choose a shorter span "
                                     "or narrow the series with a selector")
            records.extend(_history_points(job, inst, t, rows, window_s))
    columns = ["time", "job", "instance", "model_name", "server", "tokens_per_step", "running", "generation_tok_s"]
    frame = pd.DataFrame(records, columns=columns)
    return frame.astype({"tokens_per_step": float, "running": float, "generation_tok_s": float})


def _history_points(job: str, inst: str, t: float, rows, window_s: float) -> list[dict]:
    """One history point per model of one instance at time t (none where its series are incomplete)."""
    try:
        windows = windows_for_instance([r for r in rows if r[0][SERIES_LABEL] != "up"], window_s, t)
    except SpecModelError:
        return []  # a point where the instance's series are incomplete: leave a gap
    out = []
    for _snap, w in windows:
        st = prom.stats_from_window(w)
        out.append({"time": pd.Timestamp(t, unit="s", tz="UTC"), "job": job, "instance": inst,
                    "model_name": st.model_name, "server": st.server, "tokens_per_step": st.tokens_per_step,
                    "running": st.running, "generation_tok_s": st.generation_tok_s})
    return out
