"""What a review says of acceptance its files do not settle, as counts: the columns read one stated way because
their name does not say which acceptance they hold (runs.meanings.ACCEPTANCE_AMBIGUOUS), and the rows predicted
on an acceptance the file does not give (runs.load fills it in). review() adds them to its summary, which
`runs --json` prints and the headline words (runs.headlines, words.readings)."""

from __future__ import annotations

import pandas as pd

# acceptance_assumed_source: where an acceptance the row does not give came from (the JSON key's values)
FILE_MEAN, PUBLISHED_FIGURE = "file_mean", "published_figure"
PUBLISHED_FROM = "filled from a published figure: "  # acceptance_from of such a row, then the figure's label


def acceptance_readings(rows: pd.DataFrame) -> list[dict]:
    """One entry per file and column read one stated way: {"file", "column", "read_as", "said", "rows"}."""
    if rows.empty or "acceptance_read_as" not in rows:
        return []
    read = rows[rows["acceptance_read_as"].notna()]
    if read.empty:
        return []
    said = read["acceptance_meaning_said"].fillna(False).astype(bool)
    groups = read.assign(said=said).groupby(["file", "acceptance_from", "acceptance_read_as", "said"], sort=False)
    return [{"file": str(file), "column": str(column), "read_as": str(read_as), "said": bool(was_said),
             "rows": int(len(group))} for (file, column, read_as, was_said), group in groups]


def assumed_counts(rows: pd.DataFrame) -> dict:
    """How many rows use an acceptance the file does not give, of all rows, and from where:
    {"rows", "of", "file_mean", "published_figure", "figures": {a figure's label: rows}}."""
    out = {"rows": 0, "of": int(len(rows)), FILE_MEAN: 0, PUBLISHED_FIGURE: 0, "figures": {}}
    if rows.empty or "acceptance_assumed" not in rows:
        return out
    assumed = rows[rows["acceptance_assumed"].eq(True)]
    source = assumed["acceptance_assumed_source"]
    out.update(rows=int(len(assumed)), **{FILE_MEAN: int((source == FILE_MEAN).sum()),
                                          PUBLISHED_FIGURE: int((source == PUBLISHED_FIGURE).sum())})
    labels = assumed.loc[source == PUBLISHED_FIGURE, "acceptance_from"].astype(str).str.removeprefix(PUBLISHED_FROM)
    out["figures"] = {str(label): int(n) for label, n in labels.value_counts(sort=True).items()}
    return out


def reading_summary(rows: pd.DataFrame) -> dict:
    """The summary's `acceptance_readings` and `acceptance_assumed`."""
    return {"acceptance_readings": acceptance_readings(rows), "acceptance_assumed": assumed_counts(rows)}
