"""Structure-aware fuzz inputs (issue 25, item 15): generators that build the real formats at sizes up to
the upload limit, so `make fuzz` can find what a hostile user of a shared instance tries.

Each strategy draws a few parameters (how many rows, columns, levels, which defects where) and builds the
text from them, so a 20 MB input costs a few draws, not 20 million. Sizes scale with FUZZ_MAX_BYTES
(default 16 kB: the quick profile inside `make test`; `make fuzz` sets the upload limit).

    csv_files()           run CSVs: many rows or columns, long cells, thousands separators and decimal
                          commas, unclosed quotes, short and long rows, blank lines, CRLF, bad bytes
    json_files()          benchmark JSON nested deep and wide, huge integers, long lists
    log_files()           vLLM log lines: long lines with and without fields
    prom_texts()          /metrics texts: many engines and positions, duplicated series, long labels
    urls()                URLs for the URL policy: every spelling of the metadata address, allow-list entries
    calibration_texts()   calibration files: valid, retyped, deep, huge numbers, other versions
    encoded_answers()     a body and the Content-Encoding stack a real local server sends it with

The targets using them (URL policy, calibration files, stacked encodings) are at the bottom; the run
targets (one per format, with the generators of tests/fuzz_formats.py), the Prometheus and the workload
targets of tests/fuzz_targets.py draw from the others. Sizes near the bound come one input in 40 (`_size`,
`_sized`), so 2,000 inputs per target finish.
"""

from __future__ import annotations

import gzip
import ipaddress
import json
import os
import zlib
from pathlib import Path

from hypothesis import strategies as st

from specmodel import bounds
from specmodel.errors import SpecModelError

MAX_BYTES = int(os.environ.get("FUZZ_MAX_BYTES", str(16 * 1024)))
KNOWN = ["workload", "concurrency", "k", "alpha", "tokens_per_step", "baseline_tok_s", "spec_tok_s", "gpu",
         "target_model", "method", "survival", "p1", "p2", "draft_acceptance_rate", "notes", "source"]
CELLS = ["chat", "0.7", "0,75", "1,500", "1,024", "1,234,567.5", "1.234,5", "1.500", "8", "3", "150", "H100",
         "Llama 3.1 8B", "eagle", "", " ", "x" * 50, "=1+1", "\u202e", "NaN", "-1", "1e309", "0.5;0.3",
         "2,500.5", "1,5", "75%", "0,75 %", "-1,500", "1.234.567"]


def _size(draw, most: int = MAX_BYTES) -> int:
    """A target size in bytes: mostly small (the branches are in the structure, not the size), one in 40 near
    the bound (at FUZZ_MAX_BYTES = the upload limit, an input of 20 MB takes tens of seconds to read and
    review on 2 busy cores: 2,000 inputs at one in two were hours per target)."""
    if draw(st.integers(0, 39)) == 0:
        return draw(st.sampled_from([most // 16, most // 4, most]))
    return min(most, draw(st.sampled_from([64, 256, 1024, 4096, 16384])))


def _sized(draw, usual: list, near_the_bound: list):
    """One of `usual`, or one in 40 times one of `near_the_bound` (sizes that scale with FUZZ_MAX_BYTES)."""
    return draw(st.sampled_from(near_the_bound if draw(st.integers(0, 39)) == 0 else usual))


def _cell(draw) -> str:
    cell = draw(st.sampled_from(CELLS))
    return f'"{cell}"' if "," in cell and draw(st.booleans()) else cell


@st.composite
def csv_files(draw):
    """A run CSV near a drawn size, with the defects readers must name by row, never shift or swallow."""
    columns = draw(st.sampled_from([3, 6, 12, 200] + ([20_000] if MAX_BYTES >= 2**20 else [])))
    header = [KNOWN[i] if i < len(KNOWN) and draw(st.booleans()) else f"x{i}" for i in range(columns)]
    header[:2] = ["workload", "concurrency"]
    delimiter = draw(st.sampled_from([",", ",", ";", "\t"]))
    newline = draw(st.sampled_from(["\n", "\n", "\r\n", "\r"]))
    # a few distinct rows, cycled: a column then holds several spellings ("1,500" over "0,75" or
    # "1,234,567.5"), so its number style is decided from all of them, or by the file's other columns
    kinds = [delimiter.join(_cell(draw) for _ in range(min(columns, 12))) + delimiter * max(0, columns - 12)
             for _ in range(draw(st.sampled_from([1, 2, 4])))]
    row = max(kinds, key=len)
    rows = max(1, min(bounds.MAX_ROWS_PER_FILE + 10, _size(draw) // max(1, len(row) + 1)))
    defects = draw(st.lists(st.sampled_from(["quote", "short", "long", "long_cell", "blank", "quote_end"]),
                            max_size=4))
    lines = [delimiter.join(header)] + (kinds * (rows // len(kinds) + 1))[:rows]
    for defect in defects:
        at = draw(st.integers(1, len(lines) - 1))
        if defect == "quote":
            lines[at] = lines[at].replace(delimiter, delimiter + '"', 1)
        elif defect == "short":
            lines[at] = delimiter.join(lines[at].split(delimiter)[:-1])
        elif defect == "long":
            lines[at] = lines[at] + delimiter + "extra"
        elif defect == "long_cell":
            lines[at] = "x" * (bounds.MAX_CELL_CHARS + draw(st.sampled_from([-1, 0, 1, 1000]))) + lines[at]
        elif defect == "blank":
            lines[at:at] = [""] * draw(st.sampled_from([1, 1000]))
        else:
            lines[-1] = lines[-1] + delimiter + '"open'
    data = (newline.join(lines) + newline).encode("utf-8")
    data = _encoded(draw, data)
    return "structured.csv", data[:bounds.MAX_FILE_BYTES + draw(st.sampled_from([0, 1]))]


def _encoded(draw, data: bytes) -> bytes:
    """UTF-8 bytes as a file may really hold them: with a bad byte, many bad bytes, NULs, a UTF-16/32
    byte-order mark (whole or broken), Windows-1252 accents, or as they are."""
    how = draw(st.sampled_from(["utf-8"] * 4 + ["bad byte", "bad bytes", "nul", "utf-16", "utf-32", "broken bom",
                                                "cp1252", "utf-8-sig"]))
    at = draw(st.integers(0, len(data)))
    if how == "bad byte":
        return data[:at] + draw(st.sampled_from([b"\xff", b"\xe9", b"\xc3", b"\x80\x80"])) + data[at:]
    if how == "bad bytes":
        return ("é".encode() + data[:at]).replace(b",", b"\xff,", 200)
    if how == "nul":
        return data[:at] + b"\x00" + data[at:]
    if how in ("utf-16", "utf-32"):
        return data.decode("utf-8", "replace").encode(how)
    if how == "broken bom":
        return b"\xff\xfe" + data[:1 + at % 7]
    if how == "cp1252":
        return data.replace(b"chat", b"caf\xe9", 1)
    return b"\xef\xbb\xbf" + data if how == "utf-8-sig" else data


_FIXTURES = Path(__file__).parent / "fixtures"
_SPEC_FILES = {name: (_FIXTURES / name).read_text(encoding="utf-8") for name in (
    "vllm_per_request_spec.jsonl", "vllm_per_choice_spec_stats.jsonl", "aiperf_profile_export_aiperf.json",
    "aiperf_records_layout_spec.json", "aiperf_records_layout_baseline.json", "aiperf_phases_layout_spec.json",
    "aiperf_phases_layout_baseline.json")}
ODD = [None, True, 0, -1, 1.5, 64, 65, 10 ** 9, 10 ** 40, 1e308, "x", "", [], {}, [1, 2], {"avg": "x"}, {"avg": 2.5}]


def _retyped(draw, node, depth: int = 0):
    """A JSON value with some of its values (at any depth, a few levels down) replaced by odd ones."""
    if depth > 4 or not isinstance(node, (dict, list)):
        return draw(st.sampled_from(ODD)) if draw(st.integers(0, 6)) == 0 else node
    if isinstance(node, dict):
        return {k: _retyped(draw, v, depth + 1) for k, v in node.items() if draw(st.integers(0, 20))}
    return [_retyped(draw, v, depth + 1) for v in node[:50]]


@st.composite
def spec_jsons(draw):
    """vLLM per-request spec-decode records and AIPerf exports: records repeated up to the size, values retyped."""
    name = draw(st.sampled_from(sorted(_SPEC_FILES)))
    text = _SPEC_FILES[name]
    if name.endswith(".jsonl"):
        lines = [ln for ln in text.splitlines() if ln.strip()]
        lines = lines * draw(st.sampled_from([1, 1, max(1, _size(draw) // max(1, len(text)))]))
        at = draw(st.integers(0, len(lines) - 1))
        try:
            lines[at] = json.dumps(_retyped(draw, json.loads(lines[at])), default=str)
        except ValueError:
            lines[at] = lines[at][:draw(st.integers(0, len(lines[at])))]
        return name, "\n".join(lines) + "\n"
    return name, json.dumps(_retyped(draw, json.loads(text)), default=str)


_GUIDELLM = (_FIXTURES / "guidellm_benchmarks_sample.csv").read_text(encoding="utf-8")


@st.composite
def guidellm_csvs(draw):
    """guidellm's CSV (three header rows) with its benchmark rows repeated up to the size, cells edited."""
    lines = _GUIDELLM.splitlines()
    head, rows = lines[:3], lines[3:]
    rows = rows * max(1, min(bounds.MAX_ROWS_PER_FILE + 2, _size(draw) // max(1, len(_GUIDELLM))))
    for _ in range(draw(st.integers(0, 4))):
        at = draw(st.integers(0, len(rows) - 1))
        cells = rows[at].split(",")
        edit = draw(st.sampled_from(["cell", "short", "long", "quote", "drop"]))
        if edit == "cell":
            cells[draw(st.integers(0, len(cells) - 1))] = draw(st.sampled_from(CELLS + ["synchronous", "poisson",
                                                                                          "concurrent", "1e400"]))
        elif edit == "short":
            cells = cells[:draw(st.integers(1, len(cells)))]
        elif edit == "long":
            cells += ["9"]
        elif edit == "quote":
            cells[0] = '"' + cells[0]
        rows[at] = ",".join(cells) if edit != "drop" else ""
    if draw(st.integers(0, 5)) == 0:
        head = head[:draw(st.integers(0, 3))]
    return "guidellm.csv", _encoded(draw, ("\n".join(head + rows) + "\n").encode())


@st.composite
def json_files(draw):
    """Benchmark JSON nested deep or wide, with huge integers and long lists."""
    depth = draw(st.sampled_from([1, 5, bounds.MAX_JSON_DEPTH - 2, bounds.MAX_JSON_DEPTH + 1]
                                 + ([50_000] if MAX_BYTES >= 2**20 else [])))
    width = draw(st.sampled_from([1, 10, 1000, max(1, _size(draw) // 40)]))
    base = {"output_throughput": draw(st.sampled_from([150.0, 1e308, -1, "150"])),
            "max_concurrency": draw(st.sampled_from([8, 10 ** 29, 10 ** 31, 2 ** 64])),
            "num_spec_tokens": draw(st.sampled_from([3, 64, 65, 10 ** 9])),
            "spec_decode_per_position_acceptance_rates": [0.5] * _sized(draw, [1, 64, 65], [MAX_BYTES // 4]),
            "acceptance_histogram": {str(draw(st.sampled_from([0, 3, 63, 64, 10 ** 9]))): 5}}
    for i in range(width):
        base[f"k{i}"] = i
    copies = max(1, min(50, MAX_BYTES // max(1, len(json.dumps(base)))))
    text = json.dumps(draw(st.sampled_from([base, [base] * copies, {"benchmarks": [base]}])))
    if depth > 1:
        text = "[" * depth + text + "]" * depth if draw(st.booleans()) else text[:-1] + ', "deep": ' + \
            "{\"a\": " * depth + "1" + "}" * depth + text[-1:]
    return draw(st.sampled_from(["bench.json", "profile_export_aiperf.json"])), text[:bounds.MAX_FILE_BYTES + 1]


_ENGINE_LINE = ("(APIServer pid=1) INFO 09-16 05:26:47 [loggers.py:123] Engine 000: Avg prompt throughput: 812.3 "
                "tokens/s, Avg generation throughput: {gen} tokens/s, Running: {running} reqs, Waiting: 0 reqs, "
                "GPU KV cache usage: 6.1%, Prefix cache hit rate: 31.0%")
_SPEC_LINE = "(APIServer pid=1) INFO 09-16 05:26:47 [metrics.py:120] SpecDecoding metrics: {fields}"
_FIELDS = ["Mean acceptance length: {e}", "Accepted throughput: 240.00 tokens/s", "Drafted throughput: 480.00 tokens/s",
           "Accepted: {accepted} tokens", "Drafted: {drafted} tokens", "Per-position acceptance rate: {positions}",
           "Avg Draft acceptance rate: 50.0%"]


@st.composite
def log_files(draw):
    """vLLM V1 logs as the engine writes them (engine line, SpecDecoding metrics line), with fields left out,
    values at and past the bounds, lines of up to FUZZ_MAX_BYTES without a field, and many points in time."""
    points = []
    for _ in range(draw(st.integers(1, 4))):
        fields = [f for f in _FIELDS if draw(st.integers(0, 4))]
        values = {"e": draw(st.sampled_from(["2.50", "1.00", "99", "nan", "-1", "2,5"])),
                  "accepted": draw(st.sampled_from(["2400", "0", "1e309", "9" * 40])),
                  "drafted": draw(st.sampled_from(["4800", "0", "1"])),
                  "positions": ", ".join([draw(st.sampled_from(["0.700", "0.5", "1.5", "x"]))]
                                         * _sized(draw, [1, 3, bounds.MAX_K, bounds.MAX_K + 1],
                                                  [max(1, MAX_BYTES // 8)]))}
        spec = _SPEC_LINE.format(fields=", ".join(f.format(**values) for f in fields))
        if draw(st.integers(0, 5)) == 0:
            spec = _SPEC_LINE.format(fields="a" * _sized(draw, [10, 100_000], [MAX_BYTES]))
        engine = _ENGINE_LINE.format(gen=draw(st.sampled_from(["402.0", "0", "inf"])),
                                     running=draw(st.sampled_from(["8", "0", "100000000"])))
        if draw(st.integers(0, 4)) == 0:  # a vLLM V0 line: E from the system efficiency and k
            spec = ("INFO 09-16 05:26:47 metrics.py:1] Speculative metrics: Draft acceptance rate: 0.700, System "
                    f"efficiency: {draw(st.sampled_from(['0.600', '1.5', '0']))}"
                    + draw(st.sampled_from([", Number of speculative tokens: 3", ", Number of speculative tokens: 0", ""])))
        points += [engine, spec] if draw(st.integers(0, 3)) else [spec]
    repeat = _sized(draw, [1, 1, 2, 3], [max(1, MAX_BYTES // max(1, sum(map(len, points))))])
    return "vllm.log", "\n".join(points * repeat) + "\n"


@st.composite
def prom_texts(draw):
    """A vLLM V1 /metrics text: engines and positions at and past the bounds, duplicated series, long labels."""
    positions = draw(st.sampled_from([1, 3, bounds.MAX_K, bounds.MAX_K + 1]))
    model = draw(st.sampled_from(["m", "x" * min(10_000, MAX_BYTES // 64), 'a"b', "a\\nb", "[link](http://x)"]))
    per_engine = (positions + 3) * (90 + len(model))  # bytes of one engine's lines
    engines = max(1, min(draw(st.sampled_from([1, 2, 100, 2000])), _size(draw) // per_engine))
    model = model.replace("\\", "\\\\").replace('"', '\\"')
    lines = ["# TYPE vllm:spec_decode_num_drafts_total counter"]
    for e in range(engines):
        labels = f'engine="{e}",model_name="{model}"'
        lines.append(f"vllm:spec_decode_num_drafts_total{{{labels}}} {draw(st.sampled_from(['100', '1e308', '+Inf', 'NaN']))}")
        lines.append(f"vllm:spec_decode_num_accepted_tokens_total{{{labels}}} 150")
        lines += [f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{labels},position="{p}"}} 50'
                  for p in range(positions)]
        lines.append(f"vllm:generation_tokens_total{{{labels}}} 1000")
    if draw(st.booleans()):  # a series written twice
        at = draw(st.integers(1, len(lines) - 1))
        lines.insert(at, lines[at])
    return "\n".join(lines) + "\n"


@st.composite
def workload_files(draw):
    """A traffic-mix file (CSV or JSON) with the columns people write: shares, α per method, survival
    lists, temperatures, notes; mostly valid values, some past their ranges, up to the workload cap."""
    columns = ["label"] + draw(st.lists(st.sampled_from(
        ["share", "alpha", "survival", "temperature", "notes", "alpha_ngram", "alpha_eagle", "alpha_draft_model",
         "weight", "k"]), unique=True, max_size=6))
    good = {"share": ["0.5", "1", "30%", "2"], "alpha": ["0.7", "0.4", "0.95"], "survival": ['"0.8, 0.6"', "0.5;0.3"],
            "temperature": ["0", "0.7", "1.2"], "notes": ["chat", ""], "alpha_ngram": ["0.6"], "alpha_eagle": ["0.8"],
            "alpha_draft_model": ["0.7"], "weight": ["1"], "k": ["3"]}
    bad = ["-1", "1.5", "x", "", "nan", "inf", "1e309"]
    rows = draw(st.sampled_from([1, 2, 6, 100, bounds.MAX_MIX_WORKLOADS + 1]))
    cells = [[f"w{i}"] + [draw(st.sampled_from(good[c] * 6 + bad)) for c in columns[1:]] for i in range(min(rows, 8))]
    cells = (cells * (rows // len(cells) + 1))[:rows]
    if draw(st.booleans()):
        lines = [",".join(columns)] + [",".join(r) for r in cells]
        for defect in draw(st.lists(st.sampled_from(["quote", "quote_end", "short", "long", "long_cell", "blank",
                                                     "twice", "header_quote", "duplicate"]), max_size=3)):
            at = draw(st.integers(1, len(lines) - 1)) if len(lines) > 1 else 0
            if defect == "quote":  # a quote opened and not closed, the rows after it swallowed
                lines[at] = '"' + lines[at]
            elif defect == "quote_end":
                lines[-1] = lines[-1] + ',"open'
            elif defect == "short":
                lines[at] = ",".join(lines[at].split(",")[:-1])
            elif defect == "long":
                lines[at] = lines[at] + ",extra"
            elif defect == "long_cell":
                lines[at] = lines[at] + "x" * (bounds.MAX_CELL_CHARS + draw(st.sampled_from([-1, 1, 1000])))
            elif defect == "blank":
                lines[at:at] = [""] * draw(st.sampled_from([1, 50]))
            elif defect == "twice":  # two columns with the same name
                lines[0] = lines[0] + ",Label"
            elif defect == "header_quote":  # the header itself never closes its quote
                lines[0] = '"' + lines[0] + "\n" + "x" * (bounds.MAX_CELL_CHARS + 1)
            else:  # many rows; one in 40 times past the file's row bound (200,000 rows take seconds)
                lines.extend(lines[1:2] * _sized(draw, [100, 2000], [bounds.MAX_ROWS_PER_FILE + 1]))
        text = "\n".join(lines) + "\n"
        return "mix.csv", _encoded(draw, text.encode())
    docs = [{c: (v.strip('"') if c != "survival" else [0.8, 0.6]) for c, v in zip(columns, r)} for r in cells]
    return "mix.json", json.dumps(draw(st.sampled_from([docs, {"workloads": docs}, docs[:1], {"x": docs}])))


METADATA = ipaddress.IPv4Address("169.254.169.254")


def _local_nat64(ip: ipaddress.IPv4Address, prefix: int) -> str:
    """ip inside the local-use NAT64 prefix 64:ff9b:1::/48 at an RFC 6052 layout (bits 64-71 skipped)."""
    bits, pos = 0x0064FF9B0001 << 80, prefix
    for octet in ip.packed:
        if pos == 64:
            pos += 8
        bits |= octet << (120 - pos)
        pos += 8
    return str(ipaddress.IPv6Address(bits))


def _metadata_spellings(ip: ipaddress.IPv4Address) -> list[str]:
    n = int(ip)
    teredo = ipaddress.IPv6Address((0x20010000 << 96) | (n ^ 0xFFFFFFFF))
    v6 = [f"::ffff:{ip}", f"::{ip}", f"64:ff9b::{ip}", f"2002:{n >> 16:x}:{n & 0xffff:x}::",
          f"::ffff:0:{n >> 16:x}:{n & 0xffff:x}", f"fe80::5efe:{ip}", f"::ffff:{n >> 16:x}:{n & 0xffff:x}",
          f"fe80::200:5efe:{ip}", str(teredo), "fe80::1%25eth0"] + [_local_nat64(ip, p) for p in (48, 56, 64, 96)]
    return [str(ip), str(n), hex(n), "0" + oct(n)[2:], ".".join(f"0x{int(o):x}" for o in str(ip).split(".")),
            ".".join(f"0{int(o):o}" for o in str(ip).split("."))] + [f"[{h}]" for h in v6]


@st.composite
def urls(draw):
    """(url, allow-list or None, whether the URL names the metadata address): every spelling of it."""
    metadata = draw(st.booleans())
    host = draw(st.sampled_from(_metadata_spellings(METADATA) if metadata else
                                ["127.0.0.1", "localhost", "[::1]", "10.0.0.1", "example.com", "[fd00::1]",
                                 "a" * 300, "", "xn--nxasmq6b", "127.1", "0", "[::]", "host_name"]))
    scheme = draw(st.sampled_from(["http://", "https://", "HTTP://", "ftp://", "", "javascript:", "//"]))
    port = draw(st.sampled_from(["", ":80", ":8000", ":0", ":65536", ":99999999999", ":x"]))
    user = draw(st.sampled_from(["", "u@", "u:p@", "@", "u:p@evil@"]))
    path = draw(st.sampled_from(["", "/metrics", "/../x", "/?a=b#c", "/" + "x" * 3000, "/%00"]))
    allow = draw(st.one_of(st.none(), st.lists(st.sampled_from(
        ["127.0.0.1", "localhost", "[::1]:8000", "[::1]", "10.0.0.0/8", "*.example.com", "example.com:8000",
         "169.254.169.254", "[::ffff:a9fe:a9fe]", "", "::1", "*", "10.0.0.*", "127.0.0.1:80", "*.com",
         "[::1]:x", "0x7f000001"]), max_size=3).map(tuple)))
    return scheme + user + host + port + path, allow, metadata


def target_url_policy(item) -> None:
    """A URL is refused with SpecModelError or allowed; the metadata address never is, however spelled."""
    from specmodel.metrics import scrape
    url, allow, metadata = item
    policy = scrape.ScrapePolicy(allowed_hosts=allow)
    try:  # the numeric spellings resolve without DNS (inet_aton reads 0xa9fea9fe, 025177524776): resolve them
        checked = scrape.check_url(url, policy, resolve=metadata)
    except SpecModelError:
        return
    if metadata:
        raise AssertionError(f"the metadata address was allowed: {url!r} -> {checked}")
    scrape.display_url(url)
    bare, user, password = scrape.split_credentials(url)
    scrape.with_credentials(bare, user, password)
    scrape.with_credentials(bare.split("://", 1)[-1], user or "u", password)
    scrape.ScrapePolicy.for_interval(5.0, {scrape.ALLOWED_HOSTS_ENV: ",".join(allow or ())})
    host = checked.host.strip("[]")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return
    if scrape.refused_address(str(address)) is None and address == METADATA:
        raise AssertionError(f"{address} is not refused")


@st.composite
def calibration_texts(draw):
    """A calibration file: the real layout with values in, at and past every parameter's ranges, retyped,
    other versions, deep or huge; written to a file (or a folder, a missing path) half of the time."""
    from specmodel.model.calibration_file import CALIBRATION_FORMAT, CALIBRATION_VERSION
    from specmodel.model.parameters import PARAMETERS
    params = {}
    for name, p in PARAMETERS.items():
        if draw(st.integers(0, 3)):
            inside = [p.physical_lo, p.physical_hi, (p.physical_lo + p.physical_hi) / 2]
            params[name] = draw(st.sampled_from(inside * 8 + [p.lo, p.hi, p.hi * 2 + 1, -1]))
    if draw(st.integers(0, 3)) == 0:
        params[draw(st.sampled_from(sorted(PARAMETERS) + ["unknown"]))] = draw(st.sampled_from(
            [0, float("inf"), float("nan"), 10 ** 400, True, None, "x", [], {}]))
    doc = {"format": draw(st.sampled_from([CALIBRATION_FORMAT] * 4 + ["other", None])),
           "version": draw(st.sampled_from([CALIBRATION_VERSION] * 4 + [1, "2", None, 10 ** 40])),
           "parameters": params}
    shape = draw(st.sampled_from(["file"] * 4 + ["runs_json", "params_list", "deep", "huge", "not_json", "list"]))
    if shape == "runs_json":
        doc = {"calibration": {"parameters": params}}
    elif shape == "params_list":
        doc["parameters"] = list(params.items())
    elif shape == "list":
        doc = [doc]
    text = json.dumps(doc, allow_nan=True, default=str)
    if shape == "deep":
        text = text[:-1] + ', "x": ' + "[" * draw(st.sampled_from([10, 65, 100_000])) + "}"
    elif shape == "huge":
        text = text.replace("0.", "9" * draw(st.sampled_from([31, 5000, 100_000])) + ".", 1)
    elif shape == "not_json":
        text = text[:draw(st.integers(0, len(text)))]
    where = draw(st.sampled_from(["text", "text", "file", "file", "folder", "missing", "latin-1", "big"]))
    return where, text


def target_calibration(item, write) -> None:
    """A calibration is applied within its parameters' physical ranges, or refused naming the file."""
    from specmodel.model import calibration_file as cf
    from specmodel.words.calibration import calibration_line
    from specmodel.model.parameters import PARAMETERS
    where, text = item
    if where == "text":
        eff, _ = cf.calibration_from_json(text, "fuzz.json")
    else:
        data = {"latin-1": text.encode("utf-8") + b"\xe9", "big": b" " * 1_000_001}.get(where, text.encode())
        path = write("calibration.json", data)
        path = {"folder": str(Path(path).parent), "missing": path + ".missing"}.get(where, path)
        eff, _ = cf.load_calibration(path)
    for name, p in PARAMETERS.items():
        if not p.physical_lo <= getattr(eff, name) <= p.physical_hi:
            raise AssertionError(f"a calibration with {name} = {getattr(eff, name)} outside its range was applied")
    cf.parameter_rows(eff, fitted=tuple(PARAMETERS)[:1])
    calibration_line(eff)


def _raw_deflate(data: bytes) -> bytes:
    z = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return z.compress(data) + z.flush()


ENCODINGS = {"gzip": gzip.compress, "x-gzip": gzip.compress, "deflate": zlib.compress, "identity": lambda b: b,
             "raw-deflate": _raw_deflate}


@st.composite
def encoded_answers(draw):
    """One exchange with a real local server: the Content-Encoding stack and the body compressed by it, the
    status, the client (the project's or a plain httpx one), the total time, a token, whether the body is read."""
    one = st.sampled_from(["gzip", "deflate", "raw-deflate", "x-gzip", "GZIP"]).map(lambda c: [c])
    stack = draw(one | one | st.lists(st.sampled_from(["gzip", "deflate", "identity", "br", ""]), max_size=3))
    body = b"\0" * _sized(draw, [0, 100, 16384, 5 * MAX_BYTES], [MAX_BYTES, 64 * MAX_BYTES]) if draw(st.booleans()) else \
        b'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 100\n' * draw(st.sampled_from([1, 1000]))
    for coding in stack:
        body = ENCODINGS.get(coding.lower(), lambda b: b)(body)
    if draw(st.booleans()):  # a truncated or corrupted answer
        body = body[:draw(st.integers(0, len(body)))] + draw(st.sampled_from([b"", b"\x00garbage"]))
    header = ", ".join("deflate" if c == "raw-deflate" else c for c in stack)
    return {"header": header, "body": body, "status": draw(st.sampled_from([200, 200, 200, 301, 401, 403, 404, 418, 503])),
            "client": draw(st.sampled_from(["checked", "checked", "plain", "memory", "closed_port"])),
            "total_s": draw(st.sampled_from([5.0] * 6 + [1e-9])),
            "token": draw(st.sampled_from([None, "abc", "é", "a b", "x" * 20_000])),
            "read_body": draw(st.booleans())}


def target_encodings(item, serve) -> None:
    """The answer is read within the cap or refused as FetchFailed (a SpecModelError), never inflated."""
    import httpx

    from specmodel.metrics import fetch, scrape
    try:
        fetch.check_token(item["token"])
    except SpecModelError:
        pass  # refused by name; the exchange below does not send it
    headers = {"Content-Encoding": item["header"]} if item["header"] else {}
    url = serve(item["body"], headers, item["status"])
    cap = fetch.GetLimits(max_bytes=4 * MAX_BYTES, total_s=item["total_s"])
    kind = item["client"]
    if kind == "memory":  # an answer already in memory: httpx decodes it (a test transport)
        client = httpx.Client(transport=httpx.MockTransport(
            lambda request: httpx.Response(item["status"], content=item["body"][:4 * MAX_BYTES])))
    else:
        client = scrape.make_client() if kind == "checked" else httpx.Client(trust_env=False)
    if kind == "closed_port":
        url = "http://127.0.0.1:9/metrics"
    with client:
        got = fetch.capped_get(client, url, where=url, limits=cap,
                               read_body_if=None if item["read_body"] else (lambda response: False))
    if len(got.body) > cap.max_bytes:
        raise AssertionError(f"{len(got.body):,} bytes decoded past the {cap.max_bytes:,}-byte cap")
    got.check_status()


@st.composite
def prom_settings(draw):
    """What a Fleet user types next to a Prometheus answer: the window and history (Prometheus
    durations, some malformed or past the bound), the server's URL as pasted (no scheme, a UI path,
    credentials in it), basic auth or a bearer token (or both, or a password alone), a timeout, and
    the span of a range query."""
    window = draw(st.one_of(st.sampled_from(["5m", "30s", "1h30m", "1500ms", "2d", "0s", "-5m", "5 m", "", "x",
                                             "400d", "99999999999h", "1.5h", "1e309s", "5m30", "1w"]),
                            st.text(max_size=12)))
    url = draw(st.sampled_from(["", "   ", "prometheus:9090", "127.0.0.1:9090/graph", "http://127.0.0.1:9090/query/",
                                "https://prom.example.com/monitoring/", "http://u:p@127.0.0.1:9090", "ftp://127.0.0.1/",
                                "http://169.254.169.254/", "http://[::1]:9090/targets"]))
    auth = draw(st.sampled_from([(None, None, None), ("u", "p", None), ("u", None, None), (None, "p", None),
                                 (None, None, "tok"), ("u", "p", "tok"), (None, None, "tok\nen"), (None, None, "")]))
    timeout = draw(st.sampled_from([5.0, 0.5, 0.0, -1.0, float("nan"), float("inf"), 1e-4]))
    span = draw(st.sampled_from([(0.0, 600.0, 60.0), (600.0, 0.0, 60.0), (0.0, 600.0, 0.0), (0.0, 1e9, 1.0),
                                 (0.0, 600.0, 1.5)]))
    return window, url, auth, timeout, span
