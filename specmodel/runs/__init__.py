"""Read past benchmark runs (plain CSV, `vllm bench serve` JSON, guidellm CSV/JSON, per-request
spec-decode JSON, vLLM log lines) into one table.

Every reader turns a file into *records* (one per run or per concurrency level) and a list of
`Problem`s that name the file, the row and the column. Records then go through one validation
path: acceptance in whatever form the row has becomes E and α through `specmodel.model.acceptance`,
free-text GPU and model names map to presets, and a speculative run that was measured alone is
paired with its baseline run. A row with an error is left out and reported; a row that needed a
fallback (an unknown GPU, a missing k) is kept and the fallback is written into its `remarks`.

Row numbers: for CSV files the spreadsheet row (the header is row 1, the first run row 2), as the
`csv` module's reader counts lines; for JSON files the position of the benchmark in the file (1 = first).

One module per job:

    records      RunRecord, RunDefaults, Problem, RunTable, problem grouping
    sniff        bytes -> text -> which reader
    csv_rows     CSV records with their line numbers, streamed (a run of blank lines skipped at once); an
                 unclosed quote or an over-long cell named by row
    csv_plain    plain CSV (ALIASES: the headers it knows)
    cells        one cell as a number; thousands separators or decimal commas decided per column
    vllm_bench   `vllm bench serve --save-result` JSON
    guidellm     guidellm's benchmarks.json and CSV
    spec_json    vLLM per-request spec-decode metrics and AIPerf exports
    logs         vLLM's SpecDecoding log lines
    pairing      a one-arm speculative run with its baseline
    names        GPU, model, method, engine names -> presets
    measured     what a row's text says was measured (the speedup's quantity, latencies at a rate)
    validate     one record -> one row of the table (table_row: its columns), or its errors
    alike        validate() of a load's rows, those alike but for their numbers checked once (a sweep)
    frames       columns -> one DataFrame (text as TEXT, plain numbers by numpy)
    load         read_runs: files -> RunTable; the sample sets
    review       the loaded runs predicted and judged (verdicts, break-even); view: what the page says of it
"""

import importlib

# The package's names, each from the module that defines it, imported on first use (PEP 562), not when the
# package is: sessions of one server import in their own threads, and a package whose __init__ imports its
# submodules while another thread imports one of them directly (Traffic mix's tables import runs.review, Past
# runs the package) met Python's import deadlock avoidance, which handed one of them a half-made module ("cannot
# import name 'PROGRESS_EVERY' from partially initialized module 'specmodel.runs.load'"; two pages' imports run
# at once: 10 of 12 fresh interpreters, tests/test_import_race.py). With nothing imported here the package is
# whole at once and its modules' own imports (no cycles: tests/test_layering.py) cannot meet that way.
_FROM = {
    "MAX_FILE_BYTES": "specmodel.bounds", "MAX_K": "specmodel.bounds",
    "ALIAS_INDEX": "specmodel.runs.csv_plain", "ALIASES": "specmodel.runs.csv_plain",
    "IGNORED_COLUMNS": "specmodel.runs.csv_plain",
    "PROGRESS_EVERY": "specmodel.runs.load", "SAMPLE_DIR": "specmodel.runs.load", "SAMPLES": "specmodel.runs.load",
    "read_run_file": "specmodel.runs.load", "read_runs": "specmodel.runs.load", "sample_files": "specmodel.runs.load",
    "context_from_text": "specmodel.runs.names",
    **dict.fromkeys(("COLUMNS", "FALLBACK_KINDS", "Problem", "ProblemGroup", "RunDefaults", "RunRecord", "RunTable",
                     "collapse_problems", "fallback_line", "group_problems"), "specmodel.runs.records"),
    "decode_bytes": "specmodel.runs.sniff",
}


def __getattr__(name: str):
    if name in _FROM:
        return getattr(importlib.import_module(_FROM[name]), name)
    raise AttributeError(f"module 'specmodel.runs' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_FROM))


__all__ = [
    "ALIASES", "ALIAS_INDEX", "COLUMNS", "FALLBACK_KINDS", "IGNORED_COLUMNS", "MAX_FILE_BYTES", "MAX_K",
    "PROGRESS_EVERY", "SAMPLES", "SAMPLE_DIR", "Problem", "ProblemGroup", "RunDefaults", "RunRecord", "RunTable",
    "collapse_problems", "context_from_text", "decode_bytes", "fallback_line", "group_problems", "read_run_file",
    "read_runs", "sample_files",
]
