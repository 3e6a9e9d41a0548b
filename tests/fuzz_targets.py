"""Every reader and parser, and the CLI, as fuzz targets: one list, TARGETS, of (name, strategy, function).

A target's function takes one input drawn from its strategy and returns normally or raises
SpecModelError (the project's one user-facing error). Anything else escaping is a bug. The CLI
target also fails on an exit code other than 0 or 2.

tests/test_fuzz.py runs every target with a quick hypothesis profile inside `make test`;
`make fuzz` (python -m tests.fuzz) runs a long profile and counts inputs tried and failed.

Inputs: random bytes, truncations and edits of the reference samples (tests/fixtures/), JSON with
values of the wrong type, huge numbers, NaN and infinities, unicode names, duplicated headers,
empty files. Prometheus API responses come from a real HTTP server on 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import os
import re
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
from hypothesis import strategies as st

from specmodel import Scenario, cli, runs
from specmodel.errors import SpecModelError
from specmodel.export.prediction import prediction_dict
from specmodel.export.report import break_even_csv, html_report
from specmodel.metrics import fleet, live, prom, promapi
from specmodel.metrics.scrape import ScrapePolicy
from specmodel.model.roofline import Efficiency
from specmodel.plan import workloads
from specmodel.runs import logs
from specmodel.runs.load import UNEXPECTED
from specmodel.runs.review import review
from specmodel.text import MAX_MESSAGE_CHARS, safe_text
from tests import fuzz_fleet as fleet_fuzz
from tests import fuzz_formats as formats
from tests import fuzz_rows as row_fuzz
from tests import fuzz_shapes as shapes
from tests import fuzz_structured as structured
from tests.replay import start_quiet_server

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
SAMPLES = ROOT / "sample_runs"


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


RUN_FILES = {p.name: _read(p) for p in [
    FIXTURES / "seed_runs.csv", FIXTURES / "leviathan_2023.csv", FIXTURES / "vllm_bench_serve_sample.json",
    FIXTURES / "vllm_bench_serve_baseline_sample.json", FIXTURES / "guidellm_benchmarks_sample.csv",
    FIXTURES / "guidellm_baseline_benchmarks.json", SAMPLES / "multi_workload.csv", SAMPLES / "guidellm_sweep.csv",
    SAMPLES / "vllm_bench_eagle_k3.json", FIXTURES / "vllm_v1_specdecode.log", FIXTURES / "vllm_per_request_spec.jsonl",
    FIXTURES / "aiperf_profile_export_aiperf.json"]}
PROM_FILES = {p.name: _read(p) for p in sorted(FIXTURES.glob("*_sample.txt"))}
WORKLOAD_FILES = {
    "workloads.csv": "label,share,alpha,survival,temperature,notes,alpha_ngram\n"
                     "extraction,0.5,0.7,,0,JSON extraction,0.6\nchat,0.5,0.4,\"0.5, 0.3\",0.8,chat assistant,\n",
    "workloads.json": json.dumps({"workloads": [
        {"label": "extraction", "share": 0.5, "alpha": 0.7, "temperature": 0.0},
        {"label": "chat", "share": 0.5, "alpha": 0.4, "survival": [0.5, 0.3], "alpha_eagle": 0.5}]}),
}

# --- building blocks ------------------------------------------------------------------------------

ODD_NUMBERS = ["0", "-0", "1", "-1", "0.5", "NaN", "nan", "inf", "-inf", "+Inf", "Infinity", "1e308", "1e309",
               "-1e308", "9" * 400, "9" * 5000, "1e-320", "0x10", "1_000", "1_0", "3,5", "", " ", "0.7.1", "½", "٣",
               "\uff14", "1e", "--1"]
ODD_TEXT = ["", " ", "é", "名前", "<script>alert(1)</script>", "=cmd|' /C calc'!A0", "a,b", "\"", "'", "\\",
            "\n", "\t", "\x00", "\ufeff", "💥", "x" * 300, "null", "true", "[]", "{}"]


def _json_leaf():
    return st.one_of(
        st.none(), st.booleans(), st.integers(min_value=-(10 ** 30), max_value=10 ** 30),
        st.sampled_from([10 ** 400, -(10 ** 400), 2 ** 63, -(2 ** 63) - 1]),
        st.floats(allow_nan=True, allow_infinity=True),
        st.sampled_from(ODD_NUMBERS + ODD_TEXT), st.text(max_size=12))


JSON_VALUE = st.recursive(_json_leaf(), lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)), max_leaves=12)


def _dumps(obj) -> str:
    """JSON as Python writes it: NaN and Infinity literals allowed, ints of any size."""
    return json.dumps(obj, allow_nan=True)


@st.composite
def edited_text(draw, texts: dict[str, str]):
    """A reference text with a few edits: truncation, deleted/duplicated/inserted lines, replaced
    numbers or cells, unicode."""
    name = draw(st.sampled_from(sorted(texts)))
    lines = texts[name].splitlines(keepends=True)
    for _ in range(draw(st.integers(0, 4))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        kind = draw(st.sampled_from(["delete", "duplicate", "insert", "number", "cell", "swap_header"]))
        if kind == "delete":
            del lines[i]
        elif kind == "duplicate":
            lines.insert(i, lines[i])
        elif kind == "insert":
            lines.insert(i, draw(st.one_of(st.sampled_from(ODD_TEXT), st.text(max_size=40))) + "\n")
        elif kind == "number":
            import re
            numbers = list(re.finditer(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", lines[i]))
            if numbers:
                m = draw(st.sampled_from(numbers))
                lines[i] = lines[i][:m.start()] + draw(st.sampled_from(ODD_NUMBERS)) + lines[i][m.end():]
        elif kind == "cell":
            sep = "," if lines[i].count(",") else " "
            cells = lines[i].rstrip("\n").split(sep)
            j = draw(st.integers(0, len(cells) - 1))
            cells[j] = draw(st.sampled_from(ODD_NUMBERS + ODD_TEXT))
            lines[i] = sep.join(cells) + "\n"
        else:  # duplicate the first line's first cell (duplicated headers)
            first = lines[0].rstrip("\n").split(",")
            lines[0] = ",".join(first + first[:draw(st.integers(1, max(1, len(first))))]) + "\n"
    text = "".join(lines)
    if draw(st.booleans()):
        text = text[:draw(st.integers(0, len(text)))]
    return name, text


@st.composite
def retyped_json(draw, texts: dict[str, str]):
    """A reference JSON document with some values replaced by values of other types."""
    names = sorted(n for n in texts if n.endswith(".json"))
    name = draw(st.sampled_from(names))
    doc = json.loads(texts[name])
    paths = []

    def walk(node, path):
        paths.append(path)
        if isinstance(node, dict):
            for key, v in node.items():
                walk(v, path + (key,))
        elif isinstance(node, list):
            for i, v in enumerate(node[:3]):
                walk(v, path + (i,))

    walk(doc, ())
    for _ in range(draw(st.integers(1, 5))):
        path = draw(st.sampled_from(paths))
        value = draw(JSON_VALUE)
        if not path:
            doc = value
            break
        node = doc
        try:
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = value
        except (KeyError, IndexError, TypeError):
            continue
    return name, _dumps(doc)


CSV_HEADERS = sorted(set(runs.COLUMNS) | set(runs.ALIAS_INDEX) | {"p1", "pos_2", "accept_pos3", "é", ""})


@st.composite
def synthetic_csv(draw):
    """A CSV from the known headers (aliases, duplicates, odd names) and odd cells."""
    headers = draw(st.lists(st.sampled_from(CSV_HEADERS) | st.text(max_size=6), min_size=1, max_size=10))
    rows = draw(st.lists(st.lists(st.sampled_from(ODD_NUMBERS + ODD_TEXT + ["0.7", "4", "L40S", "eagle",
                                                                           "Llama 3.1 8B", "100", "2.5"]),
                                  min_size=len(headers), max_size=len(headers)), max_size=4))
    buf = io.StringIO()
    import csv as _csv
    w = _csv.writer(buf)
    w.writerow(headers)
    w.writerows(rows)
    return "fuzz.csv", buf.getvalue()


HOSTILE_NUMBERS = ["64", "65", "100000", "1000000", "9" * 5000, "-" + "9" * 400, "1e300", "0.7", "4", "1", "0"]


@st.composite
def hostile_csv(draw):
    """A run CSV that reads past the header: known columns, values at and past every bound (k, long
    profiles, integers of thousands of digits), trailing delimiters, rows longer or shorter than the
    header, control characters and URLs in names, UTF-16."""
    header = ["workload", "concurrency", "k", draw(st.sampled_from(["alpha", "tokens_per_step", "survival",
                                                                      "draft_acceptance_rate"])),
              "baseline_tok_s", "spec_tok_s"]
    rows = []
    for _ in range(draw(st.integers(1, 6))):
        survival = ";".join(["0.5"] * draw(st.sampled_from([1, 8, 64, 65, 300])))
        cells = [draw(st.sampled_from(["chat", "a\x00b", "http://evil.example/x", "=cmd|' /C calc'!A0",
                                       "\u202eevil", "x" * 300])),
                 draw(st.sampled_from(HOSTILE_NUMBERS)), draw(st.sampled_from(HOSTILE_NUMBERS)),
                 survival if header[3] == "survival" else draw(st.sampled_from(HOSTILE_NUMBERS + ["0.7", "2.5"])),
                 draw(st.sampled_from(["100", "-5", "0", "true", "9" * 5000])), draw(st.sampled_from(["150", "1e309"]))]
        tail = draw(st.sampled_from(["", ",", ",,", ",7", ",x,y"]))
        if draw(st.booleans()):
            cells = cells[:draw(st.integers(1, len(cells)))]
        rows.append(",".join(cells) + tail)
    text = ",".join(header) + draw(st.sampled_from(["", ",", ",k", ",gamma", ",alpha"])) + "\n" + "\n".join(rows) + "\n"
    data = text.encode(draw(st.sampled_from(["utf-8", "utf-8", "utf-16", "utf-32", "cp1252"])), "replace")
    return "hostile.csv", data


@st.composite
def hostile_json(draw):
    """vllm bench serve JSON at and past the bounds: deep nesting, huge integers, booleans, long lists."""
    depth = draw(st.sampled_from([1, 10, 63, 64, 65, 2000, 100_000]))
    positions = draw(st.sampled_from([1, 4, 64, 65, 10_000]))
    doc = {"output_throughput": draw(st.sampled_from([150.0, True, -5, "x", None])),
           "max_concurrency": draw(st.sampled_from([1, 64, 10 ** 40, True])),
           "spec_decode_num_drafts": 100, "spec_decode_draft_tokens": draw(st.sampled_from([400, 10 ** 7])),
           "spec_decode_per_position_acceptance_rates": [0.5] * positions}
    text = json.dumps(doc)
    if depth > 1:
        text = text[:-1] + ', "x": ' + "[" * depth + "]" * depth + "}"
    if draw(st.booleans()):
        text = text.replace('"max_concurrency": 1,', '"max_concurrency": ' + "9" * 5000 + ",")
    return "hostile.json", text


def _bound(strategy, bound=None):
    """(name, data) inputs as (name, data, row bound) ones (fuzz_formats' shape), with the real bound."""
    return strategy.map(lambda item: (*item, bound))


def _some(names: list[str]) -> dict[str, str]:
    return {n: RUN_FILES[n] for n in names}


# One target per format (fuzz_formats.py says why): each reader gets all of its target's inputs.
RUN_FORMATS = {
    "runs csv": st.one_of(formats.plain_csvs(), formats.plain_csvs(), _bound(synthetic_csv()), _bound(hostile_csv()),
                          _bound(shapes.shaped_csvs()),
                          _bound(edited_text(_some(["seed_runs.csv", "leviathan_2023.csv", "multi_workload.csv"])))),
    "runs guidellm": st.one_of(formats.guidellm_files(), formats.guidellm_files(),
                               _bound(edited_text(_some(["guidellm_benchmarks_sample.csv", "guidellm_sweep.csv",
                                                         "guidellm_baseline_benchmarks.json"]))),
                               _bound(retyped_json(_some(["guidellm_baseline_benchmarks.json"])))),
    "runs vllm bench": st.one_of(formats.vllm_bench_files(), formats.vllm_bench_files(), _bound(hostile_json()),
                                 _bound(structured.json_files()),
                                 _bound(retyped_json(_some(["vllm_bench_serve_sample.json", "vllm_bench_eagle_k3.json",
                                                            "vllm_bench_serve_baseline_sample.json"])))),
    "runs spec json": formats.spec_json_files(),
    "runs vllm log": st.one_of(_bound(structured.log_files()), _bound(structured.log_files()),
                               _bound(shapes.shaped_logs()), _bound(shapes.shaped_logs()),
                               _bound(edited_text(_some(["vllm_v1_specdecode.log"])))),
    "runs rows": row_fuzz.validated_rows(),  # plain CSV rows that reach validation's every check
    "runs bytes": st.one_of(formats.run_bytes(), formats.run_bytes(),
                            _bound(st.tuples(st.sampled_from(["x.csv", "x.json", "<b>x</b>.csv", "名前.json"]),
                                             st.binary(max_size=300))),
                            st.just(("empty.csv", "", None)), st.just(("bom.csv", "\ufeff", None))),
}


@contextlib.contextmanager
def _readers_raise():
    """Without read_runs' safety net (an unexpected error in one file's reader becomes that file's problem, so
    an upload's other files load): here a reader's bug escapes with its own traceback, for the fuzz report."""
    from specmodel.runs import load
    kept, load._UNEXPECTED = load._UNEXPECTED, ()
    try:
        yield
    finally:
        load._UNEXPECTED = kept


def target_runs(item) -> None:
    """Read one run file (a path on disk for the name "PATH") with its row bound (and the RunDefaults a fourth
    item gives), check what was read, and do with it what the Past runs page and `runs` do next: review,
    export, the HTML report."""
    name, data, bound, *defaults = item
    data = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
    if name == "PATH":
        name, source = "run_file.csv", _write("run_file.csv", data)
    else:
        source = (name, data)
    with formats.row_bound(bound), _readers_raise():
        table = runs.read_runs([source], *defaults)
    if name.endswith(".log"):  # the Past runs page's acceptance-over-time table
        logs.acceptance_trend(data.decode("utf-8", "replace"))
    for p in table.problems:  # every problem names its file (as it may be shown) and says what was wrong, on one line
        if p.message.startswith(UNEXPECTED):  # a reader's bug, caught so the upload's other files load
            raise AssertionError(f"a reader raised on this input: {p}")
        if not str(p).startswith(safe_text(name)) or not p.message:
            raise AssertionError(f"a problem that does not name its file: {p}")
        if "\n" in str(p) or len(str(p)) > 3 * MAX_MESSAGE_CHARS:
            raise AssertionError(f"a problem of more than one line or past the message cut: {str(p)[:200]!r}")
    table.problems_frame()
    if not table.rows.empty:  # what the Past runs page and `runs` do next with what was read
        if (table.rows["k"] > runs.MAX_K).any():
            raise AssertionError("a row with k above the bound was loaded")
        for text in table.rows["workload"]:
            if any(ord(c) < 32 or c in "\u202e\x7f" for c in str(text)):
                raise AssertionError(f"a control character kept in a workload name: {text!r}")
        result = review(table.rows, Efficiency())
        _every_unpredicted_run_says_why(result.evaluated)
        exported = break_even_csv(result.table)
        for line in list(csv.reader(io.StringIO(exported)))[1:]:  # every cell a spreadsheet would run is inert
            for cell in line:
                if cell[:1] in ("=", "+", "@") or (cell[:1] == "-" and not _NUMBER.fullmatch(cell)):
                    raise AssertionError(f"an exported cell would run as a formula: {cell!r}")
        for value in result.evaluated["predicted_speedup"].dropna():
            if not math.isfinite(value):
                raise AssertionError(f"a predicted speedup that is not a finite number: {value}")
        html_report(result.evaluated, result.table, result.summary, [], table.problems, None)


_NUMBER = __import__("re").compile(r"-?\d+(\.\d+)?(e[-+]?\d+)?")


def _every_unpredicted_run_says_why(evaluated) -> None:
    """A run without a predicted speedup is judged on its measurement with its name's refusal (no_prediction)
    or says why in its advice ("no prediction: …"): none is left blank without a word (issue 41, 6)."""
    from specmodel.runs.unpredicted import NO_PREDICTION
    from specmodel.runs.unpredicted import unpredicted_rows
    blank = ~evaluated["predicted_speedup"].map(lambda v: isinstance(v, float) and math.isfinite(v))
    named = unpredicted_rows(evaluated)
    for i in [i for i, b in enumerate(blank.tolist()) if b and not named[i]]:
        advice = evaluated["advice"].iloc[i]
        if not (isinstance(advice, str) and advice.startswith(NO_PREDICTION)):
            row = evaluated.iloc[i]
            raise AssertionError(f"a run left without a prediction and no word why: {row['file']} row {row['row']}")


# --- Prometheus text ------------------------------------------------------------------------------

PROM_INPUT = st.one_of(edited_text(PROM_FILES), st.tuples(st.just("random"), st.text(max_size=200)),
                       st.tuples(st.just("bytes"), st.binary(max_size=200).map(lambda b: b.decode("latin-1"))))


def target_prom_text(pair) -> None:
    (_, first), (_, second), model_name, k = pair
    a = prom.parse_snapshot(first, model_name=model_name, at=0.0, k=k)
    b = prom.parse_snapshot(second, model_name=model_name, at=2.0, k=k)
    w = prom.window_between(a, b)
    stats = prom.stats_from_window(w)
    json.dumps(stats.to_dict(), allow_nan=False)
    live.live_verdict(stats, Scenario())
    prom.window_over([a, b, b])


@st.composite
def large_positions(draw):
    """A vLLM V1 page whose per-position counters carry labels at and past the k bound."""
    position = draw(st.sampled_from([0, 3, 63, 64, 65, 999_999, -1, "x", "1e9"]))
    engines = draw(st.integers(1, 3))
    lines = []
    for e in range(engines):
        lines.append(f'vllm:spec_decode_num_drafts_total{{engine="{e}",model_name="m"}} {draw(st.integers(0, 10**6))}')
        lines.append(f'vllm:spec_decode_num_accepted_tokens_total{{engine="{e}",model_name="m"}} 5')
        lines.append(f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="{e}",model_name="m",'
                     f'position="{position}"}} 4')
    return "positions", "\n".join(lines) + "\n"


PROM_INPUT = st.one_of(PROM_INPUT, large_positions(), structured.prom_texts().map(lambda t: ("structured", t)))
PROM_PAIR = st.tuples(PROM_INPUT, PROM_INPUT, st.one_of(st.none(), st.sampled_from(ODD_TEXT)),
                      st.one_of(st.none(), st.integers(-2, 40)))
# A pair of edits of the same sample is likelier to parse on both sides and reach the statistics.
PROM_SAME = st.sampled_from(sorted(PROM_FILES)).flatmap(
    lambda n: st.tuples(edited_text({n: PROM_FILES[n]}), edited_text({n: PROM_FILES[n]}),
                        st.none(), st.one_of(st.none(), st.integers(1, 8))))

def _grown(text: str, factor: float) -> str:
    """A /metrics page a window later: every sample's value times `factor` (comments kept)."""
    out = []
    for line in text.splitlines(keepends=True):
        head, _, value = line.rstrip("\n").rpartition(" ")
        try:
            out.append(f"{head} {float(value) * factor!r}\n" if head and not line.startswith("#") else line)
        except ValueError:
            out.append(line)
    return "".join(out)


@st.composite
def grown_pairs(draw):
    """A reference page and the same page a window later, the later one sometimes edited: counters that grew,
    so the pair reaches the window's statistics and window_over (two independent edits mostly stop earlier,
    at a counter that went down or a page of another engine, and prom.py's coverage swung 84-93% per run)."""
    name = draw(st.sampled_from(sorted(PROM_FILES)))
    later = _grown(PROM_FILES[name], draw(st.sampled_from([1.5, 2.0, 1.0001, 1e6])))
    if draw(st.booleans()):
        _, later = draw(edited_text({name: later}))
    return (name, PROM_FILES[name]), (name, later), None, draw(st.one_of(st.none(), st.integers(1, 8)))


COUNT = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 10 ** 20))
WINDOW_INPUT = st.builds(
    prom.SpecWindow, server=st.sampled_from(prom.SERVERS), k=st.one_of(st.none(), st.integers(-1, 40)),
    window_s=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.just(10.0)),
    spec_enabled=st.booleans(), drafts=COUNT, draft_tokens=COUNT, accepted=COUNT,
    per_position=st.one_of(st.none(), st.lists(COUNT.filter(lambda x: x is not None), max_size=6).map(tuple)),
    generation_tokens=COUNT, running=COUNT, waiting=COUNT, kv_usage=COUNT,
    gauge_tokens_per_step=COUNT, gauge_draft_acceptance_rate=COUNT,
    num_gpu_blocks=st.one_of(st.none(), st.integers(-1, 10 ** 9)), block_size=st.one_of(st.none(), st.integers(-1, 64)),
    counter_reset=st.booleans(), model_name=st.one_of(st.none(), st.sampled_from(ODD_TEXT)))


def target_prom_window(w) -> None:
    stats = prom.stats_from_window(w)
    json.dumps(stats.to_dict(), allow_nan=False)
    v = live.live_verdict(stats, Scenario())
    live.append_history([], live.history_point(stats, 1.0, v))


# --- Prometheus HTTP API, from a real server on 127.0.0.1 ---------------------------------------------

class _Canned:
    """What the fuzz server answers next: status, content type, body, extra headers (one request at a time)."""
    status, content_type, body = 200, "application/json", b"{}"
    headers: dict = {}
    lock = threading.Lock()


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        self.send_response(_Canned.status)
        self.send_header("Content-Type", _Canned.content_type)
        self.send_header("Content-Length", str(len(_Canned.body)))
        if 300 <= _Canned.status < 400:
            self.send_header("Location", "http://169.254.169.254/latest/meta-data/")
        for key, value in _Canned.headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(_Canned.body)

    def log_message(self, *args):
        pass


_server: ThreadingHTTPServer | None = None


def fuzz_server_url() -> str:
    """Start (once) the canned-response server; its base URL."""
    global _server
    if _server is None:
        _server = start_quiet_server(_Handler)
    return f"http://127.0.0.1:{_server.server_address[1]}"


def _vector(rows):
    return {"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": labels, "value": [1700000000.0, value]} for labels, value in rows]}}


def _fleet_rows() -> list:
    """The fleet query's answer for one vLLM V1 instance, built from the reference sample."""
    from prometheus_client.parser import text_string_to_metric_families
    rows = []
    for fam in text_string_to_metric_families(PROM_FILES["vllm_v1_specdecode_sample.txt"]):
        for s in fam.samples:
            if s.name.startswith("vllm:") and not s.name.endswith("_created"):
                rows.append(({**s.labels, fleet.SERIES_LABEL: s.name, "job": "vllm", "instance": "gpu-0:8000"},
                             str(s.value)))
    rows.append(({fleet.SERIES_LABEL: "up", "job": "vllm", "instance": "gpu-0:8000"}, "1"))
    return rows


FLEET_ROWS = _fleet_rows()
API_BASES = [
    _vector(FLEET_ROWS),
    {"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": labels, "values": [[1700000000.0 + 60 * i, value] for i in range(3)]} for labels, value in FLEET_ROWS]}},
    {"status": "success", "data": {"activeTargets": [{"labels": {"job": "vllm", "instance": "gpu-0:8000"},
                                                      "health": "down", "lastError": "connection refused",
                                                      "scrapeUrl": "http://u:p@gpu-0:8000/metrics"}]}},
    {"status": "success", "data": {"resultType": "scalar", "result": [1700000000.0, "1"]}},
    {"status": "error", "errorType": "bad_data", "error": "parse error at char 3"},
    {"status": "error", "errorType": "timeout", "error": "query timed out in expression evaluation"},
]
API_TEXTS = {f"api{i}.json": _dumps(doc) for i, doc in enumerate(API_BASES)}

API_INPUT = st.tuples(
    st.one_of(retyped_json(API_TEXTS), edited_text(API_TEXTS),
              st.tuples(st.just("bytes"), st.binary(max_size=200).map(lambda b: b.decode("latin-1")))),
    st.sampled_from([200, 200, 200, 302, 400, 401, 404, 422, 500, 503]),
    st.sampled_from(["application/json", "text/html", "text/plain; charset=utf-8"]),
    st.sampled_from(["query", "query_range", "targets", "fleet", "history"]),
    structured.prom_settings())


def _prom_settings(settings) -> tuple[str, promapi.PromAuth, tuple[float, float, float]]:
    """The user's settings as the Fleet page reads them, each refusal a message (SpecModelError): the
    window, the auth to send the fuzz server (the default when refused) and a range query's span."""
    window, url, (user, password, token), timeout, span = settings
    try:
        seconds = promapi.parse_duration(window)
        assert promapi.parse_duration(promapi.format_duration(seconds)) == seconds
    except SpecModelError:
        window = "5m"
    try:
        promapi.format_duration(span[2])
    except SpecModelError:
        pass
    auth = promapi.PromAuth()
    try:
        auth = promapi.PromAuth(user, password, token)
        auth.apply()
    except SpecModelError:
        pass
    try:
        shown = promapi.PromServer(url, auth=auth, timeout_s=timeout).shown
        assert "p@" not in shown  # a password is never shown
    except SpecModelError:
        pass
    return window, auth, span


def target_prom_api(item):
    """Run one Prometheus API call on a canned answer; the fleet report for call "fleet", else None.
    A fifth item (structured.prom_settings) gives the window, auth and span the user set."""
    (_, body), status, content_type, call, *settings = item
    window, auth, span = _prom_settings(settings[0]) if settings else ("5m", promapi.PromAuth(),
                                                                         (1700000000.0, 1700000600.0, 60.0))
    if settings:
        span = (1700000000.0 + span[0], 1700000000.0 + span[1], span[2])
    server = promapi.PromServer(fuzz_server_url(), auth=auth, timeout_s=5.0)
    with _Canned.lock, httpx.Client(trust_env=False) as client:
        _Canned.status, _Canned.content_type, _Canned.body = status, content_type, body.encode("utf-8", "replace")
        _Canned.headers = {}
        if call == "query":
            promapi.query(client, server, "up")
        elif call == "query_range":
            promapi.query_range(client, server, "up", *span)
        elif call == "targets":
            promapi.targets(client, server)
        elif call == "fleet":
            report = fleet.fleet(client, server, Scenario(), window=window, at_s=1700000000.0)
            fleet.notes(report)
            json.dumps([i.to_dict() for i in report.instances], allow_nan=False)
            report.table()
            return report
        else:
            fleet.history(client, server, window=window, span="10m", end_s=1700000600.0)


# --- workloads (Traffic mix) -------------------------------------------------------------------------

WORKLOAD_KEYS = ["label", "workload", "name", "share", "alpha", "survival", "temperature", "notes",
                 "alpha_ngram", "alpha_eagle", "alpha_draft_model", "alpha_", "alpha_é", "Label", " share "]
WORKLOAD_RECORDS = st.lists(st.dictionaries(st.sampled_from(WORKLOAD_KEYS) | st.text(max_size=6), JSON_VALUE,
                                            max_size=7), max_size=7)
WORKLOAD_INPUT = st.one_of(
    st.tuples(st.just("records"), WORKLOAD_RECORDS),
    st.tuples(st.just("file"), st.one_of(edited_text(WORKLOAD_FILES), retyped_json(WORKLOAD_FILES),
                                         structured.workload_files(),
                                         st.tuples(st.sampled_from(["w.csv", "w.json"]), st.text(max_size=120)))))

_tmp = Path(tempfile.mkdtemp(prefix="specmodel-fuzz-"))


def _write(name: str, text) -> str:
    path = _tmp / Path(name).name.replace("/", "_")
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
    return str(path)


def target_workloads(item) -> None:
    kind, payload = item
    if kind == "records":
        found, errors, notes = workloads.parse_workloads(payload, source="fuzz")
    else:
        name, text = payload
        found, errors, notes = workloads.read_workloads(_write(name, text))
    if found:
        found, _note = workloads.normalise_shares(found)
        workloads.workload_records(found)
        for w in found[:20]:  # what the mix comparison asks of each workload
            w.acceptance("eagle", "eagle"), w.acceptance("ngram", "eagle")
        import pandas as pd
        runs_like = pd.DataFrame({"workload": [w.label for w in found], "alpha": [w.alpha for w in found],
                                  "concurrency": [w.share * 64 for w in found],
                                  "temperature": [w.temperature for w in found], "notes": [w.notes for w in found]})
        workloads.mixed_from_whatif(0.7, runs_like)
        workloads.mixed_from_whatif(0.7, None)


# --- the CLI, in process ---------------------------------------------------------------------------

def _cli_files():
    return st.one_of(
        st.tuples(st.sampled_from(["r.csv", "r.json", "w.csv", "w.json", "<i>x</i>.csv"]), st.binary(max_size=120)),
        edited_text(RUN_FILES), edited_text(WORKLOAD_FILES), retyped_json(RUN_FILES))


OPTION_VALUES = st.sampled_from(ODD_NUMBERS + ODD_TEXT + ["2", "4", "8", "0.3", "30s", "1m", "eagle", "ngram",
                                                          "draft_model", "H100", "L40S", "a=b", "job=\"x\""])
URLS = ["http://127.0.0.1:9/metrics", "http://169.254.169.254/latest/", "ftp://127.0.0.1/", "", "127.0.0.1:9",
        "http://[fd00:ec2::254]/", "http://metadata.google.internal/", "http://u:secret@127.0.0.1:9/", "javascript:x",
        "http://127.0.0.1:99999/", "http://:80/", "FUZZ"]
OPTIONS = {
    "predict": ["--gpu", "--tp", "--target", "--draft", "--method", "--context-len", "--eta-bw", "--eta-flops",
                "--t-fixed-ms", "--t-spec-overhead-ms", "--alpha", "--accept-len", "--survival", "--k", "--k-max",
                "--t-target-ms", "--t-draft-ms", "--concurrency", "--json"],
    "presets": ["--json"],
    "runs": ["--gpu", "--k", "--pair", "--calibrate", "--csv", "--html", "--json"],
    "mix": ["--gpus", "--concurrency", "--k", "--k-max", "--methods", "--top", "--json", "--gpu", "--target"],
    "capacity": ["--users", "--rps", "--output-tokens", "--min-user-tok-s", "--max-itl-ms", "--k", "--k-max",
                 "--alpha", "--accept-len", "--gpu", "--tp", "--context-len", "--method", "--json"],
    "scrape": ["--model-name", "--k", "--alpha", "--spec-k", "--token-env", "--timeout", "--json", "--window"],
    "fleet": ["--window", "--match", "--timeout", "--user", "--k", "--alpha", "--spec-k", "--json", "--token-env"],
}
FLAGS = {"--json", "--calibrate"}


@st.composite
def cli_argv(draw):
    command = draw(st.sampled_from(sorted(OPTIONS) + ["", "--help", "nonsense"]))
    argv = [command] if command else []
    files = {}
    if command in ("runs", "mix"):
        for _ in range(draw(st.integers(0 if command == "runs" else 1, 2))):
            name, text = draw(_cli_files())
            files[name] = text
            argv.append("FILE:" + name)
    if command in ("scrape", "fleet"):
        argv.append(draw(st.sampled_from(URLS)))
        argv += ["--timeout", "1"] + (["--window", "0.2"] if command == "scrape" else [])
    for _ in range(draw(st.integers(0, 4))):
        opt = draw(st.sampled_from(OPTIONS.get(command, ["--json", "--x"]) + ["--nope", "-"]))
        argv.append(opt)
        if opt not in FLAGS:
            value = draw(OPTION_VALUES)
            if opt in ("--csv", "--html"):
                value = "OUT:" + draw(st.sampled_from(["out.csv", "out.html", "", "nodir/x.csv"]))
            if opt == "--window" and command == "scrape":
                value = draw(st.sampled_from(["0", "nan", "inf", "-1", "0.2", "1e308", "x", "", "9" * 5000, "1_0", "٥"]))
            if opt == "--window" and command == "fleet":
                value = draw(st.sampled_from(["5m", "9" * 5000 + "m", "1_0m", "٥m", "0s", "x"]))
            if opt == "--timeout":
                value = draw(st.sampled_from(["0", "nan", "inf", "-1", "0.5", "1e308", "x", ""]))
            argv.append(value)
    if command == "mix":  # keep the split search small: the CLI bounds it, the fuzz budget is short
        argv += ["--gpus", draw(st.sampled_from(["1", "2", "0", "nan", "-3"]))]
        argv += ["--k-max", draw(st.sampled_from(["1", "2", "3", "0", "x"]))]
    return argv, files


@st.composite
def valid_commands(draw):
    """Commands that pass argument parsing (valid flags, hostile values), so the input reaches the model:
    every GPU × context, the largest k and concurrency, and run files at and past the bounds."""
    from specmodel.model import presets
    command = draw(st.sampled_from(["predict", "predict", "runs", "mix"]))
    files = {}
    argv = [command]
    if command == "runs":
        name, text = draw(st.one_of(hostile_csv(), hostile_json(), edited_text(RUN_FILES), shapes.shaped_csvs(),
                                    shapes.shaped_logs()))
        files[name] = text
        argv.append("FILE:" + name)
        if draw(st.booleans()):
            argv.append("--json")
    elif command == "mix":
        name, text = draw(st.one_of(edited_text(WORKLOAD_FILES), retyped_json(WORKLOAD_FILES)))
        files[name] = text
        argv += ["FILE:" + name, "--gpus", "2", "--k-max", draw(st.sampled_from(["1", "2"]))]
    argv += ["--gpu", draw(st.sampled_from(presets.gpu_names())),
             "--context-len", draw(st.sampled_from(["0", "1024", "32768", "262144", "1048576"])),
             "--tp", draw(st.sampled_from(["1", "2", "8"]))]
    if command == "predict":
        argv += ["--target", draw(st.sampled_from(presets.model_names())),
                 "--k", draw(st.sampled_from(["0", "1", "8", "32"])),
                 "--concurrency", draw(st.sampled_from(["1", "512", "65536"]))]
        method = draw(st.sampled_from(list(presets.METHODS) + ["draft"]))
        argv += (["--draft", draw(st.sampled_from(presets.model_names()))] if method == "draft"
                 else ["--method", method])
        argv += draw(st.sampled_from([[], ["--json"], ["--survival", ",".join(["0.9"] * 32)],
                                      ["--accept-len", "33"], ["--alpha", "1"]]))
    return argv, files


def target_cli(item) -> None:
    argv, files = item
    final = []
    for a in argv:
        if a.startswith("FILE:"):
            final.append(_write(a[5:], files[a[5:]]))
        elif a.startswith("OUT:"):
            final.append(str(_tmp / a[4:]) if a[4:] else "")
        else:
            final.append(a)
    final = [a.replace("FUZZ", fuzz_server_url() + "/metrics") for a in final]
    out, err = io.StringIO(), io.StringIO()
    env_before = os.environ.get("SPECMODEL_SCRAPE_TOKEN")
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main(final)
            except SystemExit as exc:
                code = exc.code
    finally:
        if env_before is not None:
            os.environ["SPECMODEL_SCRAPE_TOKEN"] = env_before
    if code not in (0, 2, None):
        raise AssertionError(f"exit code {code!r} for {final}: {err.getvalue()[-300:]}")
    if "Traceback" in err.getvalue():
        raise AssertionError(f"traceback on stderr for {final}: {err.getvalue()[-500:]}")
    if code == 2 and not err.getvalue().strip():
        raise AssertionError(f"exit 2 without a message for {final}")
    if NUMPY_REPR.search(err.getvalue()):
        raise AssertionError(f"numpy's repr in the message for {final}: {err.getvalue()[-300:]}")
    _lines_as_a_terminal_shows_them(final, out.getvalue(), err.getvalue())


_FORGED = re.compile(r"(^|\n)[ \t]*(#+ )?FAKE")


def _lines_as_a_terminal_shows_them(argv: list[str], out: str, err: str) -> None:
    """Every line printed is cut (JSON and YAML documents aside: their text from users is cut where it is
    read), no name starts a line of its own, and an error is one line (issue 41, 4 and 5)."""
    document = "--json" in argv or argv[:1] in (["rules"], ["dashboard"])
    for stream, text in (("stdout", out), ("stderr", err)):
        longest = max(map(len, text.splitlines()), default=0)
        if longest > MAX_MESSAGE_CHARS and not (document and stream == "stdout"):
            raise AssertionError(f"a {stream} line of {longest:,} characters for {argv[:3]}")
        if _FORGED.search(text):
            raise AssertionError(f"a name started a line of its own on {stream} for {argv[:3]}")


# --- every GPU × context × method: a prediction with finite numbers, or "does not fit" ----------------------

def _scenario_space():
    from specmodel.model import presets
    return st.builds(
        lambda gpu, target, method, draft, ctx, k, conc, tp: Scenario.from_names(
            gpu=gpu, target=target, method=method, draft=draft if method == "draft_model" else None,
            context_len=ctx, k=k, concurrency=conc, tp=tp),
        st.sampled_from(presets.gpu_names()), st.sampled_from(presets.model_names()),
        st.sampled_from(presets.METHODS), st.sampled_from(presets.model_names()),
        st.sampled_from([0, 1, 1024, 8192, 32768, 131072, 262144, 1_048_576]), st.integers(0, 8),
        st.sampled_from([1, 7, 64, 512, 4096]), st.sampled_from([1, 2, 4, 8]))


def target_scenarios(s) -> None:
    from specmodel import summarize
    from specmodel.errors import DoesNotFit
    try:
        out = prediction_dict(summarize(s))
    except DoesNotFit as exc:
        if not str(exc).startswith("does not fit: ") or "GB" not in str(exc) or not exc.closest:
            raise AssertionError(f"a does-not-fit answer without its numbers or closest setting: {exc}") from None
        if exc.needed_GB <= exc.available_GB and exc.part == "target":
            raise AssertionError(f"does not fit, yet needs {exc.needed_GB} ≤ {exc.available_GB} GB") from None
        return
    json.dumps(out, allow_nan=False)  # every number finite or null
    if out["verdict"] not in ("pays off", "borderline", "loses", "off"):
        raise AssertionError(f"unknown verdict {out['verdict']}")
    if out["verdict"] == "loses" and "does not fit" in out["verdict_text"] and s.method.name == "ngram" \
            and "draft" in out["verdict_text"]:
        raise AssertionError(f"n-gram blamed on a draft: {out['verdict_text']}")


# --- the list -----------------------------------------------------------------------------------------

TARGETS = [(name, strategy, target_runs) for name, strategy in RUN_FORMATS.items()] + [
    ("prometheus text", st.one_of(PROM_PAIR, PROM_SAME, grown_pairs(), shapes.shaped_labels()), target_prom_text),
    ("prometheus windows", WINDOW_INPUT, target_prom_window),
    ("prometheus api", API_INPUT, target_prom_api),
    ("fleet", fleet_fuzz.fleet_answers(), fleet_fuzz.target_fleet),
    ("workloads", WORKLOAD_INPUT, target_workloads),
    ("cli", cli_argv(), target_cli),
    ("cli commands", valid_commands(), target_cli),
    ("scenarios", _scenario_space(), target_scenarios),
    ("text safety", shapes.hostile_names(), shapes.target_text_safety),
    ("url policy", structured.urls(), structured.target_url_policy),
    ("calibration files", structured.calibration_texts(), lambda item: structured.target_calibration(item, _write)),
    ("stacked encodings", structured.encoded_answers(), lambda item: structured.target_encodings(item, _serve)),
]

# The modules each target reads through: `make fuzz` reports the line coverage of each (>= COVERAGE_GOAL);
# "a + b": what either target ran.
COVERS = {
    "runs csv": ("runs/csv_plain.py", "runs/csv_rows.py"),
    "runs csv + runs vllm bench": ("runs/cells.py",),  # CSV cells' number styles, JSON values' types
    "runs guidellm": ("runs/guidellm.py",),
    "runs vllm bench": ("runs/vllm_bench.py",),
    "runs spec json": ("runs/spec_json.py",),
    "runs vllm log": ("runs/logs.py",),
    "runs bytes": ("runs/sniff.py",),
    "runs rows": ("runs/validate.py",),
    "prometheus text": ("metrics/prom.py",),
    "prometheus api": ("metrics/promapi.py",),
    "fleet": ("metrics/fleet.py",),
    "workloads": ("plan/workloads.py",),
    "url policy": ("metrics/scrape.py::ScrapePolicy,split_credentials,with_credentials,display_url,_host_allowed,"
                   "_allow_entry,_same_ip,_embedded_ipv4,embedded_ipv4s,refused_address,check_url",),
    "calibration files": ("model/calibration_file.py",),
    "text safety": ("text.py",),
    "runs csv + runs vllm log + cli": ("numbers.py",),
    "stacked encodings": ("metrics/fetch.py",),
}
COVERAGE_GOAL = 85.0


def _serve(body: bytes, headers: dict, status: int = 200) -> str:
    """The fuzz server's URL, answering the next requests with `status`, `body` and `headers` (text/plain)."""
    url = fuzz_server_url()
    _Canned.status, _Canned.content_type, _Canned.body, _Canned.headers = status, "text/plain", body, headers
    return url + "/metrics"
ALLOWED = (SpecModelError,)


# numpy's repr of a scalar or an array, which a person reading a message should never see.
NUMPY_REPR = re.compile(r"\bnp\.(float|int|uint|bool|str)_?\d*\(|\barray\(\[")


def check(function, value) -> None:
    """Run one input; SpecModelError is a refusal the user sees (in words, with numbers as a person
    writes them), anything else propagates."""
    try:
        function(value)
    except ALLOWED as exc:
        if NUMPY_REPR.search(str(exc)):
            raise AssertionError(f"numpy's repr in a message: {exc}") from None


__all__ = ["TARGETS", "check", "fuzz_server_url", "ScrapePolicy", "math"]
