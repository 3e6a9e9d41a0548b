"""Values a page's widgets would not accept, from a link (the address) or held in this session (an
earlier page's hand-over, an older link read before): each is dropped before its widget is drawn, so the
widget starts from its default, and the page says so. Streamlit would otherwise raise for a held value out
of a slider's range ("This app has encountered an error") and silently drop an unaccepted URL value."""

from __future__ import annotations

import streamlit as st

from specmodel.show import links


def unaccepted_values(numbers: dict[str, tuple[float, float, str]], choices: dict[str, tuple] | None = None
                      ) -> list[str]:
    """Call before the widgets keyed as in `numbers` ((lowest, highest, what it is)) and `choices` (the
    values offered, as the URL writes them): the sentences to show, one per value dropped."""
    problems = links.unaccepted(st.query_params, numbers, choices)
    held = {key: st.session_state[key] for key in (*numbers, *(choices or {})) if key in st.session_state}
    for key, problem in links.unaccepted(held, numbers, choices, whose="This session's").items():
        whole = links.whole_part(held[key], *numbers[key]) if key in numbers else None
        if whole is None:
            del st.session_state[key]
        else:
            st.session_state[key] = whole  # as the widget keeps a link's 2.5: 2
        problems.setdefault(key, problem)
    return list(problems.values())
