"""Run rows that reach every check of row validation (specmodel/runs/validate.py), for the "runs csv" fuzz
target (issue 25, item 15): the file readers' generators (tests/fuzz_formats.py) reach the readers'
branches, but most of their rows stop at the first bad cell, so validation's own branches (acceptance
given as counts, a survival list longer than k, k read from the method or from draft tokens ÷ drafts,
a tree's depth, a temperature in words, a method the model does not cost, a relaxed acceptance, a
speedup of another metric, throughputs per GPU, a request rate with each arm's latency, timings that
come as a pair, the k for files that do not record it) were never run: `make fuzz` had validate.py at
about 84%.

`validated_rows()` draws a plain CSV whose columns are the ones validation reads, each row's cells
mostly valid and sometimes at or past a bound or of the wrong kind, and the RunDefaults the reader is
given (the Past runs page's "k for files that do not record it", the sidebar's GPU), as
(name, data, row bound, defaults): the fourth item is what `target_runs` passes to `read_runs`.
"""

from __future__ import annotations

import csv
import io

from hypothesis import strategies as st

from specmodel.runs import RunDefaults

# column: (cells a real file holds, cells at or past a bound or of the wrong kind)
CELLS = {
    "workload": (["chat", "code", "summarise ISL 512 OSL 256", "chat, OSL 128", ""], ["a\x01b"]),
    "concurrency": (["1", "8", "64", "2.5"], ["", "0", "65537", "x"]),
    "request_rate": (["2", "0.5", ""], ["0", "-1"]),
    "k": (["3", "4", "5", ""], ["0", "65", "2.5", "x"]),
    "method": (["eagle", "EAGLE-3", "EAGLE-3 k=5", "ngram", "draft_model", "medusa", "mtp", "EAGLE-2 tree depth 5",
                "EAGLE tree (depth 6, top-k 10)", "eagle relaxed acceptance", "lossy eagle", "same tree eagle",
                "REST retrieval", "lookahead", ""], ["nonsense", "num_speculative_tokens=99 eagle"]),
    "survival": (["0.8;0.6;0.4", "0.8", "0.9;0.8;0.7;0.6;0.5"], ["x;y", "1.5;0.2", ";".join(["0.9"] * 65), ""]),
    "drafts": (["100", "200"], ["0", "-1", "x", ""]),
    "accepted_tokens": (["250", "0"], ["-3", "9e9"]),
    "draft_tokens": (["400", "300", ""], ["100000", "-1"]),
    "tokens_per_step": (["2.5", "3.2"], ["0.5", "9", "x"]),
    "draft_acceptance_rate": (["0.6", "0.3"], ["1.5", "-0.1"]),
    "acceptance_rate_percent": (["60", "45"], ["150"]),
    "alpha": (["0.7", "0.3"], ["1.2", "-1", "x"]),
    "draft_depth": (["3", "5", ""], ["0", "x"]),
    "baseline_tok_s": (["100", "120"], ["0", "-5", "x", ""]),
    "spec_tok_s": (["150", "90"], ["0", ""]),
    "speedup": (["1.5", "1.2", ""], ["0", "x"]),
    "temperature": (["0", "0.7", "0 (greedy)", "greedy (argmax)", "nucleus sampling", "top-p 0.9", ""], ["-1", "x"]),
    "notes": (["", "output throughput tok/s/GPU", "avg end-to-end request latency: w/o SD 2.5 s, with SD 1.6 s",
               "e2e latency baseline 3.4 s / EAGLE-3 1.0 s", "TTFT speedup", "request throughput req/s",
               "total token throughput", "TPOT 14 ms"], []),
    "tp": (["1", "2", "8", ""], ["0", "x"]),
    "gpu": (["H100 SXM", "8x H100", "L40S", "A100 80GB", ""], ["unknown GPU 9000"]),
    "target_model": (["Llama 3.1 8B", "Llama 3.1 70B", "Qwen3 8B", "DeepSeek-V3", ""], ["my-model"]),
    "draft_model": (["Llama 3.2 1B", ""], ["my-draft"]),
    "context_len": (["1024", "8192"], ["-1", "x"]),
    "t_target_ms": (["20", ""], ["0"]),
    "t_draft_ms": (["3", ""], ["-1"]),
    "ep": (["1", "8"], ["0"]),
    "branching": (["1", "4"], ["0"]),
    "draft_kv_budget": (["512"], ["0"]),
    "engine": (["vllm", "sglang", "TensorRT-LLM"], ["x"]),
}
ACCEPTANCE = [["survival"], ["drafts", "accepted_tokens"], ["drafts", "accepted_tokens", "draft_tokens"],
              ["draft_tokens", "drafts", "tokens_per_step"], ["tokens_per_step"], ["draft_acceptance_rate"],
              ["acceptance_rate_percent"], ["alpha"], [], ["survival", "alpha"]]
OPTIONAL = ["method", "temperature", "notes", "tp", "gpu", "target_model", "draft_model", "context_len", "draft_depth",
            "t_target_ms", "t_draft_ms", "ep", "branching", "draft_kv_budget", "speedup", "request_rate"]
# A theme fixes the columns and cells one branch needs (the rest drawn as above): without them most
# inputs miss the branches that need three cells to agree.
THEMES = {
    "per GPU": {"notes": "output throughput tok/s/GPU", "gpu": "8x H100", "tp": "8", "baseline_tok_s": "100",
                "spec_tok_s": "150"},
    "documented k": {"method": "EAGLE-3", "engine": "sglang", "alpha": "0.7", "target_model": "Llama 3.1 8B"},
    "k from counts": {"drafts": "100", "draft_tokens": "400", "accepted_tokens": "250"},
    "k from survival": {"survival": "0.8;0.6;0.4"},
    "rate": {"request_rate": "2", "notes": "avg end-to-end request latency: w/o SD 2.5 s, with SD 1.6 s",
             "speedup": "1.2", "alpha": "0.7", "k": "3"},
    "rate, no length": {"request_rate": "2", "alpha": "0.7", "k": "3", "notes": "", "workload": "chat"},
    "other metric": {"notes": "TTFT speedup", "speedup": "1.3", "alpha": "0.7", "k": "3"},
    "assumed k": {"method": "EAGLE-3", "engine": "sglang", "tokens_per_step": "3.1"},
}
DEFAULTS = [RunDefaults(), RunDefaults(), RunDefaults(k=4), RunDefaults(k=4, gpu="H100 SXM", explicit=frozenset({"gpu"})),
            RunDefaults(method="eagle", draft=None)]


@st.composite
def validated_rows(draw):
    """(name, data, row bound, defaults): a run CSV whose rows reach validation's checks (see the module)."""
    header = ["workload"]
    header += ["concurrency"] if draw(st.integers(0, 5)) else []
    header += ["k"] if draw(st.booleans()) else []
    header += draw(st.sampled_from(ACCEPTANCE))
    header += draw(st.sampled_from([["baseline_tok_s", "spec_tok_s"], ["baseline_tok_s", "spec_tok_s"], [],
                                    ["spec_tok_s"]]))
    header += ["method"] if draw(st.booleans()) else []
    header += draw(st.lists(st.sampled_from(OPTIONAL), max_size=5, unique=True))
    theme = THEMES[draw(st.sampled_from(sorted(THEMES)))] if draw(st.booleans()) else {}
    drop = {"concurrency"} if "request_rate" in theme else set()  # a rate alone
    drop |= {"k"} if "k" not in theme and {"drafts", "survival", "engine"} & set(theme) else set()  # k read elsewhere
    header = list(dict.fromkeys([c for c in header if c not in drop] + list(theme)))
    rows = []
    for _ in range(draw(st.integers(1, 6))):  # every cell one a real file holds; one row in three one bad cell
        cells = [theme[c] if c in theme else draw(st.sampled_from(CELLS[c][0])) for c in header]
        bad = [i for i, c in enumerate(header) if CELLS[c][1] and c not in theme]
        if bad and draw(st.integers(0, 2)) == 0:
            at = draw(st.sampled_from(bad))
            cells[at] = draw(st.sampled_from(CELLS[header[at]][1]))
        rows.append(cells)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return "rows.csv", buf.getvalue().encode("utf-8"), None, draw(st.sampled_from(DEFAULTS))


__all__ = ["validated_rows"]
