"""The app's workarounds for Streamlit behaviours, isolated here and pinned by
tests/test_streamlit_mode.py, which fails when a Streamlit upgrade changes what they rely on.

1. Folder mode (streamlit/streamlit#9624). Streamlit decides once per process, when the first
   session starts, whether the app is an old-style multipage app: it is whenever a `pages/` folder
   sits beside the main script, which this project's fixed layout requires. Until some session has
   run app.py's st.navigation, a link such as /live is served from that folder: pages/live.py runs
   alone, without the shared sidebar. Streamlit 1.67 has no setting for this (st.navigation turns
   the mode off only once it has run; `client.showSidebarNavigation` only hides the list), so
   - every page file is named as its URL path (pages/live.py is /live, pages/past-runs.py is
     /past-runs), so the folder-mode lookup finds the page the link names, not "Page not found";
   - that page imports pages/parts/common.py, which calls leave_pages_directory_mode(): the process
     switches to st.navigation mode and the run starts again through app.py, on the same page;
   - that import happens once a process, so a second session that started in folder mode at the same moment
     (two different links opened on a fresh server) would draw its first page from the folder (its list, no
     sidebar): every page calls through_app() after its imports, and a run of the page file alone in a process
     that has already left folder mode starts again through app.py. (Where folder mode still holds it does
     nothing: Streamlit's AppTest puts folder mode back before every run, and its page switching relies on it.)
2. Bound widgets given a value through session state: write_bound_url below.
3. The first element of a process walks the whole call stack (skip_direct_run_check below).
4. Sessions share one process and import in their own threads. Plotly asks whether pandas is loaded by
   looking it up in sys.modules (_plotly_utils/basevalidators.py, `get_module("pandas", should_load=False)`)
   and then uses it: while another session is still importing pandas (a fresh server, one person on Past runs,
   another on What-if), that is a half-made module, and the figure failed with "partially initialized module
   'pandas' has no attribute 'Series'" (tests/test_browser_coldstart.py opens five pages at once).
   plotly_waits_for_imports below makes that lookup wait for an import in progress.
5. The same sessions importing one package's modules in different orders (Traffic mix's tables import
   specmodel.runs.review first, Past runs the package first) meet Python's import deadlock avoidance, which hands
   one of them a half-made module ("cannot import name 'PROGRESS_EVERY' from partially initialized module").
   So a page's first run in a process, which imports its modules, holds one lock (app_run): the first runs of
   pages on a fresh server take their turns (a second or two each); every later run goes at once. A run of a page
   file alone in folder mode (1: links opened on a fresh server before any session ran app.py) does not come
   through app_run, and such runs of several pages at once still met a half-made pandas or
   specmodel.show.figures.whatif (tests/test_import_race.py: 6 of 6 fresh interpreters importing the six pages at
   once): so app.py's and every page file's imports sit inside imports_in_turn(), which takes the same lock for
   their length and lets it go however they end (st.rerun() raised inside an import included). Once a script's
   imports have ended whole, its later runs do not take the lock: reruns never wait for another page's first run.
"""

from __future__ import annotations

import importlib
import threading
from contextlib import contextmanager

import streamlit as st
from streamlit.runtime.pages_manager import PagesManager


_RUN = threading.local()  # per script thread: whether this run came through app.py (app_run)
_FIRST_RUNS = threading.RLock()  # 5: held by a page's first run in this process and by every run's imports (the
# page's imports_in_turn inside app_run's first run is the same thread taking it again)
_IMPORTED: set[str] = set()  # the scripts (app.py, page files) whose imports have ended whole in this process
_PAGES_RUN: set[str] = set()  # the pages that have run once in this process (their modules are imported)


@contextmanager
def app_run(page: str = ""):
    """app.py runs its page inside this: through_app() then knows the run came through app.py; a page's first
    run in the process holds _FIRST_RUNS (5)."""
    _RUN.in_app = True
    first = page not in _PAGES_RUN
    if first:
        _FIRST_RUNS.acquire()
    try:
        yield
    finally:
        _RUN.in_app = False
        if first:
            _PAGES_RUN.add(page)
            _FIRST_RUNS.release()


@contextmanager
def imports_in_turn(script: str):
    """5. app.py and every page file import their modules inside this (`script`: its __file__): one session imports
    at a time, in folder mode too, and the lock goes however the imports end. Once a script's imports have ended
    whole in this process its modules are all there: its later runs (every rerun of every session) go at once,
    not waiting for another page's first run."""
    if script in _IMPORTED:
        yield
        return
    with _FIRST_RUNS:
        yield
    _IMPORTED.add(script)  # not reached where the imports ended by an exception (a rerun inside an import)


def through_app() -> None:
    """1. Call in every page file after its imports: a run of the page file alone (folder mode) in a process that
    another session has already switched to st.navigation mode starts again through app.py."""
    if PagesManager.uses_pages_directory is False and not getattr(_RUN, "in_app", False):
        st.rerun()


def leave_pages_directory_mode() -> None:
    """If this process still serves pages from the `pages/` folder, switch it to st.navigation mode
    (app.py's page list) and rerun this session through app.py."""
    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()


def skip_direct_run_check() -> None:
    """3. Call before the first element of the process is drawn. Streamlit's first element in a process
    asks whether it runs in a plain `python` REPL instead of `streamlit run`, to print a warning
    (streamlit/delta_generator.py `_maybe_print_use_warning`, `env_util.is_repl`): `inspect.stack()`
    with source context, which maps every frame to its module by resolving the path of every module
    loaded (~900 with numpy and specmodel: ~90 ms of the first page's CPU). app.py runs only under
    `streamlit run` (or AppTest), where that warning never applies, so it is marked as given."""
    from streamlit import delta_generator

    delta_generator._use_warning_has_been_displayed = True


def write_bound_url(key: str, text: str) -> None:
    """2. Call after the widget bound to `key` (bind="query-params") ran: put `text` in the browser's
    address bar as that widget's URL value. A value given to a bound widget through session state (a
    link's "h100" read as "H100 SXM", a URL with credentials cleaned) reaches the widget, but Streamlit
    leaves the address bar with the link's original value or drops it as invalid; its own URL
    correction for bound widgets (the call below) writes it as the widget would have."""
    from streamlit.runtime.state.session_state_proxy import get_session_state

    with get_session_state().query_params() as params:
        params.set_corrected_value(key, text, "string_value")


def plotly_waits_for_imports() -> None:
    """4. Call once before any figure is built: plotly's lookup of an optional module (pandas, numpy) that
    another thread is still importing waits for that import to finish instead of using the half-made module."""
    from _plotly_utils import basevalidators, optional_imports

    if getattr(basevalidators.get_module, "waits_for_imports", False):
        return
    lookup = optional_imports.get_module

    def get_module(name, should_load=True):
        module = lookup(name, should_load)
        if module is not None and getattr(getattr(module, "__spec__", None), "_initializing", False):
            return importlib.import_module(name)  # takes the module's import lock: returns once it is whole
        return module

    get_module.waits_for_imports = True
    basevalidators.get_module = get_module
