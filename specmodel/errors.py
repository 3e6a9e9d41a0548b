"""The one error type of specmodel: messages written for the person using the tool."""


class SpecModelError(ValueError):
    """Bad input or an impossible scenario; the message says what was wrong and what to do. `key`: the
    input's own name for the value the message is about (a spec key, a CSV column), where there is one,
    so a caller can point at it (a run file's problem names its column)."""

    def __init__(self, message: str = "", key: str | None = None):
        super().__init__(message)
        self.key = key


# Why each bound on a GPU's or model's numbers is where it is (model.presets.GPU_BOUNDS and MODEL_BOUNDS, chosen),
# said by the message that refuses a number outside it (OutOfRange); keyed by the GPU's or Model's field.
RANGE_REASONS = {
    "bandwidth_GBps": "a DDR4 channel moves ~25 GB/s; 100 TB/s is 12x a B200",
    "dense_bf16_TFLOPS": "an old consumer GPU has ~10; 100,000 is 40x a B200",
    "memory_GB": "a model needs at least 1 GB; 10 TB is 35x a B300",
    "dense_fp8_TFLOPS": "twice the BF16 range (FP8 runs at twice the BF16 rate)",
    "dense_fp4_TFLOPS": "four times the BF16 range",
    "interconnect_GBps": "a PCIe 3.0 x1 link moves ~1 GB/s; 100 TB/s is 100x NVLink 5",
    "layers": "the deepest released decoder has 126 layers",
    "hidden": "the widest released decoder has hidden size 18,432",
    "heads": "released decoders have at most 128 query heads",
    "kv_heads": "at most the query heads",
    "head_dim": "released decoders use 64-256",
    "intermediate": "the widest released FFN is 53,248",
    "vocab": "the largest released vocabulary is 262,144",
    "experts": "the most routed experts of a released model is 384",
    "params_B": "the largest released model has ~2,000B parameters",
}


class OutOfRange(SpecModelError):
    """A GPU's or model's number outside its accepted range (model.presets' bounds): `what` the input ("--gpu-spec"),
    `shown` its name for the value (a spec key, a config.json key), `field` the GPU's or Model's field."""

    def __init__(self, what: str, shown: str, value: float, field: str, lo: float, hi: float):
        super().__init__(f"{what}: {shown} = {value:g} is outside the accepted range {lo:g}-{hi:g} "
                         f"({RANGE_REASONS[field]})", key=shown)


class DoesNotFit(SpecModelError):
    """One sequence does not fit in the GPU's memory at this context: an answer, not a failure.

    Built from specmodel.model.memory's Misfit (numbers and labels), whose words are this error's own
    message: "does not fit: needs X GB for one sequence at this context, the GPU has Y ...". The attributes
    give the numbers and the closest setting that fits."""

    def __init__(self, misfit):
        super().__init__(_misfit_message(misfit))
        self.misfit = misfit
        self.needed_GB = misfit.needed / 1e9  # weights + KV cache of one sequence + reserve
        self.available_GB = misfit.usable / 1e9  # what the serving engine may use (memory × utilisation)
        self.gpu_GB = misfit.memory / 1e9  # the GPUs' memory (tensor-parallel GPUs together)
        self.closest = _closest(misfit)  # the closest setting that fits, in words
        self.closest_context_len = misfit.longest  # the longest context that fits here (None: none does)
        self.part = misfit.part  # "target": nothing runs; "speculation": plain decoding fits, speculation does not

    def to_dict(self) -> dict:
        return {"needed_GB": round(self.needed_GB, 2), "available_GB": round(self.available_GB, 2),
                "gpu_GB": round(self.gpu_GB, 2), "closest": self.closest,
                "closest_context_len": self.closest_context_len, "part": self.part}


def _gb(x: float) -> str:
    return f"{x / 1e9:.3g} GB"


def _who(gpu: str, tp: int) -> str:
    return f"{tp} × {gpu}" if tp > 1 else f"one {gpu}"


def _option(o: tuple) -> str:
    code, *a = o
    return {"context": lambda: f"context ≤ {a[0]:,} tokens", "tp": lambda: f"{a[0]} × {a[1]} (tensor parallel)",
            "gpu": lambda: _who(*a), "heads": lambda: f"k = {a[0]} heads", "k": lambda: f"k = {a[0]}",
            "ngram": lambda: "n-gram drafting (no draft weights)", "draft": lambda: f"the smaller {a[0]} draft"}[code]()


def _closest(m) -> str:
    if m.options:
        return "the closest setting that fits: " + ", or ".join(_option(o) for o in m.options)
    if m.part == "target":
        return "no GPU preset holds it at this context: shorten the context"
    return "turn speculation off here, or use a GPU with more memory"


def _cause(cause: tuple) -> str:
    code, *a = cause
    return {"draft_model": lambda: f"the {a[0]} draft ({_gb(a[1])} of weights and its own KV cache)",
            "head": lambda: f"the {a[0]} draft head ({_gb(a[1])} of weights and its KV cache)",
            "medusa": lambda: f"{a[0]} Medusa heads ({_gb(a[1])} of weights, one head per draft position)",
            "states": lambda: (f"the k = {a[0]} extra tokens per sequence and the {a[0]} extra recurrent-state "
                               f"snapshots ({_gb(a[1])}) that verification keeps for rollback"),
            "tokens": lambda: f"the k = {a[0]} extra tokens per sequence that verification keeps in the KV cache",
            }[code]()


def _misfit_message(m) -> str:
    has = (f"{_who(m.gpu, m.tp)} has {_gb(m.memory)} ({_gb(m.usable)} usable at vLLM's {m.utilization:g} memory "
           "utilisation)")
    if m.part == "speculation":
        return (f"does not fit: speculation needs {_gb(m.needed)} for one sequence at context {m.context_len:,} "
                f"because of {_cause(m.cause)}; {has}")
    if m.weights_alone:
        what = (f"{m.model} needs {_gb(m.weights)} for its weights alone ({m.weight_dtype}; {_gb(m.needed)} with "
                f"one sequence at context {m.context_len:,} and the {m.reserve_GB:g} GB reserve)")
    else:
        what = (f"{m.model} needs {_gb(m.needed)} for one sequence at context {m.context_len:,} (weights "
                f"{_gb(m.weights)} in {m.weight_dtype}, KV cache {_gb(m.needed - m.weights - m.reserve_GB * 1e9)} "
                f"in {m.kv_dtype}, reserve {m.reserve_GB:g} GB)")
    return f"does not fit: {what}; {has}; {_closest(m)}"
