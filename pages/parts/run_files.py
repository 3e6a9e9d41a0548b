"""The Past runs page's inputs: uploaded run files kept for the session (they are still there after a
visit to another page, until removed or cleared), a sample, and baselines paired by hand."""

from __future__ import annotations

import streamlit as st

from pages.parts.display import show_error
from pages.parts.share import UPLOADS
from pages.parts.text import no_links, plain
from specmodel import SpecModelError
from specmodel.runs import sample_files
from specmodel.show import links



def kept_uploads(uploads, returning: bool) -> list[tuple[str, bytes]]:
    """The session's run files: the uploader's when it holds some, else those uploaded earlier in the
    session (with a note and a Clear button), unless the user emptied the uploader on this page."""
    if uploads:
        st.session_state[UPLOADS] = distinct_names([(u.name, u.getvalue()) for u in uploads])
    elif not returning and st.session_state.get("runs_uploader_had_files"):
        st.session_state.pop(UPLOADS, None)  # the user removed them from the uploader
    st.session_state["runs_uploader_had_files"] = bool(uploads)
    files = list(st.session_state.get(UPLOADS, []))
    kept_box = st.container()  # one block whether or not files are kept, so what follows keeps its place
    if files and not uploads:
        kept_note, kept_clear = kept_box.columns([5, 1], vertical_alignment="center")
        kept_note.caption("Using the files uploaded earlier in this session: "
                          + ", ".join(plain(name) for name, _ in files))
        if kept_clear.button("Clear", key="runs_clear_uploads", help="Forget the files uploaded earlier"):
            st.session_state.pop(UPLOADS, None)
            st.rerun()
    return files


# What an acceptance column whose name does not say (accept_rate, acceptance, acc) holds, as the choice shows it.
MEANING_CHOICES = {"alpha": "α, the per-token acceptance", "rate": "accepted ÷ drafted tokens (vLLM's rate)",
                   "length": "acceptance length (tokens per step)"}
MEANING_SAID_AS = "the 'Acceptance column means' choice above"


def acceptance_meaning() -> dict:
    """The Past runs page's choice of what a CSV acceptance column whose name does not say holds, as
    RunDefaults' fields; not chosen, such a column is read as accepted ÷ drafted tokens and the page says so."""
    # a link's value the choice does not offer (it writes the label): the choice's default, and said
    problems = links.unaccepted(st.query_params, {}, {"runs_acceptance_means": tuple(MEANING_CHOICES.values())})
    means = st.selectbox("Acceptance column means", list(MEANING_CHOICES), index=None, key="runs_acceptance_means",
                         format_func=MEANING_CHOICES.get, bind="query-params",
                         placeholder="not said: read as accepted ÷ drafted",
                         help="For a CSV column named accept_rate, acceptance_rate, acceptance or acc, whose name does "
                              "not say which acceptance it holds: the per-token acceptance α, vLLM's draft acceptance "
                              "rate (accepted ÷ drafted tokens) or the acceptance length (tokens per step). The "
                              "prediction depends on it.")
    for problem in problems.values():
        st.warning(no_links(problem))
    return {"acceptance_means": means, "acceptance_said_as": MEANING_SAID_AS}


def no_runs_message(calibrated: bool) -> str:
    """What the page says with no files: with a calibration (a shared link), that its runs are not here."""
    if calibrated:
        return ("This view's calibration came with the link (the sidebar lists it), but the runs it was fitted on "
                "did not: a link cannot carry uploaded files. Ask whoever sent it for the report (HTML) or the "
                "runs, or upload your own run files or pick a sample above.")
    return "Upload one or more run files, or pick a sample above."


def with_sample(files: list, sample: str | None) -> list:
    """The files plus the chosen sample's; a sample that cannot be read is said in its own block."""
    sample_box = st.container()  # an empty block unless the sample fails: the page keeps one shape
    try:
        return files + (sample_files(sample) if sample else [])
    except SpecModelError as exc:
        with sample_box:
            show_error(exc)
        return files


def distinct_names(files: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    """Files with a name each: a name uploaded twice (results.json from two folders) gets " (2)", " (3)"…,
    so their rows, problems and pairing never read as one file's."""
    seen: dict[str, int] = {}
    out = []
    for name, data in files:
        seen[name] = seen.get(name, 0) + 1
        out.append((name if seen[name] == 1 else f"{name} ({seen[name]})", data))
    return out


def paired_by_hand(files: list) -> tuple[dict[str, str], object]:
    """({speculative file: its baseline file} as chosen by hand, read before the files are, and the place on the
    page where the choices go once they are read: pairing_choices)."""
    names = [name for name, _ in files]
    pairs = {}
    for name in names:
        choice = st.session_state.get(f"pair_{name}")
        if choice not in (None, "automatic") and choice in names and choice != name:
            pairs[name] = choice
    return pairs, st.container()  # one block whether or not there is anything to pair: what follows keeps its place


def pairing_choices(where, files: list, loaded_files) -> None:
    """A baseline selector for each file that loaded runs of its own (`loaded_files`: the files of the loaded
    rows), offering only files that did not (the baselines, whose runs are folded into their partners' rows):
    never a file as its own baseline, a baseline a baseline of its own, or a file whose baseline is this one."""
    names = [name for name, _ in files]
    loaded = set(loaded_files)
    speculative = [n for n in names if n in loaded]
    baselines = [n for n in names if n not in loaded]
    if not speculative or not baselines:
        return
    with where.expander("Pair a speculative run with its baseline by hand"):
        for name in speculative:
            options = ["automatic", *[b for b in baselines if st.session_state.get(f"pair_{b}") != name]]
            if st.session_state.get(f"pair_{name}") not in options:
                st.session_state.pop(f"pair_{name}", None)  # a choice no longer offered: automatic again
            st.selectbox(f"Baseline for {plain(name)}", options, key=f"pair_{name}", persist_state="session")
        st.caption(no_links("Baselines (no run of their own loaded): " + ", ".join(baselines)))
