"""`runs` command: read past benchmark runs, compare predicted with measured speedup, flag break-even.

    python -m specmodel runs FILE... [--gpu NAME] [--target NAME] [--draft NAME] [--acceptance-means alpha|rate|length]
                                     [--calibrate] [--json]

Rows it could not read go to stderr with file and row. Exit 0 when any row loaded, 2 when none.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from specmodel.cli.args import (add_scenario_arguments, efficiency_from_args, engine_from_args, gpu_and_tp, target_from_args,
                                method_and_draft, number)
from specmodel.errors import SpecModelError
from specmodel.files import read_file, read_stdin, writable, write_file
from specmodel.model.roofline import Efficiency

ROW_KEYS = ["workload", "concurrency", "k", "tokens_per_step", "measured_speedup", "predicted_speedup", "verdict",
            "verdict_words", "decision",
            "break_even_tokens_per_step", "margin_pct", "measured_verdict", "predicted_verdict", "advice", "method",
            "alpha", "acceptance_from", "baseline_tok_s", "spec_tok_s", "gpu_preset", "target_preset",
            "draft_preset", "file", "row", "remarks", "speedup_low", "speedup_high", "uncertain", "engine",
            "draft_depth", "branching", "source", "tp", "ep", "context_len", "weight_dtype", "draft_kv_budget",
            "verdict_basis", "model_agrees", "disagreement", "assumed", "request_rate", "speedup_metric",
            "parallel_draft", "alpha_assumed", "latency_plain_s", "latency_spec_s", "k_spread", "draft_spread", "setup",
            "measured_plausible", "no_prediction", "off_tok_s", "off_cost", "off_cost_source", "pools_above_batch",
            "pools_gain", "restart_gain", "acceptance_read_as", "acceptance_meaning_said", "acceptance_assumed",
            "acceptance_assumed_source", "draft_acceptance_rate", "max_draft_length"]
SETUP_CHARS = 48  # chosen: the text table's setup column is cut to this width (`--json` and the page have it whole)
# Row keys printed as whole numbers.
WHOLE_KEYS = frozenset({"row", "concurrency", "k", "tp", "ep", "context_len", "draft_depth", "branching",
                        "draft_kv_budget", "pools_above_batch", "max_draft_length"})
# How a row's remarks name the fallback a flag gave ("predicted with L40S (--gpu)").
SAID_AS = {"gpu": "--gpu", "target": "--target", "draft": "--draft", "method": "--method"}


# What --gpu and --target do for run files (_run_defaults, runs.names, runs.unpredicted).
RUNS_HELP = {
    "gpu": "GPU for rows that name none (default L40S, said in the row's remarks); a row naming a GPU that is "
           "no preset is predicted on --gpu only when --gpu is given, else judged on its measured speedup "
           "alone (no prediction; refused without one)",
    "target": "target model preset for rows that name none (default Llama 3.1 8B, said in the row's remarks); a "
              "row naming a model that is no preset (a served model name such as 'tiny-llama') is predicted as "
              "--target only when --target is given, else judged on its measured speedup alone (no prediction; "
              "refused without one)",
}


def add_parser(sub) -> None:
    p = sub.add_parser("runs", help="compare past benchmark runs with the model; flag break-even; calibrate",
                       description="Read run files (plain CSV, `vllm bench serve --save-result` JSON, guidellm "
                                   "CSV/JSON), predict each run's speedup, and say whether it cleared break-even "
                                   "at its concurrency: from the measured speedup where there is one, whatever "
                                   "the row's names. --gpu/--target/--draft give rows that name none their "
                                   "presets, and predict rows whose names match no preset only when given.")
    p.add_argument("files", nargs="*", metavar="FILE",
                   help="run files; - reads one from standard input (none where --window gives the runs)")
    add_scenario_arguments(p)
    # no default GPU or target here: a row naming none that matches is refused unless one is given
    p.set_defaults(gpu=None, target=None)
    for action in p._actions:  # what the defaults do here (add_scenario_arguments says it for one scenario)
        if action.dest in RUNS_HELP:
            action.help = RUNS_HELP[action.dest]
    p.add_argument("--k", type=number(1, 32, whole=True), help="k for files that do not record it (guidellm)")
    p.add_argument("--acceptance-means", choices=("alpha", "rate", "length"),
                   help="what a CSV acceptance column whose name does not say (accept_rate, acceptance_rate, acceptance, "
                        "acc) holds: alpha, the per-token acceptance α; rate, the draft acceptance rate (accepted ÷ "
                        "drafted tokens, vLLM's); length, the acceptance length (tokens per step E). Without it such a "
                        "column is read as rate, and the rows and the headline say so")
    p.add_argument("--pair", action="append", default=[], metavar="SPEC=BASELINE",
                   help="compare speculative run file SPEC with baseline file BASELINE (file names)")
    p.add_argument("--calibrate", action="store_true",
                   help="fit the runs first: each setup's plain and speculative step time against the batch from its "
                        "own runs (two or three concurrencies pin it, no preset needed), and the model's parameters "
                        "where the runs name presets")
    p.add_argument("--window", action="append", default=[], metavar="NAME=BEFORE,AFTER",
                   help="with --calibrate: two recorded /metrics pages of one server, before and after a load, as a "
                        "point of the step fit (the server's own timing at the batch it ran); windows with one NAME "
                        "are one speculative setup, a server with speculation off feeds the plain arm of its model")
    p.add_argument("--fit-up-to", type=number(1, 1_000_000), metavar="N",
                   help="with --calibrate: fit the step times on the runs at concurrency ≤ N only; the runs above "
                        "are then predicted by the fit (a check of it on runs it did not see)")
    p.add_argument("--save-calibration", metavar="FILE.json",
                   help="with --calibrate: write every fitted parameter (and what it was fitted on) to FILE.json, "
                        "for --calibration in predict, runs, scrape, fleet and mix")
    p.add_argument("--csv", metavar="PATH", help="write the break-even table as CSV")
    p.add_argument("--html", metavar="PATH", help="write a self-contained HTML report")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=run_runs)


def _pairs(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        spec, sep, base = item.partition("=")
        if not sep or not spec or not base:
            raise SpecModelError(f"--pair expects SPEC_FILE=BASELINE_FILE, got '{item}'")
        out[Path(spec).name] = Path(base).name
    return out


def run_runs(args: argparse.Namespace) -> int:
    """`runs`, with Python's cyclic garbage collector paused, as while the rows are read: the command makes no
    cycles to speak of, and each collection walked the heap of a large file's rows again (200,000 rows: ~0.5 s
    of CPU of the review and the JSON; the same peak memory)."""
    from specmodel.runs.load import paused_gc

    with paused_gc():
        return _run_runs(args)


def _run_runs(args: argparse.Namespace) -> int:
    # Imported here, not at the top: every command builds its parser from this module, and
    # `predict` should not pay for pandas, scipy and the run readers.
    from specmodel.runs import fallback_line
    from specmodel.runs.headlines import model_headline
    from specmodel.runs.review import review

    for path, what in ((args.save_calibration, "the calibration"), (args.csv, ""), (args.html, "")):
        if path:  # refused before reading and fitting, not after
            writable(path, what)
    if not args.files:
        if not args.window:
            raise SpecModelError("give run files, or --window NAME=BEFORE,AFTER with --calibrate")
        return _windows_only(args)
    table = _read_table(args, _run_defaults(args))
    if table is None:
        return 2
    if args.engine:  # rows that name no engine run on the one given
        from specmodel.runs.assumed import given_engine

        table.rows = given_engine(table.rows, engine_from_args(args))
    start = efficiency_from_args(args)
    fits = _step_fits(args, table.rows, start)
    calibration = _calibration(args, table.rows, start, fits)
    efficiency = calibration.efficiency if calibration else start
    result = review(table.rows, efficiency)
    _say_unpredicted(table, result.evaluated)
    evaluated = result.evaluated
    keys = list(ROW_KEYS)
    if calibration:
        evaluated = evaluated.assign(
            predicted_speedup_uncalibrated=review(table.rows, start).evaluated["predicted_speedup"].to_numpy())
        keys.append("predicted_speedup_uncalibrated")
    saved = _saved_fits(args)
    if args.calibrate or saved:
        from specmodel.runs.step_points import saved_fits_by_row, with_fit_columns
        evaluated = with_fit_columns(evaluated, fits if args.calibrate else saved_fits_by_row(evaluated, saved))
        keys += ["fit_speedup", "fit_speedup_low", "fit_speedup_high", "fit_used"]
    from specmodel.show.runs_decisions import runs_decisions
    # per workload, first: the fits the step-fit section shows (--fit-up-to's runs), not others
    decided = runs_decisions(result.evaluated, efficiency, fit_efficiency=start, top_batch=args.fit_up_to)
    _write_reports(args, result, table.problems, calibration, efficiency, decided)
    if args.json:
        _print_json(result, table, evaluated, keys, calibration, fits if args.calibrate else None, decided)
        return 0
    _print_decisions(*decided)
    line = fallback_line(table.fallbacks, len(table.rows), table.defaults)
    if line:
        print(line)
    _print_text(evaluated, result.summary, calibration)
    if args.calibrate:
        _print_fits(fits, evaluated)
    print(model_headline(result.summary, result.table, table.defaults.acceptance_said_as))
    return 0


def _run_defaults(args: argparse.Namespace):
    """What the flags give rows that name no GPU, target, draft, method or k (L40S and Llama 3.1 8B
    where no flag names them), and which of them a flag named."""
    from specmodel.runs import RunDefaults

    given = {"gpu": args.gpu or args.gpu_spec, "target": args.target or args.target_config,
             "draft": args.draft or args.draft_config, "method": args.method, "k": args.k}
    explicit = frozenset(kind for kind, value in given.items() if value)
    method, draft = method_and_draft(args)
    gpu, tp = gpu_and_tp(args)
    return RunDefaults(gpu=gpu, target=target_from_args(args),
                       method=method, draft=draft, tp=tp, context_len=args.context_len, k=args.k,
                       said_as={kind: said if kind in explicit else f"the default of {said}"
                                for kind, said in SAID_AS.items()}, explicit=explicit,
                       acceptance_means=args.acceptance_means)


def _say_unpredicted(table, evaluated) -> None:
    """Runs left without a prediction, and why (runs.review.unpredicted_problems): on stderr and in the problems."""
    from specmodel.runs import collapse_problems
    from specmodel.runs.unpredicted import unpredicted_problems

    said = unpredicted_problems(evaluated)
    table.problems.extend(said)
    for line in collapse_problems(said):
        sys.stderr.write(line + "\n")


def _read_table(args: argparse.Namespace, defaults):
    """The run files read into one table, what could not be read written to stderr; None where no run
    could be read."""
    from specmodel.runs import collapse_problems, read_runs

    files = []
    unreadable = []
    for name in args.files:
        try:
            # size checked before reading; devices refused; `-` is standard input, read within the same limit
            files.append(("stdin", read_stdin()) if name == "-" else (Path(name).name, read_file(name)))
        except SpecModelError as exc:
            unreadable.append(str(exc))
    table = read_runs(files, defaults, _pairs(args.pair))
    for line in unreadable:
        sys.stderr.write(f"error: {line}\n")
    for line in collapse_problems(table.problems):  # identical problems on many rows: one line each
        sys.stderr.write(line + "\n")
    if table.rows.empty:
        from specmodel.runs.pairing import why_empty
        sys.stderr.write(f"error: {why_empty(table.problems)}\n")
        return None
    return table


def _saved_fits(args: argparse.Namespace) -> list:
    """--calibration's saved step fits (applied to the rows of the same target, method and k), unless
    --calibrate fits new ones."""
    if args.calibrate or not args.calibration:
        return []
    from specmodel.fit.saved import saved_fits
    from specmodel.model.calibration_file import load_calibration
    return saved_fits(load_calibration(args.calibration)[1], Path(args.calibration).name)


def _step_fits(args: argparse.Namespace, rows, start: Efficiency) -> list:
    """With --calibrate, each setup's step fit (on the runs at concurrency ≤ --fit-up-to); else []."""
    if args.fit_up_to is not None and not args.calibrate:
        raise SpecModelError("--fit-up-to needs --calibrate (it says which runs the fit sees)")
    if args.window and not args.calibrate:
        raise SpecModelError("--window needs --calibrate (a window is a point of the step fit)")
    if not args.calibrate:
        return []
    from specmodel.runs.step_points import setup_fits
    return (setup_fits(rows, start, args.fit_up_to) if rows is not None else []) + _window_fits(args)


def _window_fits(args: argparse.Namespace) -> list:
    """The step fits of the --window pages (metrics.window_points)."""
    if not args.window:
        return []
    from specmodel.metrics.fetch import GetLimits
    from specmodel.metrics.window_points import Window, window_fits
    windows = []
    for item in args.window:
        name, sep, paths = item.partition("=")
        before, comma, after = paths.partition(",")
        if not (sep and comma and name.strip() and before and after):
            raise SpecModelError(f"--window expects NAME=BEFORE,AFTER (two /metrics files), got '{item}'")
        cap = GetLimits().max_bytes  # what a scrape of the page would read at most
        texts = [read_file(f, max_bytes=cap).decode("utf-8", "replace") for f in (before, after)]
        windows.append(Window(name.strip(), *texts, f"{Path(before).name}, {Path(after).name}"))
    return window_fits(windows)


def _windows_only(args: argparse.Namespace) -> int:
    """runs --calibrate --window ... without run files: the windows' step fits, printed and saved."""
    start = efficiency_from_args(args)
    fits = _step_fits(args, None, start)
    _save(args, None, start, fits)
    if args.json:
        from specmodel.cli.output import print_json
        print_json({"step_fits": _fit_dicts(fits)})
        return 0
    _print_fits(fits, None)
    return 0


def _calibration(args: argparse.Namespace, rows, start: Efficiency, fits: list):
    """With --calibrate, the fit of the model's parameters to the rows (None where no row names presets
    but a step fit was made); the step fits and it saved where --save-calibration names a file."""
    if args.save_calibration and not args.calibrate:
        raise SpecModelError("--save-calibration needs --calibrate (there is no fit to save otherwise)")
    if not args.calibrate:
        return None
    from specmodel.runs.calibrate import calibrate  # scipy: only for a fit
    from specmodel.show.runs_view import calibration_rows
    fit_rows, fit_note = calibration_rows(rows)
    if args.fit_up_to is not None:
        fit_rows = fit_rows[fit_rows["concurrency"].astype(float) <= args.fit_up_to]
    if fit_note:
        sys.stderr.write(f"note: {fit_note}\n")
    try:
        calibration = calibrate(fit_rows, start)
    except SpecModelError as exc:
        if not fits:  # nothing else to show: the fit's own message is the answer
            raise
        sys.stderr.write(f"note: the model's parameters were not fitted: {exc}. The step fits below are from "
                         "the runs alone\n")
        calibration = None
    _save(args, calibration, start, fits)
    return calibration


def _save(args: argparse.Namespace, calibration, start: Efficiency, fits: list) -> None:
    """--save-calibration: the fitted parameters (or `start`'s, none fitted) and the step fits, in one file."""
    if not args.save_calibration:
        return
    from specmodel.model.calibration_file import calibration_document, save_document
    from specmodel.words.calibration import NOTHING_FITTED
    doc = calibration.to_file() if calibration else calibration_document(start, NOTHING_FITTED)
    doc["step_fits"] = [_saved(f).to_dict() for f in fits]
    save_document(doc, args.save_calibration)


def _saved(f):
    from specmodel.fit.saved import SavedFit
    return SavedFit(f.workload, f.setup, f.target, f.method, f.fit)


def _fit_dicts(fits: list) -> list[dict]:
    """The step fits as `--json` gives them: the saved fit, in words, the runs that would pin it, where it stops
    paying."""
    from specmodel.words.step_fit import fit_line, runs_to_pin
    return [{**_saved(f).to_dict(), "words": fit_line(f.fit), "runs_to_pin": runs_to_pin(f.fit),
             "usable": f.fit.usable, "off_above": _off(f.fit)} for f in fits]


def _print_fits(fits: list, evaluated) -> None:
    """The step fit of each setup in a few lines: what it saw and pinned, where it stops paying, the runs
    that would pin the rest."""
    from specmodel.words.step_fit import fit_line, pinned_words, runs_to_pin
    if not fits:
        print("\nstep fit: no run gives a measured speedup or throughput to fit")
        return
    print("\nstep fit (each setup's step time against the batch, from its own runs):")
    from specmodel.runs.step_points import rows_by_fit
    per_fit = rows_by_fit(evaluated, fits) if evaluated is not None else [[] for _ in fits]
    for f, own in zip(fits, per_fit):
        name = ", ".join(p for p in (f.workload, f.setup) if p) or "the runs"
        print(f"  {name}: {fit_line(f.fit)}")
        if f.fit.usable and pinned_words(f.fit):
            print(f"    {pinned_words(f.fit)}")
        for line in runs_to_pin(f.fit):
            print(f"    to pin the rest: {line}")
        for line in _unseen_lines(own):
            print(f"    {line}")


def _unseen_lines(own: list) -> list[str]:
    """The fit's prediction of each run of its setup it did not see, beside the measurement."""
    out = []
    for _, r in own:
        if r.get("fit_used") is not False or r.get("measured_speedup") != r.get("measured_speedup") \
                or r.get("measured_speedup") is None:
            continue
        m, s, low, high = (float(r[c]) for c in ("measured_speedup", "fit_speedup", "fit_speedup_low",
                                                  "fit_speedup_high"))
        inside = "inside" if low <= m <= high else "outside"
        out.append(f"concurrency {float(r['concurrency']):g} (not fitted): predicted {s:.2f}× ({low:.2f}–{high:.2f}×), "
                   f"measured {m:.2f}×, {inside} the band")
    return out


def _write_reports(args: argparse.Namespace, result, problems, calibration, efficiency: Efficiency,
                   decided: tuple = ([], 0)) -> None:
    """The break-even table as CSV (--csv) and the HTML report (--html, led by the decision lines), where asked for."""
    if args.csv:
        from specmodel.export.report import break_even_csv
        write_file(args.csv, break_even_csv(result.table))  # only a regular file or a new path; whole or not at all
    if args.html:
        from specmodel.export.report import html_report
        from specmodel.show.figures.runs import break_even_chart, predicted_vs_measured
        write_file(args.html, html_report(
            result.evaluated, result.table, result.summary,
            [predicted_vs_measured(result.evaluated), break_even_chart(result.evaluated)], problems,
            calibration.to_dict() if calibration else None,
            efficiency=None if efficiency == Efficiency() else efficiency, decisions=decided))


def _print_decisions(decided: list, more: int) -> None:
    """The decision line of each workload (show.decisions), and the runs that would pin an open threshold."""
    if not decided:
        return
    print("decision per workload:")
    for d in decided:
        print(f"  {d.line}" + "".join(f"\n    {extra}" for extra in (d.per_batch, d.off_note, d.pin) if extra))
    if more:
        print(f"  … and {more} more workload(s): see the table")
    print()


def _print_json(result, table, evaluated, keys: list[str], calibration, fits: list | None = None,
                decided: tuple = ([], 0)) -> None:
    """--json: one object with the summary, the problems, the calibration and the rows."""
    from specmodel.cli.output import json_value, print_json_table
    from specmodel.runs.headlines import model_headline, prediction_counts

    summary = {k: json_value(v) for k, v in result.summary.items()}
    summary["fallbacks"] = table.fallbacks
    summary["headline"] = model_headline(result.summary, result.table, table.defaults.acceptance_said_as)
    summary.update(prediction_counts(table.problems, result.evaluated))
    summary["decision_lines"] = [d.to_dict() for d in decided[0]]  # the decision per workload, as the text leads
    summary["decision_lines_more"] = decided[1]
    rest = {"summary": summary,
            "problems": [{"severity": p.severity, "file": p.file, "row": p.row, "column": p.column,
                          "message": p.message, "reason": p.reason} for p in table.problems]}
    if calibration:
        rest["calibration"] = calibration.to_dict()
    if fits is not None:
        rest["step_fits"] = _fit_dicts(fits)
    # the rows written a chunk at a time as they are encoded: flat memory for 200,000 rows
    print_json_table("rows", evaluated, keys, WHOLE_KEYS, rest)


def _off(fit) -> dict | None:
    if not fit.usable:
        return None
    mid, low, high = fit.off_above()
    return {"batch": mid, "low": low, "high": high}


def _f(x, fmt="{:.2f}"):
    return "–" if x is None else fmt.format(x)


def _print_text(evaluated, summary, calibration) -> None:
    from specmodel.cli.output import json_value
    from specmodel.runs.headlines import as_read, sweep_order
    from specmodel.words import verdict_words

    evaluated = sweep_order(as_read(evaluated))  # a predicted verdict whose band straddles 1.0 reads "uncertain"

    setups = evaluated["setup"].fillna("").astype(str).tolist() if "setup" in evaluated else [""] * len(evaluated)
    width = min(max(map(len, setups), default=0), SETUP_CHARS)  # a column only where a workload has several setups
    setup_head = f"{'setup':<{width}} " if width else ""
    fitted = "fit_speedup" in evaluated.columns
    fit_head = f" {'fit':>6}" if fitted else ""
    print(f"{'workload':<26} {setup_head}{'conc':>5} {'k':>2} {'E':>5} {'E_be':>5} {'meas':>6} {'pred':>6}{fit_head}  "
          f"verdict     model        advice")
    shown = ["workload", "concurrency", "k", "tokens_per_step", "break_even_tokens_per_step", "measured_speedup",
             "predicted_speedup", "verdict", "predicted_verdict", "model_agrees", "verdict_basis", "advice",
             "measured_plausible", "fit_speedup"]
    columns = [evaluated[key].tolist() if key in evaluated.columns else [None] * len(evaluated) for key in shown]
    # verdict: measured where there is a measurement; model: the model's, "≠" where it differs
    for setup, values in zip(setups, zip(*columns)):
        r = {key: json_value(v) for key, v in zip(shown, values)}
        setup_cell = f"{setup[:width]:<{width}} " if width else ""
        for key in ("concurrency", "k"):
            if r[key] is not None:
                r[key] = int(r[key])
        basis = "" if r["verdict_basis"] is None else ("" if r["verdict_basis"] == "measured speedup" else "*")
        said = "implausible" if r["measured_plausible"] is False and basis == "" else verdict_words(r["verdict"])
        model = str(verdict_words(r["predicted_verdict"]) or "–") + (" ≠" if r["model_agrees"] is False else "")
        print(f"{str(r['workload'])[:26]:<26} {setup_cell}{r['concurrency']:>5} {_f(r['k'], '{}'):>2} "
              f"{_f(r['tokens_per_step']):>5} "
              f"{_f(r['break_even_tokens_per_step']):>5} {_f(r['measured_speedup']):>6} "
              f"{_f(r['predicted_speedup']):>6}{(' ' + format(_f(r['fit_speedup']), '>6')) if fitted else ''}  "
              f"{str(said or '–') + basis:<10}  {model:<12} "
              f"{r['advice'] or ''}")
    print("verdict: from the measured speedup; * predicted (no measured speedup); uncertain*: predicted, with the "
          "model's 80% band across 1.0; implausible: a measured speedup above its tokens per step E, no verdict. model: "
          "the model's verdict on the same run; ≠ where it differs from the measured one."
          + (" fit: the step fit of the setup's own runs at this concurrency." if fitted else "")
          + " advice: the model's, at the run's own setup; the decision per workload above is your runs' step fit's "
            "where one answers (\"your runs\").")
    if summary["rows_compared"]:
        print(f"\n{summary['rows_compared']} run(s) compared: speedup error {summary['mape_speedup_pct']:.1f}% "
              f"(mean absolute percentage); verdicts agree on {summary['verdicts_agreeing']} of "
              f"{summary['rows_compared']}")
    if calibration:
        from specmodel.words.calibration import calibration_line
        print(f"calibrated: {calibration_line(calibration.efficiency)}\n  {calibration.message}")
