"""Issue 25 (7, 9): every string a page shows goes through the one text-safety function
(`specmodel.text.safe_text`, which pages/parts/text.py's `plain`, `name` and `no_links` are).

The walk: every `st.<call>` in app.py and pages/ that renders text (Markdown or not) is read from
the source, and its text argument must be safe by construction: a literal; an f-string or `+` whose
every interpolated part is a literal, a number with a format spec (`{x:.2f}`), or itself safe; or a
call of a text-safety function. Anything else (a variable, `str(exc)`, a readout) must be wrapped."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from specmodel.text import safe_text

ROOT = Path(__file__).resolve().parent.parent
TEXT_CALLS = {"markdown", "write", "error", "warning", "info", "success", "caption", "title", "header",
              "subheader", "toast", "text", "exception"}
SAFE_FUNCS = {"plain", "name", "no_links", "own_words", "code", "safe_text"}
FILES = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py")), *sorted((ROOT / "pages" / "parts").glob("*.py"))]


def _safe(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (str, int, float)) or node.value is None
    if isinstance(node, ast.JoinedStr):
        return all(_safe(v) for v in node.values)
    if isinstance(node, ast.FormattedValue):
        return node.format_spec is not None or _safe(node.value)
    if isinstance(node, ast.BinOp):
        return _safe(node.left) and _safe(node.right)
    if isinstance(node, ast.IfExp):
        return _safe(node.body) and _safe(node.orelse)
    if isinstance(node, ast.BoolOp):
        return all(_safe(v) for v in node.values)
    if isinstance(node, ast.Name):  # a module constant (SERVERS_IN_WORDS): the project's own words
        return node.id.isupper()
    if isinstance(node, ast.Subscript):  # LABELS[label]
        return isinstance(node.value, ast.Name) and node.value.id.isupper()
    if isinstance(node, ast.Call):
        func = node.func
        called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if called in SAFE_FUNCS:
            return True
        if called == "join" and isinstance(func, ast.Attribute):  # "sep".join(safe parts)
            return _safe(func.value) and all(_safe_items(a) for a in node.args)
        if called in ("len", "int", "round"):
            return True  # numbers
    return False


def _safe_items(node: ast.AST) -> bool:
    if isinstance(node, (ast.GeneratorExp, ast.ListComp)):
        return _safe(node.elt)
    if isinstance(node, (ast.List, ast.Tuple)):
        return all(_safe(e) for e in node.elts)
    return False


def _unsafe_calls():
    for path in FILES:
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in TEXT_CALLS and isinstance(node.func.value, ast.Name)
                    and node.func.value.id in ("st", "box", "slot", "col", "placeholder", "container")):
                continue
            args = list(node.args[:1]) + [k.value for k in node.keywords if k.arg == "body"]
            for arg in args:
                if not _safe(arg):
                    yield f"{path.relative_to(ROOT)}:{node.lineno}: st.{node.func.attr}({ast.unparse(arg)[:60]})"


def test_7_every_text_a_page_shows_goes_through_the_text_safety_function():
    unsafe = list(_unsafe_calls())
    assert not unsafe, "wrap in plain/name/no_links (pages/parts/text.py):\n" + "\n".join(unsafe)


def test_7_the_walk_finds_the_calls_it_checks():
    assert len(FILES) > 10
    sample = ast.parse('st.error(str(exc))\nst.caption(f"{n:.2f} x")\nst.info(no_links(m))')
    calls = [n for n in ast.walk(sample) if isinstance(n, ast.Call) and getattr(n.func, "attr", "") in TEXT_CALLS]
    assert [_safe(c.args[0]) for c in calls] == [False, True, True]


@pytest.mark.parametrize("hostile, absent", [
    ("[click](http://evil.example/x)", "](http"), ("![img](http://evil.example/x.png)", "![img]("),
    ("# Heading", "\n# "), ("<img src=x onerror=alert(1)>", "<img"), ("`code`", "`code`"),
    ("see www.evil.example", "www.evil"), ("a\x1b[2K\rpays off 9.99x", "\x1b"),
])
def test_7_9_hostile_text_is_inert_in_every_mode(hostile, absent):
    for mode in ("plain", "message"):
        shown = safe_text("\n" + hostile, markdown=mode)
        assert not re.search(r"(?<!\\)" + re.escape(absent), shown), (mode, shown)
    assert "\x1b" not in safe_text(hostile) and "\r" not in safe_text(hostile)


@pytest.mark.parametrize("hostile, absent", [
    ("[click](http://evil.example/x)", "](http"), ("![img](http://evil.example/x.png)", "![img]("),
    ("# Heading", "\n# "), ("<img src=x onerror=alert(1)>", "<img"), ("see www.evil.example", "www.evil"),
])
def test_7_9_the_apps_own_words_keep_their_code_spans_and_nothing_else(hostile, absent):
    """own_words (markdown="code_message"): a launch flag in backticks renders as code; a link, an image,
    HTML, a heading or an autolink stays as inert as in a message."""
    shown = safe_text("run `--speculative-config` with\n" + hostile, markdown="code_message")
    assert "`--speculative-config`" in shown
    assert not re.search(r"(?<!\\)" + re.escape(absent), shown), shown


def test_9_a_5_mb_name_is_cut_to_200_characters():
    shown = safe_text("x" * 5_000_000)
    assert len(shown) == 200 and shown.endswith("…")


# --- the command line: every character printed goes through text.terminal_text ------------------------

CLI_FILES = sorted((ROOT / "specmodel" / "cli").glob("*.py"))
_STREAMS = {"sys.stdout", "sys.stderr"}


def _cli_bypasses():
    """Output calls of specmodel/cli/ that would not reach the streams cli.router.main wraps: print to
    another file, a write to anything but sys.stdout/sys.stderr, the interpreter's original streams,
    os.write, or a terminal opened directly."""
    for path in CLI_FILES:
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Attribute) and node.attr in ("__stdout__", "__stderr__", "buffer"):
                yield f"{where}: {ast.unparse(node)}"
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Name) and func.id == "print":
                target = next((ast.unparse(k.value) for k in node.keywords if k.arg == "file"), "sys.stdout")
                if target not in _STREAMS:
                    yield f"{where}: print(..., file={target})"
            elif isinstance(func, ast.Attribute) and func.attr in ("write", "writelines"):
                receiver = ast.unparse(func.value)
                if receiver not in _STREAMS and path.name != "output.py":
                    yield f"{where}: {receiver}.{func.attr}(...)"
            elif ast.unparse(func) in ("os.write", "open") and any(
                    isinstance(a, ast.Constant) and a.value in (1, 2, "/dev/tty") for a in node.args):
                yield f"{where}: {ast.unparse(node)[:60]}"


def test_every_cli_output_call_goes_to_the_wrapped_streams():
    bypasses = list(_cli_bypasses())
    assert not bypasses, "print to sys.stdout/sys.stderr (cli.output.SafeStream wraps them):\n" + "\n".join(bypasses)


def test_a_label_cannot_forge_a_terminal_line_of_the_scrape_command(capsys):
    """A model_name label with a line clear, a move to column 1, a text-direction override and a backspace
    (issue 25, 9; a carriage return cannot sit in a label, the exposition is line-based): printed, they
    would overwrite the verdict line with "pays off 9.99x"."""
    from specmodel import cli
    from tests import replay
    from tests.replay import ReplayServer
    forged = "m\x1b[2K\x1b[1G  verdict:          pays off 9.99x\u202e\x08"
    text = replay.fixture_text("vllm_v1_specdecode_sample.txt").replace("meta-llama/Llama-3.1-8B-Instruct", forged)
    with ReplayServer(text, increments=replay.V1_SPEC, gauges=replay.V1_GAUGES) as srv:
        code = cli.main(["scrape", srv.url, "--window", "0.1", "--model-name", forged])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert not any(c in out + err for c in "\x1b\r\u202e\x08")
    assert "[2K" in out  # the label is shown, without its control characters


def test_the_terminal_safety_function_keeps_layout_and_json():
    from specmodel.text import terminal_text
    table = "job              instance   E\n" + "prod\t         a:8000     2.50\n"
    assert terminal_text(table) == table
    assert terminal_text('{\n  "a": "\\u001b"\n}') == '{\n  "a": "\\u001b"\n}'
    assert terminal_text("a\x1b[31mb\x00c\u2028d") == "a[31mbc d"


# --- issue 41 (3, 5, 8): one sweep of the places a name from a user or a server is shown -----------------

# A name that tries everything: bare URLs and an e-mail address (Streamlit's Markdown links them), Markdown and
# HTML formatting, Streamlit's colour directive, maths, a line break that starts a forged line, a text-direction
# override, and a tail far past every cut.
HOSTILE = ("see https://login.evil-example.com/reset or www.evil-example.com, mail admin@evil-example.com "
           "**bold** _it_ `code` <b>x</b> [c](http://evil-example.com) $x$ :red[r] ~s~\n# FAKE: speculation pays "
           "off 9.99x \u202e" + "y" * 3000)
# Streamlit's Markdown (static/js/StreamlitMarkdown*.js, mdast-util-gfm-autolink-literal) links these in the
# text after escapes are read; checked here without its look-behind and domain checks, so stricter than it.
_GFM_URL = re.compile(r"(https?://|www(?=\.))([-.\w]+)([^ \t\r\n]*)", re.I | re.A)
_GFM_EMAIL = re.compile(r"([-.\w+]+)@([-\w]+(?:\.[-\w]+)+)", re.A)
# what would format the page if it came through unescaped (Markdown's backslash escapes make it text)
_FORMATTING = ("**bold", "_it", "`code", "<b>", "](", "$x", ":red[", "~s")


def _read_as_remark_does(source: str) -> str:
    return re.sub(r"\\(.)", r"\1", source)


def _markdown_problems(where: str, source: str) -> list[str]:
    """What a Markdown text shown on a page would do with HOSTILE in it."""
    out = []
    text = _read_as_remark_does(source)
    links = [m.group(0) for pattern in (_GFM_URL, _GFM_EMAIL) for m in pattern.finditer(text)]
    out += [f"{where}: a link {link[:60]!r}" for link in links if "evil-example" in link]
    out += [f"{where}: {token!r} unescaped" for token in _FORMATTING if re.search(r"(?<!\\)" + re.escape(token), source)]
    if re.search(r"(^|\n)[ \t]*(#+ )?FAKE", source):
        out.append(f"{where}: the forged line starts a line")
    if "\u202e" in source or "y" * (2001 if where.split(":")[0] in _MESSAGES else 201) in source:
        out.append(f"{where}: a direction override, or not cut ({len(source):,} characters)")
    return out


_MESSAGES = {"error", "warning", "info", "success", "caption"}  # whole messages: cut at 2,000 characters
_KINDS = ("markdown", "caption", "error", "warning", "info", "success", "title", "header", "subheader")


def _page_problems(at) -> list[str]:
    """Every Markdown text, table cell and chart of an AppTest page, checked for what HOSTILE would do."""
    import json
    assert not at.exception, at.exception
    out = [p for kind in _KINDS for e in getattr(at, kind) for p in _markdown_problems(f"{kind}", str(e.value))]
    for frame in at.dataframe:
        cells = frame.value.astype(str)
        longest = cells.map(len).max().max() if not cells.empty else 0
        if longest > 2000 or cells.map(lambda c: "\u202e" in c or "\n" in c).any().any():
            out.append(f"a table cell of {longest:,} characters, or with a line break or direction override")
    for chart in at.get("plotly_chart"):
        text = json.dumps(json.loads(chart.proto.spec)).replace("\\u003c", "<").replace("\\u003e", ">")
        if "<b>x</b>" in text or re.search(r"<a[ >]", text) or "y" * 201 in text:
            out.append("a chart with HTML from a name (Plotly renders <a href> and <b>), or a name not cut")
    return out


def _shows_the_name(at) -> bool:
    """Whether the page quotes HOSTILE somewhere (so the sweep looked at something)."""
    texts = [str(e.value) for kind in _KINDS for e in getattr(at, kind)] + [c.proto.spec for c in at.get("plotly_chart")]
    return any("evil" in t for t in texts) or any(
        f.value.astype(str).apply(lambda c: c.str.contains("evil")).any().any() for f in at.dataframe)


def _app(page: str, **query):
    from streamlit.testing.v1 import AppTest
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    return at.switch_page(page).run()


def _hostile_csv() -> bytes:
    quoted = '"' + HOSTILE.replace('"', '""') + '"'
    header = f"workload,concurrency,k,alpha,speedup,notes,{quoted}\n"
    return (header + f"{quoted},1,4,0.8,1.6,{quoted},1\n{quoted},8,4,0.8,1.2,{quoted},1\n").encode()


def test_41_a_hostile_name_is_inert_in_every_place_a_page_shows_it():
    """Past runs (a file, workload, column and notes), the sidebar's warning from a share link, Live (the
    served model's name), Fleet (instance, job and model labels and Prometheus' last error)."""
    from tests import replay
    from tests.fuzz_fleet import _Routes, one_instance_answers, server_url
    from streamlit.testing.v1 import AppTest
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    at.query_params["gpu"] = HOSTILE  # a share link: its value is quoted back in a warning in the sidebar
    at.run()
    assert any("evil" in str(w.value) for w in at.sidebar.warning), "the link's value is not quoted back"
    problems = [f"what-if: {p}" for p in _page_problems(at)]
    at.switch_page("pages/past-runs.py").run()
    at.file_uploader(key="run_files").set_value((HOSTILE[:300] + ".csv", _hostile_csv(), "text/csv")).run()
    problems += [f"past runs: {p}" for p in _page_problems(at)]
    assert _shows_the_name(at)

    label = HOSTILE.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    text = replay.fixture_text("vllm_v1_specdecode_sample.txt").replace("meta-llama/Llama-3.1-8B-Instruct", label)
    with replay.ReplayServer(text, increments=replay.V1_SPEC, gauges=replay.V1_GAUGES) as srv:
        at = _app("pages/live.py")
        at.text_input(key="live_url").set_value(srv.url).run()
        for _ in range(4):  # the first scrape, then the window (a loaded machine may need another rerun)
            if _shows_the_name(at) and at.get("plotly_chart"):
                break
            at.run()
    problems += [f"live: {p}" for p in _page_problems(at)]
    assert _shows_the_name(at)

    prefix = "/text-safety-apptest"  # a URL of its own: the Fleet page's answers are cached by URL in the process
    routes = one_instance_answers(HOSTILE, job=HOSTILE, prefix=prefix)
    routes[prefix + "/api/v1/targets"] = routes[prefix + "/api/v1/targets"].replace(b'"health": "up", "lastError": ""', (
        '"health": "down", "lastError": ' + __import__("json").dumps(HOSTILE)).encode())
    with _Routes.lock:
        _Routes.answers = routes
        at = _app("pages/fleet.py", prom_url=server_url() + prefix)
    problems += [f"fleet: {p}" for p in _page_problems(at)]
    assert _shows_the_name(at)
    assert not problems, "\n".join(problems)


def test_41_a_hostile_name_is_one_cut_line_in_every_command_and_inert_in_the_report(tmp_path, capsys):
    from specmodel import cli
    from specmodel.text import MAX_MESSAGE_CHARS
    from tests import replay
    from tests.fuzz_fleet import _Routes, one_instance_answers, server_url

    path = tmp_path / "runs.csv"
    path.write_bytes(_hostile_csv())
    outputs = []
    for args in (["runs", str(path), "--html", str(tmp_path / "r.html"), "--csv", str(tmp_path / "r.csv")],
                 ["runs", str(path), "--json"]):
        assert cli.main(args) in (0, 2)
        outputs.append((args, *capsys.readouterr()))
    label = HOSTILE.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    text = replay.fixture_text("vllm_v1_specdecode_sample.txt").replace("meta-llama/Llama-3.1-8B-Instruct", label)
    with replay.ReplayServer(text, increments=replay.V1_SPEC, gauges=replay.V1_GAUGES) as srv:
        assert cli.main(["scrape", srv.url, "--window", "0.1"]) == 0
    outputs.append((["scrape"], *capsys.readouterr()))
    with _Routes.lock:
        _Routes.answers = one_instance_answers(HOSTILE, job=HOSTILE)
        assert cli.main(["fleet", server_url()]) == 0
    outputs.append((["fleet"], *capsys.readouterr()))
    for args, out, err in outputs:
        whole = out + err
        assert "\u202e" not in whole and "y" * 2001 not in whole, args
        assert not re.search(r"(^|\n)[ \t]*(#+ )?FAKE", whole), args
        if "--json" not in args:
            assert max(map(len, whole.splitlines())) <= MAX_MESSAGE_CHARS, args
    report = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "<b>x</b>" not in report and not re.search(r"<a [^>]*evil-example", report) and "\u202e" not in report
