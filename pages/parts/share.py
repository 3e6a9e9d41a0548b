"""The sidebar's "Copy link to this view": the link, and what it holds. Uploaded run files cannot travel
in a link, so on Past runs with uploads the box says so and offers what can travel: the runs
themselves, and where the report is."""

from __future__ import annotations

import io
import zipfile

import streamlit as st

from pages.parts.text import no_links
from specmodel.show import links

UPLOADS = "runs_uploads"  # (name, bytes) of the files uploaded in this session: kept across pages
RUN_UPLOADER = "run_files"  # the Past runs uploader's key: its files are in session state before the page runs


def uploaded_runs() -> list[tuple[str, bytes]]:
    """The run files this session uploaded on Past runs (the uploader's, else those kept for the session)."""
    current = st.session_state.get(RUN_UPLOADER) or []
    if current:
        return [(u.name, u.getvalue()) for u in current]
    return list(st.session_state.get(UPLOADS, []))


def runs_zip(files: list[tuple[str, bytes]]) -> bytes:
    """The uploaded files in one zip, each under its own name (a repeated name gets its position)."""
    buf = io.BytesIO()
    seen: set[str] = set()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for i, (name, data) in enumerate(files, start=1):
            arc = name if name not in seen else f"{i}-{name}"
            seen.add(arc)
            z.writestr(arc, data)
    return buf.getvalue()


def link_popover(sb, calibrated: bool, page_path: str, configs: list[str] = ()) -> None:
    """The link box: the page link with its inputs (and calibration), and what it cannot hold: on Past runs
    the uploads, and the config.json the sidebar's target or draft (`configs`) comes from."""
    files = uploaded_runs() if page_path == "past-runs" else []
    with sb.popover("Copy link to this view", width="stretch"):
        holds = "these inputs" + (" and the whole calibration" if calibrated else "")
        if configs:
            st.warning(no_links(f"This link does not hold the {' and the '.join(configs)} model's config.json (a link "
                                "cannot carry a file or a paste): whoever opens it is asked to upload or paste it again. "
                                "A Custom GPU's numbers and name are in the link."))
        if files:
            names = ", ".join(name for name, _ in files)
            st.warning(f"This link holds {no_links(holds)}, **not the uploaded runs** ({no_links(names)}): uploads cannot "
                       "travel in a link, so whoever opens it sees this page without them. To share the review, "
                       "send the **Report (HTML)** from Export at the bottom of the page, or the runs below.")
            st.download_button("The uploaded runs (zip)", runs_zip(files), file_name="runs.zip",
                               mime="application/zip", key="link_runs_zip", on_click="ignore")
        else:
            st.caption(no_links(f"This link opens this page with {holds}. Copy it with the icon at the right of the box."))
        st.code(links.view_link(st.context.url, st.query_params.to_dict()), language=None, wrap_lines=True)
