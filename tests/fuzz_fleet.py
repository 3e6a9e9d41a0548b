"""Fleet as a fuzz target (issue 25, item 15): a Prometheus HTTP API on 127.0.0.1 that answers the fleet
query (/api/v1/query), the history's range query (/api/v1/query_range) and the scrape targets
(/api/v1/targets) as a real Prometheus does for a fleet of many instances, each built from one engine's
reference /metrics sample (tests/fixtures/*_sample.txt) reduced the way `fleet.fleet_promql` reduces it.

`fleet_answers()` draws the fleet: how many instances (one in 40 near the size bound), each one's engine,
model (a preset, one without a preset, none, two on one instance), job and instance labels (missing,
empty, control characters, long), `up` (1, 0, missing; targets that are down with no data), defects in its
values (NaN, ±Inf, 1e308, huge integers, negative counters, text, every value NaN), the targets list
(model labels relabelled onto targets, last errors, an error answer) and the history's points; then what
the user set: window, label filter, a k override, the sidebar's scenario, and sometimes a work deadline
already spent (an enclosing `bounds.work_deadline`, which an inner one never extends), so the "N more
instance(s) not judged" branch runs without 30 s of work.

`target_fleet` runs `fleet.fleet` and `fleet.history` against that server and checks what the Fleet page
and `specmodel fleet` then show: every instance with data is judged or listed as a problem (never dropped
silently), none with a NaN or infinite counter is judged (it read as "speculation off"), every number in the
JSON is finite or null, an instance without a preset is never predicted.
"""

from __future__ import annotations

import contextlib
import json
import math
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import httpx
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from specmodel import Scenario, bounds
from specmodel.errors import SpecModelError
from specmodel.metrics import fleet, promapi
from specmodel.model.scenario import with_changes
from specmodel.text import safe_text
from tests.fuzz_structured import MAX_BYTES, _sized
from tests.replay import start_quiet_server

FIXTURES = Path(__file__).parent / "fixtures"
AT_S = 1_700_000_000.0
_CATALOGUE = dict(fleet._catalogue())
_BY = {b.strip() for b in fleet.BY.split(",")}
_INFO_BY = {"job", "instance", "engine", "num_gpu_blocks", "block_size"}


def _engine_rows(text: str) -> list[tuple[dict, float]]:
    """One instance's fleet-query rows from a /metrics sample: the catalogued series, with the labels the
    query keeps (its `by` clause), named by fleet.SERIES_LABEL."""
    rows = []
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name not in _CATALOGUE:
                continue
            keep = _INFO_BY if _CATALOGUE[s.name] == "info" else _BY
            rows.append(({**{k: v for k, v in s.labels.items() if k in keep}, fleet.SERIES_LABEL: s.name}, s.value))
    return rows


ENGINES = {p.name.removesuffix("_sample.txt"): _engine_rows(p.read_text(encoding="utf-8"))
           for p in sorted(FIXTURES.glob("*_sample.txt"))}
MODELS = ["meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-70B-Instruct", "Qwen/Qwen3-8B",
          "Llama 3.3 70B", "deepseek-ai/DeepSeek-V3", "my-finetune-v2", "undefined", "", "\x1b[31mred\x1b[0m",
          "[x](http://evil.example)", "m" * 300, "see https://evil.example/x\nFAKE: pays off 9.99x \u202e",
          "admin@evil.example **b** <b>x</b> :red[r]"]
BAD_VALUES = ["NaN", "+Inf", "-Inf", "1e308", "1e300", "-5", "0", "9" * 400, "x", "", "1e-320", "-0"]
JOBS = ["vllm", "vllm", "sglang", "", "job\nwith\x07control", "j" * 300, "www.evil.example\n# FAKE \u200b"]
SELECTORS = ["", "", 'job="vllm"', '{job=~"vllm-.*"}', 'job="a"}{', "x\n", "{}"]
BASES = [Scenario(), Scenario.from_names(method="eagle", draft=None), Scenario.from_names(gpu="L4"),
         with_changes(Scenario(), target="Llama 3.1 70B", gpu="H100 SXM", tp=4)]


def _value(v: float) -> str:
    return "NaN" if v != v else ("+Inf" if v == math.inf else "-Inf" if v == -math.inf else repr(float(v)))


@st.composite
def _instance(draw, number: int) -> dict:
    engine = draw(st.sampled_from(sorted(ENGINES)))
    rows = [(dict(labels), _value(value)) for labels, value in ENGINES[engine]]
    model = draw(st.sampled_from(["keep"] * 4 + ["replace", "drop", "two"]))
    if model == "replace":
        name = draw(st.sampled_from(MODELS))
        rows = [({**l, "model_name": name} if "model_name" in l else l, v) for l, v in rows]
    elif model == "drop":
        rows = [({k: x for k, x in l.items() if k != "model_name"}, v) for l, v in rows]
    elif model == "two":  # two served models on one instance
        other = draw(st.sampled_from(MODELS[:5]))
        rows += [({**l, "model_name": other}, v) for l, v in rows if "model_name" in l]
    scale = draw(st.sampled_from([1.0] * 6 + [0.0, 1e-6, 1e6, 1e300]))
    if scale != 1.0:
        rows = [(l, _value(float(v) * scale) if v not in ("NaN", "+Inf", "-Inf") else v) for l, v in rows]
    for _ in range(draw(st.sampled_from([0] * 5 + [1, 2, 5]))):
        if rows:
            at = draw(st.integers(0, len(rows) - 1))
            rows[at] = (rows[at][0], draw(st.sampled_from(BAD_VALUES)))
    if draw(st.integers(0, 19)) == 0:
        rows = [(l, "NaN") for l, _ in rows]
    if draw(st.integers(0, 9)) == 0 and rows:  # a series missing from this instance
        del rows[draw(st.integers(0, len(rows) - 1))]
    job = draw(st.sampled_from(JOBS))
    instance = draw(st.sampled_from([f"gpu-{number}:8000", f"gpu-{number}:8000", "", "i\x1b[2J" + str(number)]))
    where = {"job": job, "instance": instance}
    missing = draw(st.sampled_from([()] * 8 + [("job",), ("instance",)]))
    for key in missing:
        where.pop(key)
    up = draw(st.sampled_from(["1", "1", "1", "0", None]))
    data = draw(st.sampled_from([True] * 9 + [False]))  # False: a target that is down and has no series
    out = [({**l, **where}, v) for l, v in rows] if data else []
    if up is not None:
        out.append(({fleet.SERIES_LABEL: "up", **where}, up))
    target_model = draw(st.sampled_from([None] * 3 + MODELS[:6]))
    target = {"labels": {**where, **({draw(st.sampled_from(fleet.TARGET_MODEL_LABELS)): target_model}
                                     if target_model else {})},
              "health": "up" if up != "0" else "down", "lastError": draw(st.sampled_from(
                  ["", "connection refused", "[x](http://evil.example) \x1b[31m", "e" * 500])),
              "scrapeUrl": f"http://u:secret@{instance or 'h'}/metrics"}
    # the labels as the fleet shows them (promapi reads every label through the text-safety function)
    key = (safe_text(where.get("job", "")), safe_text(where.get("instance", "")))
    return {"rows": out, "target": target, "key": key,
            "data": data and bool(rows)}


def _answer(status: str, result_type: str, result) -> bytes:
    return json.dumps({"status": "success", "data": {"resultType": result_type, "result": result}}).encode()


@st.composite
def fleet_answers(draw):
    """A fleet's three Prometheus answers and the user's settings (see the module's docstring)."""
    count = _sized(draw, [1, 1, 2, 3, 5, 12], [max(20, MAX_BYTES // 4000)])
    instances = [draw(_instance(i)) for i in range(count)]
    if draw(st.integers(0, 9)) == 0 and len(instances) > 1:  # two scrape targets with the same labels
        instances.append(instances[0])
    vector = [{"metric": l, "value": [AT_S, v]} for i in instances for l, v in i["rows"]]
    if draw(st.integers(0, 9)) == 0:  # a series that is not the fleet query's
        vector.append({"metric": {"__name__": "other", "job": "x"}, "value": [AT_S, "1"]})
    points = draw(st.sampled_from([1, 3, 3, 10]))
    growth = draw(st.sampled_from([1.0, 1.0, 0.5, 2.0]))  # how the increases change from point to point
    matrix = [{"metric": l, "values": [[AT_S - 600 + 60 * p, v if v in BAD_VALUES else _value(float(v) * growth ** p)]
                                       for p in range(points) if draw(st.integers(0, 19)) or p == 0]}
              for i in instances for l, v in i["rows"]]
    targets = {"status": "success", "data": {"activeTargets": [i["target"] for i in instances]}}
    if draw(st.integers(0, 14)) == 0:
        targets = {"status": "error", "errorType": "internal", "error": "targets [unavailable](http://evil.example)"}
    routes = {"/api/v1/query": _answer("success", "vector", vector),
              "/api/v1/query_range": _answer("success", "matrix", matrix),
              "/api/v1/targets": json.dumps(targets).encode()}
    settings = {"window": draw(st.sampled_from(["5m", "5m", "30s", "1h"])), "selector": draw(st.sampled_from(SELECTORS)),
                "k": draw(st.sampled_from([None, None, None, 3, 1, 64])), "base": draw(st.sampled_from(BASES)),
                "deadline": draw(st.sampled_from([None] * 9 + [0.0])),
                "models": draw(st.lists(st.sampled_from(MODELS[:4]), max_size=2)),
                "jobs": draw(st.lists(st.sampled_from(JOBS[:3]), max_size=2))}
    return routes, instances, settings


def one_instance_answers(instance: str, job: str = "vllm", prefix: str = "") -> dict[str, bytes]:
    """The three Prometheus answers for one vLLM V1 instance with these labels, every one of its series
    from the reference sample (issue 41: a 200,000-character instance label, a label with a newline; the
    Fleet page's bench, bench/bench_fleet_label.py). With `prefix` ("/test-name"), the Prometheus answers
    at server_url() + prefix: the Fleet page caches its answers by URL for 30 s, and every app in one
    process (AppTest) shares that cache, so a page test uses a URL of its own."""
    rows = [({**labels, "job": job, "instance": instance}, _value(float(v))) for labels, v in ENGINES["vllm_v1_specdecode"]]
    vector = [{"metric": labels, "value": [AT_S, v]} for labels, v in rows]
    matrix = [{"metric": labels, "values": [[AT_S - 60, v]]} for labels, v in rows]
    targets = {"activeTargets": [{"labels": {"job": job, "instance": instance}, "health": "up", "lastError": "",
                                  "scrapeUrl": "http://h/metrics"}]}
    return {prefix + "/api/v1/query": _answer("success", "vector", vector),
            prefix + "/api/v1/query_range": _answer("success", "matrix", matrix),
            prefix + "/api/v1/targets": json.dumps({"status": "success", "data": targets}).encode()}


# --- the server ------------------------------------------------------------------------------------------

class _Routes:
    """What the server answers on each API path next (one input at a time, under `lock`)."""
    answers: dict[str, bytes] = {}
    lock = threading.Lock()


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        body = _Routes.answers.get(urlsplit(self.path).path)
        self.send_response(200 if body is not None else 404)
        body = body if body is not None else b"404 page not found"
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET  # noqa: N815 - a long query may come as a form

    def log_message(self, *args):
        pass


_server: ThreadingHTTPServer | None = None


def server_url() -> str:
    global _server
    if _server is None:
        _server = start_quiet_server(_Handler)
    return f"http://127.0.0.1:{_server.server_address[1]}"


# --- the target ------------------------------------------------------------------------------------------

def target_fleet(item) -> fleet.FleetReport | None:
    """The fleet table and its history from one drawn fleet; raises AssertionError on what a user would
    see wrong, SpecModelError where the answer is refused with a message."""
    routes, instances, s = item
    server = promapi.PromServer(server_url(), timeout_s=10.0)

    def spent():  # an enclosing work deadline already over (a fresh block each time), or none
        return bounds.work_deadline(s["deadline"]) if s["deadline"] is not None else contextlib.nullcontext()

    refused = None
    with _Routes.lock, httpx.Client(trust_env=False) as client:
        _Routes.answers = routes
        try:
            with spent():
                report = fleet.fleet(client, server, s["base"], window=s["window"], selector=s["selector"],
                                     at_s=AT_S, k=s["k"])
        except SpecModelError as exc:  # the history is asked for whatever the table did, as the page does
            refused = exc
        try:
            with spent():
                fleet.history(client, server, window=s["window"], span="10m", selector=s["selector"], end_s=AT_S)
        except SpecModelError:
            pass
    if refused is not None:
        raise refused
    _check(report, instances, s)
    return report


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan  # as promapi reads a value that is not a number


def _check(report: fleet.FleetReport, instances: list[dict], s: dict) -> None:
    judged = {(i.job, i.instance) for i in report.instances} | {(p["job"], p["instance"]) for p in report.problems}
    cut = any(p["job"] == "any" for p in report.problems)
    with_data = {i["key"] for i in instances if i["data"]}
    if not cut and not with_data <= judged:
        raise AssertionError(f"instances with series neither judged nor listed: {sorted(with_data - judged)[:3]}")
    infinite = {i["key"] for i in instances if any(l[fleet.SERIES_LABEL] in fleet._INCREASES and not math.isfinite(
        _float(v)) for l, v in i["rows"])}
    if infinite & {(i.job, i.instance) for i in report.instances}:  # read as "off", or with a wrong k
        raise AssertionError(f"an instance with a NaN or infinite counter was judged: {sorted(infinite)[:3]}")
    for i in report.instances:
        out = i.to_dict()
        json.dumps(out, allow_nan=False)  # every number finite or null
        if i.predicted_on == fleet.UNKNOWN_MODEL and (out["predicted_speedup"] is not None or i.loses):
            raise AssertionError(f"an instance without a preset was predicted: {out}")
    table = report.table()
    fleet.notes(report)
    shown = fleet.select(table, models=s["models"], jobs=s["jobs"])
    fleet.notes(report, shown)
    fleet.select(table, like=shown)
    report.losing  # noqa: B018 - the property the page's headline reads


__all__ = ["fleet_answers", "server_url", "target_fleet"]
