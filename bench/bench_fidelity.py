"""Fidelity of the uncalibrated model on published runs (../shared/validation/published_dev.csv).

Read by the project's own run reader, as a user's file would be. Per source and overall:
- rows predicted with their own acceptance: MAPE of speedup, verdict agreement, measured losses caught;
- shape error: speedup at batch B ÷ speedup at batch 1 of the same setup (needs no acceptance);
- two baselines in the same process: "always pays off", and the batch-1 formula E·T_t/(T_t + k·T_d)
  (the model's own batch-1 prediction carried to every batch: flat shape);
- out-of-sample calibration: per source, fit on rows at batch ≤ 16, save the file, apply it to the
  rows above 16;
- the H200 step-time grid (../shared/validation/h200_steptime.csv): error of whole layers with attention.

Run: python -m bench fidelity
"""

from __future__ import annotations

import math
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from specmodel.breakeven import evaluate_runs, scenario_for_row
from specmodel.calibrate import calibrate, load_calibration, save_calibration
from specmodel.errors import SpecModelError
from specmodel.presets import find_gpu, find_model
from specmodel.roofline import Efficiency, Hardware, PassShape, pass_time_ms, unpacked_verify_reads
from specmodel.runs import RunDefaults, read_runs
from specmodel.scenario import BORDERLINE, predict

SHARED = Path(__file__).resolve().parents[2] / "shared" / "validation"
DEV = SHARED / "published_dev.csv"
GRID = SHARED / "h200_steptime.csv"
SETUP = ["source", "gpu", "target_model", "method", "draft_model", "k", "draft_depth", "workload", "engine",
         "context_len", "tp"]


def _label(x: float) -> str:
    return "pays off" if x >= 1 + BORDERLINE else ("borderline" if x >= 1 - BORDERLINE else "loses")


def load(path: Path = DEV) -> pd.DataFrame:
    table = read_runs([(path.name, path.read_bytes())], RunDefaults())
    rows = table.rows.copy()
    rows["source"] = rows.get("source", pd.Series(["?"] * len(rows))).fillna("?")
    return rows


def own_acceptance(rows: pd.DataFrame) -> pd.Series:
    acc = rows.get("acceptance_from")
    has = rows["alpha"].notna()
    if acc is not None:
        has &= acc.notna() & (acc.astype(str).str.len() > 0) & ~acc.astype(str).str.contains("filled", na=False)
    return has & rows["measured_speedup"].notna()


def shape_errors(rows: pd.DataFrame, eff: Efficiency | None = None) -> pd.DataFrame:
    """|predicted ratio / measured ratio − 1| for rows at batch > 1 whose setup also ran at batch 1."""
    out = []
    keys = [c for c in SETUP if c in rows.columns]
    for _, g in rows.groupby(keys, dropna=False, sort=False):
        one = g[g["concurrency"] == 1]
        if one.empty or len(g) < 2:
            continue
        base = one.iloc[0]
        for _, r in g[g["concurrency"] > 1].iterrows():
            d = r.to_dict()
            if d.get("alpha") is None or (isinstance(d["alpha"], float) and math.isnan(d["alpha"])):
                d["alpha"] = 0.7  # the shape barely depends on acceptance; the model's default
            try:
                s = scenario_for_row(d, eff)
                p_b = float(predict(s).speedup)
                p_1 = float(predict(s, concurrency=1).speedup)
            except SpecModelError:
                continue
            measured = float(r["measured_speedup"]) / float(base["measured_speedup"])
            out.append({"source": r["source"], "concurrency": int(r["concurrency"]), "measured": measured,
                        "predicted": p_b / p_1, "error": abs((p_b / p_1) / measured - 1)})
    return pd.DataFrame(out)


def _summary(ev: pd.DataFrame) -> dict:
    meas = ev["measured_speedup"].astype(float)
    pred = ev["predicted_speedup"].astype(float)
    ok = pred.notna() & meas.notna()
    meas, pred = meas[ok], pred[ok]
    mv = meas.map(_label)
    pv = pred.map(_label)
    losses = mv == "loses"
    b1 = ev.loc[ok, "batch1_speedup"].astype(float)
    return {
        "rows": int(ok.sum()),
        "mape": float(np.mean(np.abs(pred / meas - 1)) * 100) if ok.any() else float("nan"),
        "verdict": float(np.mean(mv == pv)) if ok.any() else float("nan"),
        "losses": int(losses.sum()), "caught": int((losses & (pv == "loses")).sum()),
        "always": float(np.mean(mv == "pays off")) if ok.any() else float("nan"),
        "b1_mape": float(np.mean(np.abs(b1 / meas - 1)) * 100) if ok.any() else float("nan"),
        "b1_verdict": float(np.mean(mv == b1.map(_label))) if ok.any() else float("nan"),
    }


def with_acceptance(rows: pd.DataFrame, eff: Efficiency | None = None) -> pd.DataFrame:
    sel = rows[own_acceptance(rows)].reset_index(drop=True)
    ev = evaluate_runs(sel, eff)
    b1 = []
    for r in sel.to_dict("records"):
        try:
            b1.append(float(predict(scenario_for_row(r, eff), concurrency=1).speedup))
        except SpecModelError:
            b1.append(float("nan"))
    ev["batch1_speedup"] = b1
    return ev


def out_of_sample(rows: pd.DataFrame) -> list[tuple[str, int, float, float]]:
    """(source, rows above 16, MAPE uncalibrated, MAPE with the file fitted on rows ≤ 16)."""
    out = []
    usable = rows[own_acceptance(rows)]
    for source, g in usable.groupby("source"):
        low, high = g[g["concurrency"] <= 16], g[g["concurrency"] > 16]
        if low.empty or high.empty:
            continue
        try:
            cal = calibrate(low)
        except SpecModelError:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "cal.json"
            save_calibration(cal, str(path))
            eff, _ = load_calibration(str(path))
        before = evaluate_runs(high.reset_index(drop=True))
        after = evaluate_runs(high.reset_index(drop=True), eff)
        m = high["measured_speedup"].astype(float).to_numpy()
        out.append((source, len(high), float(np.mean(np.abs(before["predicted_speedup"].to_numpy() / m - 1)) * 100),
                    float(np.mean(np.abs(after["predicted_speedup"].to_numpy() / m - 1)) * 100)))
    return out


def steptime_grid(eff: Efficiency | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Errors on the H200 grid: linear layers by tokens, and whole layers (linear share + attention)."""
    eff = eff or Efficiency()
    grid = pd.read_csv(GRID)
    hw = Hardware(find_gpu("H200"))
    names = {"llama-3.1-8b": "Llama 3.1 8B", "llama-3.2-1b": "Llama 3.2 1B"}
    lin = grid[grid["kind"] == "linear"].copy()
    no_attn = replace(eff, attn_floor_us=0.0)
    lin_pred = []
    for r in lin.itertuples():
        shape = replace(PassShape.of_model(find_model(names[r.model])), kv_bytes_per_token=0.0, attn_width=0.0)
        lin_pred.append(float(pass_time_ms(shape, hw, no_attn, r.tokens, 1, 0)))
    lin["predicted"] = lin_pred
    lin["error"] = (lin["predicted"] / lin["ms"] - 1).abs()
    att = grid[grid["kind"] == "attention_1layer"].copy()
    m = find_model("Llama 3.1 8B")
    shape = PassShape.of_model(m)
    lin8 = lin[lin["model"] == "llama-3.1-8b"].set_index("tokens")["ms"]
    rows = []
    for r in att.itertuples():
        tokens = int(r.batch * r.q)
        if tokens not in lin8.index:
            continue
        measured = lin8[tokens] / m.layers + r.ms
        reads = unpacked_verify_reads(m.heads, m.kv_heads)  # the probe timed PyTorch SDPA (not packed)
        predicted = float(pass_time_ms(shape, hw, eff, r.batch, r.q, r.ctx, verify_kv_reads=reads)) / m.layers
        rows.append({"batch": r.batch, "q": r.q, "ctx": r.ctx, "measured": measured, "predicted": predicted,
                     "error": abs(predicted / measured - 1)})
    return lin, pd.DataFrame(rows)


def run():
    rows = load()
    yield f"{len(rows)} rows read from {DEV.name} by the run reader"
    ev = with_acceptance(rows)
    shape = shape_errors(rows)
    yield ("source  rows  MAPE%   verdict  losses caught | always-pays verdict | batch-1 MAPE% verdict | "
           "shape rows  shape err% (flat)")
    for source in sorted(set(rows["source"])):
        sub = ev[ev["source"] == source]
        sh = shape[shape["source"] == source] if not shape.empty else shape
        s = _summary(sub) if not sub.empty else None
        shape_txt = (f"{len(sh):>4}  {sh['error'].mean() * 100:5.1f} ({(1 / sh['measured'] - 1).abs().mean() * 100:5.1f})"
                     if len(sh) else "   0      –")
        if s and s["rows"]:
            yield (f"{source:<6} {s['rows']:>4}  {s['mape']:5.1f}   {s['verdict']:6.0%}  {s['caught']:>2}/{s['losses']:<2} "
                   f"       | {s['always']:6.0%}              | {s['b1_mape']:6.1f}   {s['b1_verdict']:5.0%}  | {shape_txt}")
        else:
            yield f"{source:<6}    0      –        –      –          |      –              |      –       –   | {shape_txt}"
    s = _summary(ev)
    yield (f"ALL    {s['rows']:>4}  {s['mape']:5.1f}   {s['verdict']:6.0%}  {s['caught']:>2}/{s['losses']:<2} "
           f"       | {s['always']:6.0%}              | {s['b1_mape']:6.1f}   {s['b1_verdict']:5.0%}  | "
           f"{len(shape):>4}  {shape['error'].mean() * 100:5.1f} ({(1 / shape['measured'] - 1).abs().mean() * 100:5.1f})")
    for source, n, before, after in out_of_sample(rows):
        yield f"out-of-sample calibration {source}: fit on batch ≤ 16, {n} rows above: MAPE {before:.1f}% → {after:.1f}%"
    lin, layers = steptime_grid()
    yield (f"H200 grid: linear layers {len(lin)} points, mean error {lin['error'].mean() * 100:.1f}% "
           f"(max {lin['error'].max() * 100:.1f}%); whole layers with attention {len(layers)} points, mean "
           f"{layers['error'].mean() * 100:.1f}% (max {layers['error'].max() * 100:.1f}%)")
