"""The one error type of specmodel: messages written for the person using the tool."""


class SpecModelError(ValueError):
    """Bad input or an impossible scenario; the message says what was wrong and what to do."""


class DoesNotFit(SpecModelError):
    """One sequence does not fit in the GPU's memory at this context: an answer, not a failure.

    The message reads "does not fit: needs X GB for one sequence at this context, the GPU has Y ...";
    the attributes give the numbers and the closest setting that fits (specmodel.model.memory builds it)."""

    def __init__(self, message: str, *, needed_GB: float, available_GB: float, gpu_GB: float, closest: str,
                 closest_context_len: int | None = None, part: str = "target"):
        super().__init__(message)
        self.needed_GB = needed_GB  # weights + KV cache of one sequence + reserve
        self.available_GB = available_GB  # what the serving engine may use (memory × utilisation)
        self.gpu_GB = gpu_GB  # the GPUs' memory (tensor-parallel GPUs together)
        self.closest = closest  # the closest setting that fits, in words
        self.closest_context_len = closest_context_len  # the longest context that fits here (None: none does)
        self.part = part  # "target": nothing runs; "speculation": plain decoding fits, speculation does not

    def to_dict(self) -> dict:
        return {"needed_GB": round(self.needed_GB, 2), "available_GB": round(self.available_GB, 2),
                "gpu_GB": round(self.gpu_GB, 2), "closest": self.closest,
                "closest_context_len": self.closest_context_len, "part": self.part}
