"""pages/parts/streamlit_mode.py works around Streamlit behaviours (folder mode, streamlit/streamlit#9624; the
bound-URL correction; the first element's stack walk). These tests
pin what the workaround relies on, so a Streamlit upgrade that changes it fails here, by name, instead
of silently breaking shared links (tests/test_browser_links.py checks the whole path in a browser)."""

import ast

import pytest
from pathlib import Path

from streamlit.runtime.pages_manager import PagesManager
from streamlit.source_util import page_icon_and_name

ROOT = Path(__file__).resolve().parent.parent


def app_pages() -> list[tuple[str, str | None]]:
    """(file, url_path) of every st.Page in app.py, as written there."""
    out = []
    for node in ast.walk(ast.parse((ROOT / "app.py").read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "Page":
            url_path = next((k.value.value for k in node.keywords if k.arg == "url_path"), None)
            out.append((node.args[0].value, url_path))
    return out


def test_a_pages_folder_beside_app_py_still_starts_streamlit_in_folder_mode(monkeypatch):
    """The behaviour worked around: the first session of a process decides the mode from the folder.
    If this fails, Streamlit no longer does that: delete pages/parts/streamlit_mode.py and its call."""
    monkeypatch.setattr(PagesManager, "uses_pages_directory", None)
    PagesManager(str(ROOT / "app.py"))
    assert PagesManager.uses_pages_directory is True


def test_folder_mode_finds_every_page_under_the_url_app_py_gives_it():
    """Folder mode names a page after its file; app.py's URL paths must be those names, so a link such
    as /past-runs opened on a fresh server reaches that page, not "Page not found"."""
    pages = app_pages()
    assert len(pages) == 6
    for file, url_path in pages:
        folder_name = page_icon_and_name(ROOT / file)[1]
        assert (ROOT / file).parent == ROOT / "pages"
        assert url_path in (None, folder_name), f"{file}: app.py serves it at /{url_path}, folder mode at /{folder_name}"


def test_the_workaround_leaves_folder_mode_and_reruns(monkeypatch):
    from pages.parts import streamlit_mode

    reruns = []
    monkeypatch.setattr(streamlit_mode.st, "rerun", lambda: reruns.append("rerun"))
    monkeypatch.setattr(PagesManager, "uses_pages_directory", True)
    streamlit_mode.leave_pages_directory_mode()
    assert PagesManager.uses_pages_directory is False and reruns == ["rerun"]
    streamlit_mode.leave_pages_directory_mode()  # in navigation mode it does nothing
    assert reruns == ["rerun"]


def test_the_url_correction_write_bound_url_uses_is_still_there():
    """write_bound_url calls Streamlit's URL correction for bound widgets: set_corrected_value(key,
    value, value type) on the session's query parameters, inside get_session_state().query_params()."""
    import inspect

    from streamlit.runtime.state.query_params import QueryParams
    from streamlit.runtime.state.session_state_proxy import get_session_state

    assert callable(get_session_state)
    assert list(inspect.signature(QueryParams.set_corrected_value).parameters) == ["self", "param_key", "value",
                                                                                   "value_type"]
    params = QueryParams()
    sent = []
    params._send_query_param_msg = lambda: sent.append(dict(params._query_params))
    params.set_corrected_value("gpu", "H100 SXM", "string_value")
    assert sent == [{"gpu": "H100 SXM"}]


def test_the_first_element_skips_the_direct_run_check_streamlit_would_walk_the_stack_for(monkeypatch):
    """skip_direct_run_check marks Streamlit's "run it with streamlit run" warning as given, so the first
    element of a process does not call env_util.is_repl (inspect.stack over every loaded module). If
    the second half fails, Streamlit no longer makes that check: delete skip_direct_run_check."""
    from streamlit import delta_generator, env_util

    from pages.parts import streamlit_mode

    checks = []
    monkeypatch.setattr(env_util, "is_repl", lambda: checks.append("is_repl") or False)
    monkeypatch.setattr(delta_generator, "_use_warning_has_been_displayed", False)
    streamlit_mode.skip_direct_run_check()
    delta_generator._maybe_print_use_warning()
    assert checks == []
    monkeypatch.setattr(delta_generator, "_use_warning_has_been_displayed", False)  # without the workaround
    delta_generator._maybe_print_use_warning()
    assert checks == ["is_repl"]


def test_a_page_run_alone_after_folder_mode_was_left_starts_again_through_app_py(monkeypatch):
    """A second session that started in folder mode while the first left it runs the page file alone: its
    through_app() sends it through app.py; inside app.py's app_run, or while folder mode holds (Streamlit's AppTest
    puts it back before every run and switches pages by it), it does nothing."""
    from pages.parts import streamlit_mode

    reruns = []
    monkeypatch.setattr(streamlit_mode.st, "rerun", lambda: reruns.append("rerun"))
    monkeypatch.setattr(PagesManager, "uses_pages_directory", False)  # another session already left folder mode
    streamlit_mode.through_app()
    assert reruns == ["rerun"]
    with streamlit_mode.app_run("mix"):
        streamlit_mode.through_app()
    monkeypatch.setattr(PagesManager, "uses_pages_directory", True)
    streamlit_mode.through_app()
    assert reruns == ["rerun"]


def _held() -> bool:
    """Whether the first-runs lock is held: another thread (another session) cannot take it now."""
    import threading

    from pages.parts import streamlit_mode

    got = []

    def attempt():
        got.append(streamlit_mode._FIRST_RUNS.acquire(blocking=False))
        if got[0]:
            streamlit_mode._FIRST_RUNS.release()
    t = threading.Thread(target=attempt)
    t.start()
    t.join()
    return not got[0]


def test_the_first_run_of_a_page_holds_the_lock_and_later_runs_do_not():
    from pages.parts import streamlit_mode

    page = "a-page-no-test-ran"
    with streamlit_mode.app_run(page):
        assert _held()
        with streamlit_mode.imports_in_turn("a-page-file.py"):  # the page's own imports, same thread: no wait
            assert _held()
        assert _held()
    assert not _held()
    with streamlit_mode.app_run(page):
        assert not _held()  # its modules are imported: sessions run it at once
        with streamlit_mode.imports_in_turn("a-page-file.py"):  # and its imports ended whole before
            assert not _held()


def test_a_pages_imports_hold_the_lock_and_let_it_go_when_a_rerun_ends_them():
    from streamlit.runtime.scriptrunner_utils.exceptions import RerunException

    from pages.parts import streamlit_mode

    with pytest.raises(RerunException):
        with streamlit_mode.imports_in_turn("a-rerun-page.py"):  # folder mode: common's import reruns the session
            assert _held()
            raise RerunException(None)
    assert not _held()
    with streamlit_mode.imports_in_turn("a-rerun-page.py"):  # its imports did not end whole: in turn again
        assert _held()


def test_plotly_waits_for_a_module_another_thread_is_still_importing(monkeypatch):
    import sys
    import types
    from importlib.machinery import ModuleSpec

    from _plotly_utils import basevalidators

    from pages.parts import streamlit_mode
    streamlit_mode.plotly_waits_for_imports()
    import numpy
    assert basevalidators.get_module("numpy", should_load=False) is numpy  # a whole module: as before
    half = types.ModuleType("half_made_module_for_test")
    half.__spec__ = ModuleSpec("half_made_module_for_test", None)
    half.__spec__._initializing = True
    monkeypatch.setitem(sys.modules, "half_made_module_for_test", half)
    waited = []
    monkeypatch.setattr(streamlit_mode.importlib, "import_module", lambda name: waited.append(name) or half)
    assert basevalidators.get_module("half_made_module_for_test", should_load=False) is half
    assert waited == ["half_made_module_for_test"]  # it asked the import system, which waits for the import's lock
