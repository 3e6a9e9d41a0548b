"""Shape generators (issue 41): inputs built from the shapes that broke a shared instance, which random
bytes and edited samples never drew. `make fuzz` (2,400 inputs) found none of issue 41's defects: its
strategies never made a long line, a file of blank lines, a huge number in a log field, a URL inside a name
or a newline in a label. Each generator here draws shapes and defects and builds the text from them:

    long lines        a per-position list of up to FUZZ_MAX_BYTES, a field continued by many pieces, a cell
                      or a header of many characters
    repeated separators  runs of commas, of ", " and of field separators with nothing between
    blank runs        many blank lines before, between and after rows
    huge numbers      fields of 400 and 5,000 digits (past int()'s 4,300), `1_0`, Arabic-Indic and
                      full-width digits, exponents past any float
    hostile names     bare URLs, e-mail addresses, Markdown and HTML, Streamlit's :red[], maths, a line
                      break that starts a forged line, text-direction marks, zero-width characters

    shaped_logs()     vLLM logs (V1 and V0 lines, engine lines)
    shaped_csvs()     plain run CSVs (rows, a reference-only row, settings past the model's bounds)
    hostile_names()   one name of the shapes above, for every place a name is read or shown
    shaped_labels()   a /metrics text whose model_name label is such a name

`target_text_safety` checks what a page and a terminal would do with a hostile name: after the one
text-safety function, Streamlit's autolink pass finds no link in it, no formatting of the name's survives,
it is one line, cut to its limit, and a terminal (cli.output.SafeStream) prints it on one line.
"""

from __future__ import annotations

import io
import re

from hypothesis import strategies as st

from specmodel.text import MAX_LABEL_CHARS, MAX_MESSAGE_CHARS, encodable, marked_name, safe_text
from tests.fuzz_structured import MAX_BYTES, _sized

_PIECES = ["https://login.evil-example.com/reset", "http://evil-example.com", "www.evil-example.com",
           "HTTPS://EVIL-EXAMPLE.COM", "admin@evil-example.com", "a.b+c@evil-example.co.uk", "mailto:x@evil-example.com",
           "**bold**", "__b__", "_it_", "*i*", "`code`", "```", "<b>x</b>", '<a href="http://evil-example.com">a</a>',
           "<img src=x onerror=alert(1)>", "[c](http://evil-example.com)", "![i](http://evil-example.com/p.png)",
           "[ref]: http://evil-example.com", "$x^2$", "$$", ":red[r]", ":material/home:", "~s~", "~~s~~", "# h",
           "> q", "1. l", "- l", "| a | b |", "---", "\\", "&lt;", "&#x3C;", "\n", "\r\n", "\n# FAKE: pays off 9.99x",
           "\u202e", "\u2066", "\u200b", "\u200d", "\ufeff", "\x1b[2K", "\x00", "\t", " ", "name", "Llama 3.1 8B", "é",
           "名前"]


@st.composite
def hostile_names(draw, most: int = 12, longest: int = 200_000) -> str:
    """A name made of hostile pieces, sometimes with a long tail (past the 200 and 2,000 character cuts; one
    in 40 up to `longest` characters or FUZZ_MAX_BYTES)."""
    name = "".join(draw(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=most)))
    tail = _sized(draw, [0, 0, 0, 250, 2500], [min(MAX_BYTES, longest)])
    return name + "y" * tail


HUGE_NUMBERS = ["9" * 400, "9" * 5000, "1_0", "\u0664", "\uff14", "1e999999", "-" + "9" * 5000, "0." + "1" * 60,
                "1" * 41, "٣.٥", "NaN", "+Inf", "1e309", "4", "0.7", "12"]


@st.composite
def shaped_logs(draw):
    """vLLM logs of long lines, repeated separators, blank runs and huge numbers in every field."""
    positions = _sized(draw, [1, 3, 64, 65, 1000], [max(1, MAX_BYTES // 8)])
    sep = draw(st.sampled_from([", ", ",", ", , ", ",,,,", " , "]))
    rates = sep.join([draw(st.sampled_from(["0.5", "0.25", "x", "1_0", "9" * 400]))] * positions)
    number = lambda: draw(st.sampled_from(HUGE_NUMBERS))  # noqa: E731
    v1 = (f"INFO 09-16 05:26:58 [metrics.py:1] SpecDecoding metrics: Mean acceptance length: {number()}, "
          f"Accepted: {number()} tokens, Drafted: {number()} tokens, Per-position acceptance rate: {rates}")
    if draw(st.booleans()):  # a field continued by many pieces without a name of their own
        v1 += ", Other: " + ", ".join(["x"] * _sized(draw, [10, 1000], [max(1, MAX_BYTES // 3)]))
    v0 = (f"INFO 09-16 05:26:58 Speculative metrics: Draft acceptance rate: 0.6, System efficiency: {number()}, "
          f"Number of speculative tokens: {number()}, Number of accepted tokens: {number()}")
    engine = f"INFO 09-16 05:26:57 [loggers.py:1] Engine 000: Running: {number()} reqs, Waiting: 0 reqs"
    blank = "\n" * _sized(draw, [0, 1, 5, 1000], [max(1, MAX_BYTES // 2)])
    lines = draw(st.lists(st.sampled_from([v1, v0, engine, blank, "", "garbage " * 10]), min_size=1, max_size=6))
    return "shaped.log", blank + "\n".join(lines) + "\n" + blank


@st.composite
def shaped_csvs(draw):
    """Plain run CSVs: blank runs, rows of repeated separators, long cells and headers, huge and odd numbers,
    hostile names in the text columns, a row with text only in a column kept for reference, and settings past
    the model's bounds (TP, tree width, draft depth of 10^9, a context of 10^15)."""
    header = ["workload", "concurrency", "k", "alpha", "notes", "url", "tp", "branching", "context_len"]
    extra = draw(st.sampled_from(["", "", "concu\u200brrency", "h" * 300, "x\ny", '"' + "z" * 5000 + '"']))
    if extra:
        header.append(extra)

    def cell(column: str) -> str:
        if column in ("workload", "notes"):
            return '"' + draw(hostile_names(4)).replace('"', '""') + '"'
        if column == "url":
            return draw(st.sampled_from(["", "", "http://x"]))
        if column in ("tp", "branching", "context_len"):
            return draw(st.sampled_from(["", "", "", "1", "1000000000", "1000000000000000"]))
        return draw(st.sampled_from(HUGE_NUMBERS + ["1", "4", "0.7", "8", ""]))

    rows = []
    for _ in range(draw(st.integers(1, 5))):
        shape = draw(st.sampled_from(["row", "row", "row", "separators", "blank", "reference only"]))
        if shape == "separators":
            rows.append("," * draw(st.sampled_from([len(header) - 1, len(header) + 5, 5000])))
        elif shape == "blank":
            rows.append("\n" * _sized(draw, [1, 100], [max(1, MAX_BYTES // 2)]))
        elif shape == "reference only":
            rows.append(",".join("http://x" if c == "url" else "" for c in header))
        else:
            rows.append(",".join(cell(c) for c in header))
    return "shaped.csv", ",".join(header) + "\n" + "\n".join(rows) + "\n"


@st.composite
def shaped_labels(draw):
    """Two scrapes of a vLLM /metrics page whose model_name label is a hostile name (escaped as the
    exposition format writes it), for the Prometheus text target."""
    from tests.fuzz_targets import PROM_FILES
    name = draw(hostile_names(6, longest=2500)).replace("\x00", "")  # on every sample line: the parser is slow
    label = name.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    text = PROM_FILES["vllm_v1_specdecode_sample.txt"].replace("meta-llama/Llama-3.1-8B-Instruct", label)
    return ("a", text), ("b", text), None, None


# --- the text-safety target ---------------------------------------------------------------------------------

# Streamlit's Markdown links these in the text after escapes are read (StreamlitMarkdown*.js: mdast-util-gfm-
# autolink-literal); checked without its look-behind and domain checks, so stricter than it.
_GFM_URL = re.compile(r"(https?://|www(?=\.))([-.\w]+)([^ \t\r\n]*)", re.I | re.A)
_GFM_EMAIL = re.compile(r"([-.\w+]+)@([-\w]+(?:\.[-\w]+)+)", re.A)
# what would format the page if it came through without its escape
_UNESCAPED = re.compile(r"(?<!\\)(\*\*|<b>|<a |<img|\]\(|!\[|:red\[|\$|~~)")


def _links(source: str) -> list[str]:
    text = re.sub(r"\\(.)", r"\1", source)
    return [m.group(0) for p in (_GFM_URL, _GFM_EMAIL) for m in p.finditer(text)]


def target_text_safety(name: str) -> None:
    """A hostile name through the one text-safety function in every mode, and through the terminal."""
    from specmodel.cli.output import SafeStream
    for mode, limit in (("plain", MAX_LABEL_CHARS), ("message", MAX_MESSAGE_CHARS), ("code_message", MAX_MESSAGE_CHARS),
                        ("figure", MAX_LABEL_CHARS), (None, MAX_LABEL_CHARS)):
        shown = safe_text(name, limit, markdown=mode)
        bare = safe_text(name, limit)  # the same name without escapes: how long it may be
        if "\n" in shown or "\r" in shown or len(bare) > limit:
            raise AssertionError(f"{mode}: not one line of at most {limit} characters: {shown[:120]!r}")
        if any(c in shown for c in "\u202e\u2066\u200b\x1b\x00\ufeff"):
            raise AssertionError(f"{mode}: a control or format character kept: {shown[:120]!r}")
        if mode in ("plain", "message", "code_message"):
            links = [link for link in _links(shown) if "evil-example" in link]
            if links:
                raise AssertionError(f"{mode}: Streamlit would link {links[0]!r} in {shown[:160]!r}")
            kept = _UNESCAPED.search(shown)
            if kept:
                raise AssertionError(f"{mode}: {kept.group(0)!r} would format the page: {shown[:160]!r}")
        if mode == "figure" and re.search(r"<(a|b|img|br)\b", shown, re.I):
            raise AssertionError(f"figure: an HTML tag Plotly renders: {shown[:160]!r}")
    marked = marked_name(name)
    if "\n" in marked or any(c in marked for c in "\u202e\u200b") or len(marked) > MAX_LABEL_CHARS:
        raise AssertionError(f"marked_name: {marked[:120]!r}")
    if not encodable(safe_text(name, MAX_MESSAGE_CHARS), "ascii").isascii():
        raise AssertionError("encodable: not ASCII for an ASCII stream")
    out = io.StringIO()
    SafeStream(out).write(f"model {safe_text(name)}\n{name}\n")  # a name as shown, and one printed raw
    lines = out.getvalue().splitlines()
    if lines[0].startswith("model ") is False or any(len(line) > MAX_MESSAGE_CHARS for line in lines):
        raise AssertionError(f"a terminal line not cut: {max(map(len, lines)):,} characters")
    if any(c in out.getvalue() for c in "\u202e\x1b\x00"):
        raise AssertionError("a control character reached the terminal")


__all__ = ["hostile_names", "shaped_csvs", "shaped_labels", "shaped_logs", "target_text_safety"]
