"""The one place that decides what each served instance is judged on: its target, draft, method, k and TP, from
the model its labels name and the user's overrides. `fleet`, the Fleet page, `rules` and `dashboard` all ask it,
so they judge an instance on the same model.

    given = parse_instance("tgi-0:80=2,Llama 3.1 70B")          # --instance INSTANCE=K[,TARGET[,DRAFT]]
    judged = decide(base, model_name="Qwen/Qwen3-0.6B", given=None, k=4)
    judged.scenario, judged.predicted_on, judged.refused   # refused: (target, draft), worded by words.served

Target: the one given for the instance, else the preset its model label names (none: the base's; a name with
no preset: not predicted), else the base's. Draft (draft-model speculation only): the one given, else the base's
where the target is the base's, else the target's own default draft, else the first of its family's drafts
(presets.draft_candidates), else the base's. A draft as large as its target or larger is refused by name: it
cannot speed that target up, and the prediction would be a number about nothing. TP: the base's, or the fewest
GPUs of its kind that hold the target and its speculation (an instance's GPU count is not in its metrics).
Method: the base's, as the server's engine runs it (`as_served`: a TGI server runs n-gram, not a draft model).
"""

from __future__ import annotations

from dataclasses import dataclass

from specmodel.bounds import MAX_K
from specmodel.errors import SpecModelError
from specmodel.model import memory, presets
from specmodel.model.scenario import Scenario, with_changes
from specmodel.numbers import whole_number
from specmodel.text import MAX_LABEL_CHARS, clean_name

UNKNOWN_MODEL = "unknown model"  # what an instance whose model has no preset is predicted on: nothing


@dataclass(frozen=True)
class InstanceModel:
    """One instance judged on its own k (and target, draft), as `--instance INSTANCE=K[,TARGET[,DRAFT]]` gives it."""

    instance: str  # the `instance` label, e.g. "tgi-0:80"
    k: int
    target: str | None = None  # a preset name; None: the one its labels name, else the base's
    draft: str | None = None  # a preset name; None: decided as the module docstring says

    @property
    def profile(self) -> str:
        """The label naming this (k, target, draft) in the rules (instance:spec_decode_k:configured)."""
        return f"k{self.k}" + (f" {self.target}" if self.target else "") + (f" + {self.draft}" if self.draft else "")


def parse_instance(text: str) -> InstanceModel:
    """`INSTANCE=K`, `INSTANCE=K,TARGET` or `INSTANCE=K,TARGET,DRAFT` ("tgi-0:80=2", "10.0.0.7:8000=3,Llama 3.1 70B").

    >>> parse_instance("tgi-0:80=2,Llama 3.1 8B")
    InstanceModel(instance='tgi-0:80', k=2, target='Llama 3.1 8B', draft=None)
    """
    raw = str(text or "")
    instance, sep, rest = raw.partition("=")
    k_text, _, models = rest.partition(",")
    target, _, draft = models.partition(",")
    instance, k_text, target, draft = instance.strip(), k_text.strip(), target.strip(), draft.strip()
    shown = clean_name(raw, 120)[0]
    if not sep or not instance or not k_text:
        raise SpecModelError(f"--instance '{shown}' should be INSTANCE=K, INSTANCE=K,TARGET or INSTANCE=K,TARGET,DRAFT "
                             "(the instance label as Prometheus shows it, e.g. tgi-0:80=2)")
    if any(c in instance for c in '"\\{}\n'):
        raise SpecModelError(f"--instance '{shown}': the instance label may not contain quotes, braces or "
                             "backslashes")
    if len(instance) > MAX_LABEL_CHARS:  # it is written into every rule: 100,000 characters made lines of as many
        raise SpecModelError(f"--instance '{shown}': the instance label has {len(instance):,} characters, more than "
                             f"the {MAX_LABEL_CHARS} of a label this tool writes")
    try:
        k = whole_number(k_text, "k")
    except SpecModelError:
        raise SpecModelError(f"--instance '{shown}': k '{clean_name(k_text, 20)[0]}' is not a whole number") from None
    if not 1 <= k <= MAX_K:
        raise SpecModelError(f"--instance '{shown}': k must be 1 to {MAX_K} (draft tokens per step), got {k}")
    return InstanceModel(instance, k, presets.find_model(target).name if target else None,
                         presets.find_model(draft).name if draft else None)


@dataclass(frozen=True)
class Judged:
    """What one instance is judged on: a scenario (None: not predicted), in words, and why not where refused."""

    scenario: Scenario | None
    predicted_on: str  # "Llama 3.1 70B + Llama 3.2 1B, TP 4 (the fewest L40S that hold it)", or UNKNOWN_MODEL
    # (target, draft) where no prediction is made because the draft is not smaller than its target, else None;
    # specmodel.words.served.refusal says it
    refused: tuple[presets.Model, presets.Model] | None = None


def draft_too_large(target: presets.Model, draft: presets.Model | None) -> bool:
    """True where `draft` cannot draft for `target`: it is as large or larger."""
    return draft is not None and draft.params_B >= target.params_B


def _target_of(model_name: str | None, given: InstanceModel | None, base: Scenario) -> presets.Model | None:
    """The instance's target preset (None: its label names a model with no preset)."""
    if given is not None and given.target:
        return presets.find_model(given.target)
    if not model_name:
        return base.target
    return presets.parse_model(model_name).model


def _draft_of(target: presets.Model, given: InstanceModel | None, base: Scenario) -> presets.Model | None:
    """The draft an instance of `target` runs (draft-model speculation only)."""
    if base.method.name != "draft_model":
        return base.draft
    if given is not None and given.draft:
        return presets.find_model(given.draft)
    if target.name == base.target.name:
        return base.draft
    own = target.default_draft or next(iter(presets.draft_candidates(target.name)), None)
    return presets.find_model(own) if own else base.draft


# documented (huggingface/text-generation-inference db931fc): TGI's `--speculate N` runs Medusa heads or an MLP
# speculator where the model ships them, else n-gram (server/text_generation_server/models/__init__.py:
# `method = "n-gram"`); it loads no separate draft model. Its n-gram proposes N tokens for every sequence at every
# step (server/text_generation_server/utils/tokens.py, create_n_gram_speculation gathers B x N ids), so every verify
# carries N drafts, and tgi_request_skipped_tokens averages over all of those steps.
TGI_METHODS = ("ngram", "medusa")
TGI_AS_NGRAM = "n-gram (TGI's --speculate)"  # the label a TGI instance's predicted_on carries (words.served says why)


def as_served(base: Scenario, server: str | None) -> tuple[Scenario, str | None]:
    """The base as a server of this engine (a metrics schema's key: "tgi", "counts", ...) can run it, and a label
    of what changed (TGI_AS_NGRAM; words.served.served_as_words says it in full), else None. A TGI server runs
    no draft model: judged as n-gram (its --speculate without Medusa heads), every sequence drafting at every
    step (proposal rate 1)."""
    if server != "tgi":
        return base, None
    if base.method.name not in TGI_METHODS:
        return with_changes(base, method="ngram", draft=None, proposal_rate=1.0), TGI_AS_NGRAM
    if base.method.name == "ngram" and base.proposal_rate is None:
        return with_changes(base, proposal_rate=1.0), None
    return base, None


def decide(base: Scenario, model_name: str | None = None, given: InstanceModel | None = None,
           k: int | None = None, server: str | None = None) -> Judged:
    """What one instance is judged on (module docstring): `model_name` its labels' model, `given` the user's
    override for it, `k` the k it is judged at (None: the override's, else the base's), `server` the engine its
    metrics came from (as_served: a TGI server is judged as the method it runs)."""
    base, served = as_served(base, server)
    judged = _decide(base, model_name, given, k)
    if served and judged.scenario is not None:
        return Judged(judged.scenario, f"{judged.predicted_on}, {served}")
    return judged


def _decide(base: Scenario, model_name: str | None, given: InstanceModel | None, k: int | None) -> Judged:
    target = _target_of(model_name, given, base)
    if target is None:
        return Judged(None, UNKNOWN_MODEL)
    draft = _draft_of(target, given, base)
    pair = f"{target.name} + {draft.name}" if base.method.name == "draft_model" and draft else target.name
    if base.method.name == "draft_model" and draft_too_large(target, draft):
        return Judged(None, f"not predicted: {pair}", (target, draft))
    kk = given.k if given is not None else k
    own = with_changes(base, target=target, draft=draft, **({"k": int(kk)} if kk else {}))
    said = pair if model_name or given is not None else f"{pair} (no model label: the sidebar's)"
    if target.name == base.target.name and draft == base.draft:
        return Judged(own, said)  # the base's own model, on the base's GPUs
    tp = tp_that_fits(own)
    if tp != own.tp:  # the instance's GPU count is not in its metrics: the fewest GPUs that hold its model
        own = with_changes(own, tp=tp)
        said += f", TP {tp} (the fewest {base.gpu} that hold it)"
    return Judged(own, said)


def tp_that_fits(s: Scenario) -> int:
    """The scenario's TP, or the smallest larger one on which its target and speculation fit."""
    for tp in (t for t in memory.TP_CHOICES if t >= s.tp):
        if memory.target_does_not_fit(s.gpu, tp, s.target, s.context_len) is None and \
                memory.speculation_does_not_fit(s.gpu, tp, s.target, s.context_len, s.method, s.k, s.draft) is None:
            return tp
    return s.tp
