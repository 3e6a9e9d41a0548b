"""How much a message matters: the severity of a note, the tone of a verdict.

A note is a sentence shown beside a result ("the server restarted", "decode only"). Its severity
says whether it asks the reader to act or to distrust the numbers ("warning") or only explains
("info"). A Note is a `str`, so every list of notes stays a list of strings in JSON and in print;
the severity travels with it, set where the note is written, for a page to choose how to show it.

>>> n = warning("the server restarted")
>>> n, n.severity
('the server restarted', 'warning')
>>> import json; json.dumps({"notes": [n, info("decode only")]})
'{"notes": ["the server restarted", "decode only"]}'
>>> severity_of("a string written before notes had a severity")
'info'
>>> warnings_in([n, info("decode only")])
['the server restarted']

A verdict's tone says how its headline reads: "good" (do it), "caution" (within noise, or it
costs something), "bad" (it loses, or nothing works), "neutral" (nothing to judge).
"""

from __future__ import annotations

from collections.abc import Iterable

SEVERITIES = ("info", "warning")
TONES = ("good", "caution", "bad", "neutral")


class Note(str):
    """A note's text with its severity ("info" or "warning")."""

    severity: str

    def __new__(cls, text: str, severity: str = "info") -> Note:
        if severity not in SEVERITIES:
            raise ValueError(f"a note's severity is one of {', '.join(SEVERITIES)}, not {severity!r}")
        note = super().__new__(cls, text)
        note.severity = severity
        return note

    def __reduce__(self):  # copies and pickles (st.cache_data, dataclasses.asdict) keep the severity
        return Note, (str(self), self.severity)


def info(text: str) -> Note:
    """A note that explains: how a number was found, what the model leaves out."""
    return Note(text, "info")


def warning(text: str) -> Note:
    """A note that asks for attention: the numbers are off, or something needs doing."""
    return Note(text, "warning")


def severity_of(note: str) -> str:
    """The note's severity; a plain string is "info"."""
    return getattr(note, "severity", "info")


def cli_label(note: str) -> str:
    """How the command line prefixes a note: "warning" for a warning, "note" otherwise."""
    return "warning" if severity_of(note) == "warning" else "note"


def warnings_in(notes: Iterable[str]) -> list[str]:
    """The texts of the notes that are warnings, in order (for a JSON "warnings" key)."""
    return [str(n) for n in notes if severity_of(n) == "warning"]
