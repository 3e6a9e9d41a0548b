"""specmodel: a concurrency-aware cost model of speculative decoding (pure Python, no UI).

The small public API (docs/library.md):

    Scenario, predict, summarize, best_k, crossover_concurrency, k_schedule, verdict
    Efficiency (the calibratable parameters), SpecModelError
    acceptance (E, α, survival profiles and every engine's acceptance number)
    presets (GPUs, models and methods, each with a source)
    runs (read past benchmark runs), prom (parse a /metrics page), scrape (measure a live server):
    loaded on first use, so `import specmodel` stays light

The folders are the layers, each importing only those before it: model/ (the cost model),
runs/ (past runs), metrics/ (live sources), plan/, export/, show/ (what pages display) and cli/.
"""

import importlib

from specmodel.errors import SpecModelError
from specmodel.version import VERSION
from specmodel.model import acceptance, presets
from specmodel.model.decide import best_k, crossover_concurrency, k_schedule, off_above
from specmodel.words import Summary, Verdict, summarize, verdict
from specmodel.model.roofline import Efficiency
from specmodel.model.scenario import Prediction, Scenario, predict, with_changes

__version__ = VERSION

_LAZY = {"prom": "specmodel.metrics.prom", "scrape": "specmodel.metrics.scrape", "runs": "specmodel.runs"}


def __getattr__(name: str):
    if name in _LAZY:
        return importlib.import_module(_LAZY[name])
    raise AttributeError(f"module 'specmodel' has no attribute {name!r}")


__all__ = [
    "Efficiency", "Prediction", "Scenario", "SpecModelError", "Summary", "Verdict", "acceptance",
    "best_k", "crossover_concurrency", "k_schedule", "off_above", "predict", "presets", "prom", "runs",
    "scrape", "summarize", "verdict", "with_changes", "__version__",
]
