"""specmodel: a concurrency-aware cost model of speculative decoding (pure Python, no UI).

The small public API:

    Scenario, predict, summarize, best_k, crossover_concurrency, k_schedule, verdict
    Efficiency (the calibratable parameters), SpecModelError
    acceptance (E, α, survival profiles and every engine's acceptance number)
    presets (GPUs, models and methods, each with a source)
"""

from . import acceptance, presets
from .errors import SpecModelError
from .roofline import Efficiency
from .scenario import (Prediction, Scenario, Summary, Verdict, best_k, crossover_concurrency,
                       k_schedule, off_above, predict, summarize, verdict, with_changes)

__all__ = [
    "Efficiency", "Prediction", "Scenario", "SpecModelError", "Summary", "Verdict", "acceptance",
    "best_k", "crossover_concurrency", "k_schedule", "off_above", "predict", "presets", "summarize", "verdict",
    "with_changes",
]
