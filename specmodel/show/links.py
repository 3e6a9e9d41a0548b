"""Values that arrive in a page link, checked against the model's own bounds (one table:
`model.parameters.PARAMETERS`, the ranges calibration fits within), so a link can never set what a
calibration could not have produced. An invalid value is dropped with a note, never used."""

from __future__ import annotations

import math
from urllib.parse import urlencode

from specmodel.numbers import number_or_none, quoted, read_number
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


def number_accepted(raw, lo: float, hi: float, what: str) -> bool:
    """Whether `raw` (a link's text or a value held for a widget) is a number from lo to hi; "whole" in
    `what` asks for a whole number."""
    try:
        value = read_number(raw)  # the one number parser: no `1_0`, no other scripts' digits, no 400 digits
        return lo <= value <= hi and ("whole" not in what or value == int(value))
    except (TypeError, ValueError, OverflowError):
        return False


def whole_part(raw, lo: float, hi: float, what: str) -> int | None:
    """The whole number a widget keeps of a fractional `raw` within its range, where `what` asks for a whole
    number (Streamlit's sliders and number boxes cut 2.5 to 2); None otherwise.

    >>> whole_part("2.5", 0, 8, "k (a whole number)"), whole_part("9.5", 0, 8, "k (a whole number)")
    (2, None)
    """
    try:
        value = read_number(raw)
    except (TypeError, ValueError, OverflowError):
        return None
    if "whole" not in what or not lo <= value <= hi or value == int(value):
        return None
    return int(value) if lo <= int(value) <= hi else None


def unaccepted(params: dict, numbers: dict[str, tuple[float, float, str]], choices: dict[str, tuple] | None = None,
               whose: str = "The link's") -> dict[str, str]:
    """{parameter: what is wrong} for each value in `params` its widget would not accept: `numbers` maps a
    parameter to (lowest, highest, what it is), `choices` to the values its widget offers (as the URL writes
    them). A parameter absent from `params` is fine; each bad one gets a sentence saying the default is used.

    >>> unaccepted({"k": "12", "timings": "from measurements"}, {"k": (0, 8, "k (a whole number)")},
    ...            {"timings": ("from hardware", "measured")}, whose="An earlier link's")  # doctest: +NORMALIZE_WHITESPACE
    {'k': "An earlier link's k=12 is not a valid number of k (a whole number) between 0 and 8: the default is
     used instead; set the value above.",
     'timings': "An earlier link's timings=from measurements is not one of: from hardware, measured; the default is
     used instead."}
    """
    problems = {}
    for key, (lo, hi, what) in numbers.items():
        raw = params.get(key)
        if raw is None or number_accepted(raw, lo, hi, what):
            continue
        whole = whole_part(raw, lo, hi, what)
        shown = clean_name(raw, 40)[0]
        problems[key] = (f"{whose} {key}={shown} is not a whole number of {what}: {whole} is used; set the value above."
                         if whole is not None else
                         f"{whose} {key}={shown} is not a valid number of {what} between {lo:g} and {hi:,.10g}: "
                         "the default is used instead; set the value above.")
    for key, offered in (choices or {}).items():
        raw = params.get(key)
        if raw is not None and str(raw) not in {str(o) for o in offered}:
            problems[key] = (f"{whose} {key}={clean_name(raw, 40)[0]} is not one of: {', '.join(map(str, offered))}; "
                             "the default is used instead.")
    return problems


def link_numbers(params: dict, bounds: dict[str, tuple[float, float, str]]) -> dict[str, int | float]:
    """The numbers a link carries that `bounds` accepts (whole numbers as int): the values a page's
    widgets take from it; the others are `unaccepted`'s to say.

    >>> link_numbers({"mix_k": "3", "mix_conc": "5000", "other": "1"}, MIX_NUMBERS)
    {'mix_k': 3}
    """
    return {key: int(read_number(params[key])) if "whole" in what else read_number(params[key])
            for key, (lo, hi, what) in bounds.items() if key in params and number_accepted(params[key], lo, hi, what)}


# What-if's link to Traffic mix carries What-if's k and batch under Traffic mix's own keys (its widgets start
# from them) and What-if's α under this one, from which Traffic mix fills its workload table once.
FROM_WHATIF = "whatif_alpha"

# chosen (the widgets' own ranges): URL parameter -> (lowest, highest, what it is) of the numbers What-if and
# Traffic mix read from a link: the ranges of their widgets (a value outside one is dropped by the widget; the
# page says so).
WHATIF_NUMBERS = {"alpha": (0, 1, "acceptance α"), "k": (0, 8, "draft tokens per step k (a whole number)"),
                  "conc": (1, 4096, "concurrent sequences (a whole number)"),
                  "t_target": (1, 200, "ms for the target's step at batch 1"),
                  "t_draft": (0, 50, "ms per draft token at batch 1")}
# chosen: the same for Traffic mix's widgets
MIX_NUMBERS = {"mix_conc": (1, 4096, "concurrent sequences (a whole number)"),
               "mix_gpus": (1, 32, "GPUs in total (a whole number)"),
               "mix_k": (0, 8, "draft tokens per step k (a whole number)")}


def whatif_to_mix(alpha: float, k: int, concurrency: int) -> dict:
    """The parameters of What-if's link to Traffic mix: What-if's k and batch under Traffic mix's keys and
    its α. Only these: following a page link, the browser keeps the sidebar's parameters and the
    calibration as they stand, and drops those of the page it leaves, as the sidebar's navigation does.

    >>> whatif_to_mix(0.55, 3, 32)
    {'mix_k': '3', 'mix_conc': '32', 'whatif_alpha': '0.55'}
    """
    return {"mix_k": str(int(k)), "mix_conc": str(int(concurrency)), FROM_WHATIF: f"{float(alpha):g}"}


def alpha_from_link(raw) -> tuple[float | None, str | None]:
    """What-if's α as a link carries it to Traffic mix: (α, None), or (None, what is wrong) for a value
    that is not one (an older or hand-edited link).

    >>> alpha_from_link("0.55")
    (0.55, None)
    >>> alpha_from_link("7")[1]
    "The link's whatif_alpha=7 is not an acceptance α between 0 and 1: the workload table is not filled from it."
    """
    alpha = number_or_none(raw)  # the one number parser: float() read `0_5` as 5 and `٠.٥` as 0.5
    if alpha is None or not 0 <= alpha <= 1:
        return None, (f"The link's {FROM_WHATIF}={clean_name(raw, 40)[0]} is not an acceptance α between 0 and 1: "
                      "the workload table is not filled from it.")
    return alpha, None


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


def gpu_number_problems(params: dict) -> list[str]:
    """A line for each of the Custom GPU's numbers (model.custom.GPU_SPEC_COLUMNS) a link gives that is not a
    finite number: its box drops it and starts empty (the GPU spec then says which number is missing). A
    number out of its range reaches the box, and the spec's own message names its range.

    >>> gpu_number_problems({"gpu_tflops": "fast", "gpu_memory_gb": "96"})
    ["the link's gpu_tflops 'fast' is not a number: its Custom GPU box starts empty"]
    """
    from specmodel.model.custom import GPU_SPEC_COLUMNS

    problems = []
    for key in GPU_SPEC_COLUMNS.values():
        raw = str(params.get(key) or "").strip()
        if not raw:
            continue
        if number_or_none(raw) is None:  # the one number parser: `1_0` read as 10 by float(), `٤` as 4
            problems.append(f"the link's {key} {quoted(raw)} is not a number: its Custom GPU box starts empty")
    return problems
