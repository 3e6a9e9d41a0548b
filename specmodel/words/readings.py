"""How a run's acceptance was read where its file does not settle it, in words: a column whose name does not
say which acceptance it holds (`accept_rate`, `acceptance`, `acc`: read one stated way), and an acceptance
assumed where the file has none (how many rows, from where). Never a silent reading: the rows' remarks, the
problems list and the review's headline say these."""

from __future__ import annotations

from specmodel.model.spec_defaults import ASSUMED_ALPHA_SPREAD
from specmodel.text import clean_name

# What an acceptance column may hold, as the user says it (--acceptance-means, the Past runs page's choice).
MEANING_WORDS = {"alpha": "the per-token acceptance α",
                 "rate": "the draft acceptance rate (accepted ÷ drafted tokens, vLLM's \"draft acceptance rate\")",
                 "length": "the acceptance length (tokens per step E, the bonus token included)"}
MEANINGS = tuple(MEANING_WORDS)
SHORT_WORDS = {"alpha": "α (per-token acceptance)", "rate": "the draft acceptance rate (accepted ÷ drafted)",
               "length": "the acceptance length (tokens per step)"}
FIGURES_NAMED = 2  # chosen: published figures a headline names one by one before "…"


def _column(header: str) -> str:
    return clean_name(header, 40)[0]


def meaning_note(header: str, meaning: str, said: bool, said_as: str) -> str:
    """The file's note on an acceptance column whose name does not settle what it holds.

    >>> note = meaning_note("accept_rate", "rate", False, "--acceptance-means alpha|rate|length")
    >>> note.startswith("read as the draft acceptance rate"), "say so (--acceptance-means alpha|rate|length)" in note
    (True, True)
    """
    if said:
        return f"read as {MEANING_WORDS[meaning]}, as said ({said_as})"
    others = " or ".join(MEANING_WORDS[m].split(" (")[0] for m in MEANINGS if m != meaning)
    return (f"read as {MEANING_WORDS[meaning]}; the name '{_column(header)}' does not say which acceptance the column "
            f"holds: if it is {others}, say so ({said_as}), as the prediction depends on it")


def meaning_remark(header: str, meaning: str, said: bool, said_as: str) -> str:
    """A row's remark on the same reading."""
    if said:
        return f"'{_column(header)}' read as {SHORT_WORDS[meaning]}, as said ({said_as})"
    return f"'{_column(header)}' read as {SHORT_WORDS[meaning]}: its name does not say which acceptance it is ({said_as})"


def out_of_range_hint(meaning: str, said_as: str) -> str:
    """Added to a value the reading refuses (an acceptance length of 2.6 read as a rate)."""
    return (f" (the column was read as {SHORT_WORDS[meaning]} because its name does not say; if it holds another "
            f"acceptance, say which: {said_as})")


def readings_sentences(readings: list[dict], said_as: str | None = None) -> list[str]:
    """One sentence per ambiguous column read (runs.readings.acceptance_readings' entries).

    >>> readings_sentences([{"file": "a.csv", "column": "accept_rate", "read_as": "rate", "said": False, "rows": 2}])[0][:68]
    "'accept_rate' (2 rows of a.csv) is read as the draft acceptance rate"
    """
    out = []
    for r in readings:
        n = int(r["rows"])
        where = f"'{_column(r['column'])}' ({n} row{'s' if n != 1 else ''} of {clean_name(r['file'], 60)[0]})"
        if r["said"]:
            out.append(f"{where} is read as {SHORT_WORDS[r['read_as']]}, as said.")
        else:
            how = f"; say which if it is another ({said_as})" if said_as else ""
            out.append(f"{where} is read as {SHORT_WORDS[r['read_as']]}: its name does not say which acceptance it "
                       f"is{how}.")
    return out


def assumed_sentence(assumed: dict) -> str | None:
    """How many rows use an acceptance the file does not give, and from where (runs.readings.assumed_counts).

    >>> assumed_sentence({"rows": 3, "of": 3, "file_mean": 0, "published_figure": 3, "figures": {"T5-small": 3}})
    "3 of 3 rows use an assumed acceptance, none being in the file: 3 a published figure ('T5-small'); their bands span α ± 0.15."
    """
    n = int(assumed.get("rows") or 0)
    if not n:
        return None
    parts = []
    figures = list(assumed.get("figures") or {})
    if assumed.get("published_figure"):
        named = "; ".join(f"'{clean_name(f, 80)[0]}'" for f in figures[:FIGURES_NAMED])
        parts.append(f"{assumed['published_figure']} a published figure ({named}{'; …' if len(figures) > FIGURES_NAMED else ''})")
    if assumed.get("file_mean"):
        parts.append(f"{assumed['file_mean']} the mean α of the file's other rows")
    of = int(assumed.get("of") or n)
    return (f"{n} of {of} row{'s' if of != 1 else ''} use{'s' if n == 1 else ''} an assumed acceptance, none being in "
            f"the file: {', '.join(parts)}; their bands span α ± {ASSUMED_ALPHA_SPREAD:g}.")
