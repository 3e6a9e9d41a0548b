"""Values that arrive in a page link, checked against the model's own bounds (one table:
`model.parameters.PARAMETERS`, the ranges calibration fits within), so a link can never set what a
calibration could not have produced. An invalid value is dropped with a note, never used."""

from __future__ import annotations

import math
from urllib.parse import urlencode

from specmodel.numbers import read_number
from specmodel.text import clean_name
from specmodel.errors import SpecModelError
from specmodel.model.calibration_file import require_physical
from specmodel.model.parameters import PARAMETERS
from specmodel.model.roofline import Efficiency

# The order of the values in the `cal` link parameter (the last may be missing: an older link).
# Every model parameter, the oldest first: a link written before a field joined still reads (the rest
# at their defaults), and a link carries the whole calibration its numbers were computed with.
CAL_FIELDS = ("eta_bw", "eta_flops", "t_fixed_ms", "t_spec_overhead_ms", "small_model_exponent", "overhead_scale",
              "spec_seq_scale", "kernel_us", "eta_kv", "attn_floor_us", "smooth_p")
# documented (this project's first `cal` link format): links written before small_model_exponent and overhead_scale joined
OLDEST_LINK_FIELDS = 4


def efficiency_from_link(raw: str) -> Efficiency:
    """The calibrated parameters a `cal=0.8,0.6,0.1,0.2[,0.18]` link carries, each within its
    calibration bounds; SpecModelError naming the first value that is not."""
    parts = [p.strip() for p in str(raw).split(",")]
    if not OLDEST_LINK_FIELDS <= len(parts) <= len(CAL_FIELDS):
        raise SpecModelError(f"the link's calibration has {len(parts)} values; expected {OLDEST_LINK_FIELDS} "
                             f"to {len(CAL_FIELDS)} ({', '.join(CAL_FIELDS)})")
    values = {}
    for name, text in zip(CAL_FIELDS, parts):
        lo, hi, unit, words = PARAMETERS[name][:4]
        try:
            value = read_number(text)
        except ValueError:
            raise SpecModelError(f"the link's calibration value for {name} ({words}) is not a number") from None
        if not math.isfinite(value) or not lo <= value <= hi:
            raise SpecModelError(f"the link's calibration value for {name} ({words}) is outside its range "
                                 f"[{lo:g}, {hi:g}]{' ' + unit if unit else ''}")
        values[name] = value
    return require_physical(Efficiency(**values), "the link's calibration")


def efficiency_to_link(eff: Efficiency) -> str:
    return ",".join(f"{getattr(eff, f):.4g}" for f in CAL_FIELDS)


def view_link(page_url: str | None, params: dict) -> str:
    """The full link to a page with its query parameters (`page_url` is the page's address without
    them, as the browser reports it; a placeholder when unknown, e.g. in a test)."""
    base = (page_url or "http://localhost:8501/").split("?", 1)[0]
    query = urlencode({k: v for k, v in params.items() if v not in (None, "")}, doseq=True)
    return f"{base}?{query}" if query else base


def number_problems(params: dict, bounds: dict[str, tuple[float, float, str]]) -> list[str]:
    """What is wrong with the numbers a link carries: `bounds` maps a parameter to (lowest,
    highest, what it is); "whole" in what it is asks for a whole number. A parameter absent from
    the link is fine; each bad one gets a sentence saying the default is used instead.

    >>> bounds = {"users": (1, 100, "users (a whole number)"), "rps": (0.01, 50, "requests per second")}
    >>> [p.split(":")[0] for p in number_problems({"users": "2.5", "rps": "4"}, bounds)]
    ["The link's users=2.5 is not a valid number of users (a whole number) between 1 and 100"]
    """
    problems = []
    for key, (lo, hi, what) in bounds.items():
        raw = params.get(key)
        if raw is None:
            continue
        try:
            value = read_number(raw)
            ok = lo <= value <= hi and ("whole" not in what or value == int(value))
        except (ValueError, OverflowError):
            ok = False
        if not ok:
            problems.append(f"The link's {key}={clean_name(raw, 40)[0]} is not a valid number of {what} between {lo:g} and "
                            f"{hi:,.10g}: "
                            "the default is used instead; set the value above.")
    return problems


# The sidebar's choices a link may carry, and how each is read when it is not already one of the
# sidebar's own values: in the words people write ("h100", "8x H100 (TP=8)", "llama-3.1-70b", "eagle",
# "sglang"), through the same name readers the run files use.
VIEW_KEYS = ("gpu", "tp", "target", "draft", "method", "engine")
TP_CHOICES = (1, 2, 4, 8)  # chosen: the tensor-parallel sizes of one 8-GPU node (memory.TP_CHOICES)


def read_view_params(params: dict) -> tuple[dict, list[str]]:
    """The sidebar's values a link gives, as canonical values: {"gpu": preset name, "tp": int,
    "target"/"draft": preset name, "method": method id, "engine": engine id}, for each key that
    reads; and a line for each that does not (the sidebar then keeps its default), naming the key,
    the value and what to write instead. A GPU written with its parallelism ("8x H100 (TP=8)") also
    gives `tp` unless the link has one.

    >>> read_view_params({"gpu": "8x h100 (TP=8)", "target": "llama-3.1-70b", "method": "EAGLE", "engine": "sglang"})
    ({'gpu': 'H100 SXM', 'tp': 8, 'target': 'Llama 3.1 70B', 'method': 'eagle', 'engine': 'sglang'}, [])
    >>> read_view_params({"gpu": "abacus", "tp": "3"})[1]  # doctest: +NORMALIZE_WHITESPACE
    ["the link's tp '3' is not one of 1, 2, 4, 8 GPUs per replica: the default is used",
     "the link's gpu 'abacus' is not a GPU this tool knows (see `python -m specmodel presets`): the default is used"]
    """
    from specmodel.model import presets
    from specmodel.model.engines import parse_engine

    values: dict = {}
    problems: list[str] = []
    raw = {key: str(params[key]).strip() for key in VIEW_KEYS if str(params.get(key) or "").strip()}
    if "tp" in raw:
        tp = raw["tp"].removesuffix(".0")
        if tp.isdigit() and int(tp) in TP_CHOICES:
            values["tp"] = int(tp)
        else:
            problems.append(f"the link's tp '{raw['tp']}' is not one of {', '.join(map(str, TP_CHOICES))} GPUs per "
                            "replica: the default is used")
    readers = {"gpu": presets.parse_hardware, "target": presets.parse_model, "draft": presets.parse_model,
               "method": presets.parse_method}
    for key in ("gpu", "target", "draft", "method", "engine"):
        if key not in raw:
            continue
        if key == "engine":
            found = parse_engine(raw[key])
        else:
            try:
                match = readers[key](raw[key])
            except SpecModelError:
                match = None
            found = None if match is None else {"gpu": lambda m: m.gpu and m.gpu.name, "method": lambda m: m.method}.get(
                key, lambda m: m.model and m.model.name)(match)
        if not found:
            what = {"gpu": "a GPU", "target": "a model", "draft": "a model", "method": "a speculation method",
                    "engine": "a serving engine"}[key]
            problems.append(f"the link's {key} '{raw[key]}' is not {what} this tool knows (see `python -m specmodel "
                            "presets`): the default is used")
            continue
        values[key] = found
        if key == "gpu" and match.tp and "tp" not in raw and match.tp in TP_CHOICES:
            values["tp"] = match.tp
    return values, problems
