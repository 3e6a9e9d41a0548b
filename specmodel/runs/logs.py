"""Read vLLM's speculative-decoding log lines into run records, one per logged line, in time order.

Users paste these into issues because they have nothing else. Two forms (each may carry the usual
prefix, e.g. `(APIServer pid=1) INFO 09-16 05:26:57 [metrics.py:120]`):

- V1: `SpecDecoding metrics: Mean acceptance length: 2.05, Accepted throughput: 9.00 tokens/s, ...,
  Accepted: 90 tokens, Drafted: 90 tokens, Per-position acceptance rate: 0.566, 0.309, 0.177, ...`
  (older builds begin with `Draft acceptance rate: 69.4%`). E = the mean acceptance length (bonus token
  included); the per-position rates are accepted-at-position / drafts, i.e. the survival p_i; k = their count.
- V0: `Speculative metrics: Draft acceptance rate: 0.655, System efficiency: 0.649, Number of speculative
  tokens: 4, ...`. System efficiency = emitted / (drafts · (k + 1)), so E = efficiency · (k + 1); a pasted
  line without the number of speculative tokens needs k (`--k`, or the page's "k for files that do not
  record it").

Running requests come from the engine's throughput line logged just before (`Running: 12 reqs`); the
line's timestamp becomes the row's point in time (`acceptance_trend` gives E over time as a table).
Other lines are ignored, so a whole server log can be uploaded.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from specmodel.errors import SpecModelError
from specmodel.runs.records import Problem, RunRecord

_V1 = re.compile(r"SpecDecoding metrics:\s*(?P<body>.*)$")
_V0 = re.compile(r"(?:Speculative metrics:\s*)?Draft acceptance rate:\s*(?P<rate>[\d.]+)\s*,\s*System efficiency:\s*"
                 r"(?P<eff>[\d.]+)(?P<rest>.*)$")
_RUNNING = re.compile(r"Running:\s*(\d+)\s*reqs")
_TIME = re.compile(r"(?P<date>\d{4}-\d{2}-\d{2}|\d{2}-\d{2})[ T](?P<time>\d{2}:\d{2}:\d{2})")
# One `Name: value` piece of a comma-separated line. The name is bounded and the match anchored, so a
# line costs time in proportion to its length (an unanchored lazy pattern backtracked quadratically:
# 100,000 letters without a colon froze the server for 30 s).
_FIELD = re.compile(r"\s*([A-Za-z][A-Za-z \-]{0,80}):(.*)", re.S)


def looks_like_log(text: str) -> bool:
    head = text[:2_000_000]
    return text.lstrip()[:1] not in "{[" and ("SpecDecoding metrics:" in head or (  # the words first: _V0 needs them
        "Draft acceptance rate:" in head and bool(_V0.search(head))))


def _fields(body: str) -> dict[str, str]:
    """`A: 1, B: 2, 3` -> {"a": "1", "b": "2, 3"}: a piece without a name continues the field before it."""
    out: dict[str, str] = {}
    key = None
    for piece in body.split(","):
        m = _FIELD.match(piece)
        if m and ":" not in m.group(2):
            key = m.group(1).strip().lower()
            out[key] = m.group(2).strip()
        elif key is not None:
            out[key] += "," + piece
    return out


def _float(text: str | None) -> float | None:
    if text is None:
        return None
    m = re.match(r"\s*([-+]?\d+(?:\.\d+)?)", text)
    return float(m.group(1)) if m else None


def _v1_rate(f: dict[str, str]) -> tuple[float, str] | None:
    """(accepted ÷ drafted tokens, where it was read) of a V1 line: its Accepted and Drafted token counts,
    else its draft acceptance rate in percent (`Avg Draft acceptance rate`, older builds `Draft acceptance rate`)."""
    accepted, drafted = _float(f.get("accepted")), _float(f.get("drafted"))
    if accepted is not None and drafted:
        return accepted / drafted, "Accepted / Drafted"
    for key in ("avg draft acceptance rate", "draft acceptance rate"):
        percent = _float(f.get(key))
        if percent is not None:
            return percent / 100, key.capitalize()
    return None


def parse_lines(text: str, k: int | None = None) -> tuple[list[dict], list[tuple[int, str]]]:
    """(points, problems): one point per spec-decode line, with its line number, time and running."""
    points, problems = [], []
    running = None
    for lineno, line in enumerate(text.splitlines(), start=1):
        m = _RUNNING.search(line)
        if m:
            running = int(m.group(1))
        t = _TIME.search(line)
        at = f"{t.group('date')} {t.group('time')}" if t else None
        v1 = _V1.search(line)
        if v1:
            f = _fields(v1.group("body"))
            e = _float(f.get("mean acceptance length"))
            rates = f.get("per-position acceptance rate")
            survival = None
            if rates:
                try:
                    survival = [float(x) for x in re.split(r"[,\s]+", rates.strip()) if x]
                except ValueError:
                    survival = None
            if e is None and survival is None:
                problems.append((lineno, "a SpecDecoding line without 'Mean acceptance length' or 'Per-position "
                                         "acceptance rate'; left out"))
                continue
            points.append({"line": lineno, "time": at, "form": "V1", "tokens_per_step": e, "survival": survival,
                           "k": len(survival) if survival else None, "running": running,
                           "accepted": _float(f.get("accepted")), "drafted": _float(f.get("drafted")),
                           "rate": _v1_rate(f)})
            continue
        v0 = _V0.search(line)
        if v0:
            eff = float(v0.group("eff"))
            rest = _fields(v0.group("rest").lstrip(", "))
            k_line = _float(rest.get("number of speculative tokens"))
            kk = int(k_line) if k_line else k
            if not kk:
                problems.append((lineno, "a V0 'System efficiency' line without 'Number of speculative tokens': k is "
                                         "needed for E = efficiency · (k + 1); give it with --k or the page's "
                                         "'k for files that do not record it'"))
                continue
            if not 0 < eff <= 1:
                problems.append((lineno, f"system efficiency {eff:g} is not in (0, 1]; left out"))
                continue
            points.append({"line": lineno, "time": at, "form": "V0", "tokens_per_step": eff * (kk + 1),
                           "survival": None, "k": kk, "running": running, "efficiency": eff,
                           "rate": (float(v0.group("rate")), "Draft acceptance rate"),
                           "k_from": "the line" if k_line else "the settings"})
    return points, problems


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
        note = f"vLLM {p['form']} log line {p['line']}" + (f", logged {p['time']}" if p["time"] else "")
        values["notes"] = note
        rec = RunRecord(name, p["line"], f"vLLM {p['form']} log", values, headers)
        if p["form"] == "V0":
            rec.remarks.append(f"E = system efficiency {p['efficiency']:g} × (k + 1), k = {p['k']} from {p['k_from']}")
        if p["running"] is not None:
            values["concurrency"] = max(1, p["running"])
        else:
            values["concurrency"] = 1
            problems.append(Problem(name, p["line"], "Running: N reqs", "no engine line with the running requests "
                                    "before this one: judged at batch 1", "warning"))
        records.append(rec)
    return records, problems


def acceptance_trend(text: str, k: int | None = None) -> pd.DataFrame:
    """E (and k, running requests) per logged line, in file order: columns line, time, form,
    tokens_per_step, k, running. `time` is the log's own stamp (vLLM omits the year)."""
    points, _ = parse_lines(text, k)
    frame = pd.DataFrame(points, columns=["line", "time", "form", "tokens_per_step", "k", "running"])
    return frame.astype({"tokens_per_step": float})
