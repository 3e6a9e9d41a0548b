"""A run's GPU by its numbers: the CSV columns `gpu_bandwidth_gbs`, `gpu_tflops` and `gpu_memory_gb`
(model.custom.GPU_SPEC_COLUMNS), named by the row's `gpu` column, else "custom GPU". They are read by
the one GPU-spec path (`model.custom.gpu_from_spec`, as `--gpu-spec` and the sidebar's Custom GPU), so
a row with a preset's numbers is predicted as that preset is; a number missing, not a number or out of
its range is that path's message, naming the row's column and the accepted range."""

from __future__ import annotations

from specmodel.bounds import bounded_cache
from specmodel.errors import SpecModelError
from specmodel.model.custom import GPU_SPEC_COLUMNS, gpu_from_spec
from specmodel.model.presets import GPU
from specmodel.runs.records import RunRecord
from specmodel.runs.unpredicted import GPU_NAME_REASONS
from specmodel.text import clean_name

ROW_GPU_NAME = "custom GPU"  # a row that gives the numbers and no gpu name
SAID_AS = "GPU by its numbers"  # how the spec's messages name a row's three columns
REASON = "gpu_spec"  # the refusal (records.REFUSAL_REASONS) of a row whose numbers do not make a GPU


def row_gpu(rec: RunRecord) -> tuple[GPU | None, tuple[str, str] | None]:
    """(the GPU the row's three number columns give, None) for a row that gives any of them; (None, (the
    column at fault, the message)) where they do not make one; (None, None) for a row that gives none."""
    given = {key: value if isinstance(value, (int, float)) else str(value)  # a JSON list is a text, not a number
             for key, value in ((key, rec.values.get(column)) for key, column in GPU_SPEC_COLUMNS.items())
             if value not in (None, "")}
    if not given:
        return None, None
    name = clean_name(str(rec.values.get("gpu") or ""), 60)[0] or ROW_GPU_NAME
    headers = tuple((key, rec.headers.get(column, column)) for key, column in GPU_SPEC_COLUMNS.items())
    try:
        return _gpu(tuple(sorted(given.items())), name, headers), None
    except SpecModelError as exc:
        column = exc.key if exc.key in dict(headers).values() else None
        shown = ", ".join(header for _, header in headers)
        return None, (column, f"{exc}; give {shown}, each a number in its range, to predict it on that GPU")


@bounded_cache(4096)
def _gpu(given: tuple, name: str, headers: tuple) -> GPU:
    """The GPU of one set of numbers (a file repeats them on every row: built once)."""
    return gpu_from_spec({**dict(given), "name": name}, SAID_AS, dict(headers))


def with_spec_fault(refusals: list, fault: tuple[str, str] | None) -> list:
    """A row's refusals with its GPU numbers' fault (row_gpu) in place of any refusal of its GPU's name: the
    numbers, not the name, were to say which GPU ran."""
    if fault is None:
        return refusals
    return [r for r in refusals if r[0] not in GPU_NAME_REASONS] + [(REASON, fault[1])]
