"""Read vLLM's speculative-decoding log lines into run records, one per logged line, in time order.

Users paste these into issues because they have nothing else. Two forms (each may carry the usual
prefix, e.g. `(APIServer pid=1) INFO 09-16 05:26:57 [metrics.py:120]`):

- V1: `SpecDecoding metrics: Mean acceptance length: 2.05, Accepted throughput: 9.00 tokens/s, ...,
  Accepted: 90 tokens, Drafted: 90 tokens, Per-position acceptance rate: 0.566, 0.309, 0.177, ...`
  (older builds begin with `Draft acceptance rate: 69.4%`). E = the mean acceptance length (bonus token
  included); the per-position rates are accepted-at-position / drafts, i.e. the survival p_i; k = their count,
  or the mean draft length where drafts are shorter on average (Drafted ÷ drafts, drafts = Accepted ÷ the
  rates' sum; runs.draft_length), the count beside as max_draft_length.
- V0: `Speculative metrics: Draft acceptance rate: 0.655, System efficiency: 0.649, Number of speculative
  tokens: 4, ...`. System efficiency = emitted / (drafts · (k + 1)), so E = efficiency · (k + 1); a pasted
  line without the number of speculative tokens needs k (`--k`, or the page's "k for files that do not
  record it").

Running requests come from the engine's throughput line logged just before (`Running: 12 reqs`); the
line's timestamp becomes the row's point in time (`acceptance_trend` gives E over time as a table, at the rows' k).
Other lines are ignored, so a whole server log can be uploaded.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd

from specmodel import bounds, numbers
from specmodel.bounds import MAX_CONCURRENCY, MAX_K
from specmodel.errors import SpecModelError
from specmodel.runs.draft_length import at_mean_draft_length, k_words
from specmodel.runs.records import Problem, RunRecord

_V1 = re.compile(r"SpecDecoding metrics:\s*(?P<body>.*)$")
_V0 = re.compile(r"(?:Speculative metrics:\s*)?Draft acceptance rate:\s*(?P<rate>[\d.]+)\s*,\s*System efficiency:\s*"
                 r"(?P<eff>[\d.]+)(?P<rest>.*)$")
_RUNNING = re.compile(r"Running:\s*([0-9]+)\s*reqs")
_TIME = re.compile(r"(?P<date>\d{4}-\d{2}-\d{2}|\d{2}-\d{2})[ T](?P<time>\d{2}:\d{2}:\d{2})")
# One `Name: value` piece of a comma-separated line. The name is bounded and the match anchored, so a
# line costs time in proportion to its length (an unanchored lazy pattern backtracked quadratically:
# 100,000 letters without a colon froze the server for 30 s).
_FIELD = re.compile(r"\s*([A-Za-z][A-Za-z \-]{0,80}):(.*)", re.S)
_LEADING_NUMBER = re.compile(r"\s*([-+]?[0-9]+(?:\.[0-9]+)?)", re.ASCII)


def looks_like_log(text: str) -> bool:
    head = text[:2_000_000]
    return text.lstrip()[:1] not in "{[" and ("SpecDecoding metrics:" in head or (  # the words first: _V0 needs them
        "Draft acceptance rate:" in head and bool(_V0.search(head))))


def _fields(body: str) -> dict[str, str]:
    """`A: 1, B: 2, 3` -> {"a": "1", "b": "2, 3"}: a piece without a name continues the field before it.
    Linear in the line's length: a field's pieces are gathered in a list and joined once (appending each
    to a growing string made a 1.2 MB per-position list cost 7.9 s, a 6 MB one minutes); the load
    deadline is looked at every bounds.CHECK_EVERY pieces."""
    parts: dict[str, list[str]] = {}
    key = None
    for i, piece in enumerate(body.split(",")):
        if bounds.stop_due(i):
            break
        m = _FIELD.match(piece)
        if m and ":" not in m.group(2):
            key = m.group(1).strip().lower()
            parts[key] = [m.group(2).strip()]
        elif key is not None:
            parts[key].append(piece)
    return {key: ",".join(pieces) for key, pieces in parts.items()}


def _number(text: str | None, what: str) -> tuple[float | None, str | None]:
    """(the number a field begins with, `90 tokens` -> 90.0, or None; why the one number parser refused
    it, naming the field, or None)."""
    if text is None:
        return None, None
    m = _LEADING_NUMBER.match(text)
    if not m:
        return None, None
    try:
        return numbers.read_number(m.group(1), what), None
    except SpecModelError as exc:
        return None, str(exc)


def _survival(rates: str | None) -> list[float] | None:
    """The per-position rates; None where one is no number. A list past MAX_K positions keeps its length
    (the row is refused by it) without reading each number."""
    if not rates:
        return None
    values = [x for x in re.split(r"[,\s]+", rates.strip()) if x]
    if len(values) > MAX_K:
        return [math.nan] * len(values)
    read = [numbers.number_or_none(x) for x in values]
    return None if any(v is None for v in read) else read


def _k_of_line(text: str | None, lineno: int, problems: list) -> int | None:
    """'Number of speculative tokens' as a k in [1, MAX_K], else a problem naming the line and None."""
    value, refused = _number(text, "'Number of speculative tokens'")
    if refused:
        problems.append((lineno, f"{refused}; line left out"))
        return 0
    if value is None:
        return None
    try:
        return bounds.check_k(value, "'Number of speculative tokens'")
    except SpecModelError as exc:
        problems.append((lineno, f"{exc}; line left out"))
        return 0


def _running(line: str, lineno: int, problems: list, running):
    """The running requests an engine line gives (`Running: 12 reqs`), else the ones before it."""
    m = _RUNNING.search(line)
    if not m:
        return running
    try:
        return numbers.whole_number(m.group(1), "'Running: N reqs'", 0, MAX_CONCURRENCY)
    except SpecModelError as exc:
        problems.append((lineno, f"{exc}; the lines after it are judged without a running count"))
        return None


def _v1_rate(f: dict[str, str]) -> tuple[float, str] | None:
    """(accepted ÷ drafted tokens, where it was read) of a V1 line: its Accepted and Drafted token counts,
    else its draft acceptance rate in percent (`Avg Draft acceptance rate`, older builds `Draft acceptance rate`)."""
    accepted, drafted = _number(f.get("accepted"), "'Accepted'")[0], _number(f.get("drafted"), "'Drafted'")[0]
    if accepted is not None and drafted:
        return accepted / drafted, "Accepted / Drafted"
    for key in ("avg draft acceptance rate", "draft acceptance rate"):
        percent = _number(f.get(key), key)[0]
        if percent is not None:
            return percent / 100, key.capitalize()
    return None


def parse_lines(text: str, k: int | None = None) -> tuple[list[dict], list[tuple[int, str]]]:
    """(points, problems): one point per spec-decode line, with its line number, time and running."""
    points, problems = [], []
    running = None
    for lineno, line in enumerate(text.splitlines(), start=1):
        if bounds.stop_due(lineno):
            problems.append((lineno, f"not read from this line on: reading stopped after the {bounds.MAX_LOAD_S:g} s "
                                     "limit on processing one load; split the file"))
            break
        running = _running(line, lineno, problems, running)
        t = _TIME.search(line)
        at = f"{t.group('date')} {t.group('time')}" if t else None
        v1 = _V1.search(line)
        if v1:
            point = _v1_point(v1.group("body"), lineno, problems)
        else:
            v0 = _V0.search(line)
            point = _v0_point(v0, lineno, k, problems) if v0 else None
        if point is not None:
            points.append({"line": lineno, "time": at, "running": running, **point})
    return points, problems


def _v1_point(body: str, lineno: int, problems: list) -> dict | None:
    f = _fields(body)
    e, refused = _number(f.get("mean acceptance length"), "'Mean acceptance length'")
    survival = _survival(f.get("per-position acceptance rate"))
    if refused:
        problems.append((lineno, refused + ("; the per-position rates are read instead" if survival else "; left out")))
    if e is None and survival is None:
        if refused:
            return None
        problems.append((lineno, "a SpecDecoding line without 'Mean acceptance length' or 'Per-position "
                                 "acceptance rate'; left out"))
        return None
    return {"form": "V1", "tokens_per_step": e, "survival": survival, "k": len(survival) if survival else None,
            "accepted": _number(f.get("accepted"), "'Accepted'")[0], "drafted": _number(f.get("drafted"), "'Drafted'")[0],
            "rate": _v1_rate(f)}


def _v0_point(v0, lineno: int, k: int | None, problems: list) -> dict | None:
    eff_text = v0.group("eff")
    eff = numbers.number_or_none(eff_text)
    rest = _fields(v0.group("rest").lstrip(", "))
    k_line = _k_of_line(rest.get("number of speculative tokens"), lineno, problems)
    if k_line == 0:  # stated and refused: said above
        return None
    kk = k_line or k
    if not kk:
        problems.append((lineno, "a V0 'System efficiency' line without 'Number of speculative tokens': k is "
                                 "needed for E = efficiency · (k + 1); give it with --k or the page's "
                                 "'k for files that do not record it'"))
        return None
    if eff is None or not 0 < eff <= 1:
        why = (numbers.refusal(eff_text) if eff is None else None) or "is not in (0, 1]"
        problems.append((lineno, f"system efficiency {numbers.quoted(eff_text)} {why}; left out"))
        return None
    rate = numbers.number_or_none(v0.group("rate"))
    return {"form": "V0", "tokens_per_step": eff * (kk + 1), "survival": None, "k": kk, "efficiency": eff,
            "k_from": "the line" if k_line else "the settings",
            "rate": None if rate is None else (rate, "Draft acceptance rate")}


def read(name: str, text: str, defaults) -> tuple[list, list]:
    """Run records (one per spec-decode line) and problems for a log file or a pasted block."""
    points, issues = parse_lines(text, k=getattr(defaults, "k", None))
    problems = [Problem(name, line, None, message) for line, message in issues]
    if not points:
        if problems:
            return [], problems
        raise SpecModelError("no vLLM speculative-decoding log line found ('SpecDecoding metrics: …' or "
                             "'Draft acceptance rate: …, System efficiency: …')")
    records = []
    for p in points:
        values = {"workload": f"{Path(name).stem} (vLLM log)"}
        headers = {"tokens_per_step": "Mean acceptance length" if p["form"] == "V1" else "System efficiency",
                   "survival": "Per-position acceptance rate", "concurrency": "Running: N reqs",
                   "k": "Number of speculative tokens"}
        if p["survival"]:
            values["survival"] = p["survival"]
        else:
            values["tokens_per_step"] = p["tokens_per_step"]
        if p["k"]:
            values["k"] = p["k"]
        if p.get("rate") is not None:  # accepted ÷ drafted as logged (runs --json draft_acceptance_rate); E stays
            values["draft_acceptance_rate"], headers["draft_acceptance_rate"] = p["rate"]  # the line's own
        remark = _at_mean_draft_length(p, values, headers) if p["form"] == "V1" else None
        note = f"vLLM {p['form']} log line {p['line']}" + (f", logged {p['time']}" if p["time"] else "")
        values["notes"] = note
        rec = RunRecord(name, p["line"], f"vLLM {p['form']} log", values, headers)
        if p["form"] == "V0":
            rec.remarks.append(f"E = system efficiency {p['efficiency']:g} × (k + 1), k = {p['k']} from {p['k_from']}")
        if remark:
            rec.remarks.append(remark)
        if p["running"] is not None:
            values["concurrency"] = max(1, p["running"])
        else:
            values["concurrency"] = 1
            problems.append(Problem(name, p["line"], "Running: N reqs", "no engine line with the running requests "
                                    "before this one: judged at batch 1", "warning"))
        records.append(rec)
    return records, problems


def _drafts(p: dict) -> float | None:
    """The drafts of a V1 line, which it does not log: its per-position rates are accepted-at-position ÷ drafts
    (vllm/v1/spec_decode/metrics.py SpecDecodingLogging, vllm-project/vllm 016a858), so their sum is Accepted ÷
    drafts and drafts = Accepted ÷ that sum. None where the line lacks a count or accepted nothing (then it says
    nothing of its drafts)."""
    accepted, drafted, survival = p.get("accepted"), p.get("drafted"), p.get("survival")
    if not accepted or not drafted or not survival:
        return None
    per_draft = math.fsum(survival)
    return accepted / per_draft if math.isfinite(per_draft) and per_draft > 0 else None


def _at_mean_draft_length(p: dict, values: dict, headers: dict) -> str | None:
    """A V1 line whose drafts are shorter on average than its per-position list is long, judged at its mean draft
    length as every run reader judges one (runs.draft_length); a line with nothing accepted at the longest."""
    drafts = _drafts(p)
    if drafts is None:
        return None
    return at_mean_draft_length(values, headers, drafts, p["drafted"], p["accepted"], len(p["survival"]),
                                "Drafted / (Accepted / sum of Per-position acceptance rate)",
                                how="Drafted ÷ drafts, drafts = Accepted ÷ the per-position rates' sum: the line "
                                    "logs no drafts")


def acceptance_trend(text: str, k: int | None = None) -> pd.DataFrame:
    """E, k and running requests per logged line, in file order, judged as the rows are (`read`): columns line,
    time, form, tokens_per_step, k (the rows' k: the mean draft length where drafts are shorter on average),
    running, configured_k (the per-position list's length, or a V0 line's number of speculative tokens),
    mean_draft_length (Drafted ÷ drafts; NaN where the line does not tell) and k_label (what k means, for a
    chart: "k = 2 (4 configured, 2.00 drafted on average)"). `time` is the log's own stamp (vLLM omits the year)."""
    points, _ = parse_lines(text, k)
    rows = []
    for p in points:
        values = {"k": p["k"], "tokens_per_step": p["tokens_per_step"]}
        if p["form"] == "V1":
            _at_mean_draft_length(p, values, {})
        drafts = _drafts(p) if p["form"] == "V1" else None
        mean = p["drafted"] / drafts if drafts else math.nan
        rows.append({**{key: p[key] for key in ("line", "time", "form", "running")},
                     "tokens_per_step": values["tokens_per_step"], "k": values["k"], "configured_k": p["k"],
                     "mean_draft_length": mean,
                     "k_label": k_words(values["k"], p["k"], mean) if values["k"] else None})
    frame = pd.DataFrame(rows, columns=["line", "time", "form", "tokens_per_step", "k", "running", "configured_k",
                                       "mean_draft_length", "k_label"])
    return frame.astype({"tokens_per_step": float, "mean_draft_length": float})
