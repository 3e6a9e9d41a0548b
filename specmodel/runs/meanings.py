"""CSV acceptance columns whose name does not say which acceptance they hold (`accept_rate`, `acceptance`,
`acc`): the per-token α, vLLM's accepted ÷ drafted tokens or the acceptance length. Such a column is read as
the user says (RunDefaults.acceptance_means: --acceptance-means, the Past runs page's choice), else as
ACCEPTANCE_MEANS_DEFAULT; either way the file's problems, each row's remarks and the headline say how."""

from __future__ import annotations

from specmodel.runs.records import Problem
from specmodel.words.readings import meaning_note, meaning_remark, out_of_range_hint

ACCEPTANCE_AMBIGUOUS = ("accept_rate", "acceptance_rate", "spec_accept_rate", "acceptance", "acc")  # normalised headers
ACCEPTANCE_MEANS = {"alpha": "alpha", "rate": "draft_acceptance_rate", "length": "tokens_per_step"}  # -> column
ACCEPTANCE_MEANS_DEFAULT = "rate"  # vLLM's "draft acceptance rate": what an engine writes under these names
READ_AS = "_acceptance_read_as"  # a record's value: (header, meaning, said, said_as) of such a column


def ambiguous_column(key: str, means: str | None) -> str | None:
    """The canonical column a normalised header whose name does not say is read as; None for any other header.

    >>> ambiguous_column("accept_rate", None), ambiguous_column("acc", "length"), ambiguous_column("alpha", None)
    ('draft_acceptance_rate', 'tokens_per_step', None)
    """
    return ACCEPTANCE_MEANS[means or ACCEPTANCE_MEANS_DEFAULT] if key in ACCEPTANCE_AMBIGUOUS else None


def read_as_of(name: str, columns: dict[str, str], normalised, means: str | None, said_as: str):
    """(read_as, problem) for a file whose canonical columns come from `columns` ({canonical: header}):
    read_as = (canonical column, header, meaning, said, said_as) of its column whose name does not say, and the
    note naming its reading (a warning where the user did not say), or (None, None)."""
    for canonical, header in columns.items():
        if normalised(header) in ACCEPTANCE_AMBIGUOUS:
            meaning = means or ACCEPTANCE_MEANS_DEFAULT
            read_as = (canonical, header, meaning, means is not None, said_as)
            return read_as, Problem(name, None, header, meaning_note(*read_as[1:]), "info" if means else "warning")
    return None, None


def row_reading(values: dict, acc_col: str | None) -> tuple[str | None, str | None, str | None]:
    """(remark, column, hint) of a row read through such a column: the remark where its acceptance came from it,
    and the hint a refusal of the column's value gets where the user did not say what it holds."""
    read_as = values.get(READ_AS)
    if not read_as:
        return None, None, None
    header, meaning, said, said_as = read_as
    remark = meaning_remark(header, meaning, said, said_as) if acc_col == header else None
    return remark, header, None if said else out_of_range_hint(meaning, said_as)
