"""Speculative decoding: a draft proposes K tokens, one verify step of the target checks them all.

A verify step runs K + 1 query tokens per sequence (the last accepted token and the K drafts) through the target:
its GEMMs see K + 1 times the decode tokens and read the weights once, its attention reads each cached key once for
K + 1 queries (roofline.serving.steps). With per-token acceptance probability A (each draft accepted independently,
the first rejection ending the run), a verify step yields on average

    tokens per step = 1 + A + A^2 + ... + A^K = (1 - A^(K+1)) / (1 - A)

(the accepted drafts and the target's own next token); `accepted_length` gives that number directly.

The draft's cost per verify step: `mtp` and `eagle` run K passes of a one-layer head on the decode sequences (an MTP
module: one of the model's own layers; an EAGLE head: one decoder layer of the target's shape), each with the
target's embedding and lm_head; `draft` runs K decode steps of a smaller model at the same plan; `ngram` drafts by
prompt lookup on the host (no device time). The draft also prefills every prompt (its own cache), and its weights
and cache take memory beside the target's.

The gain is largest on the memory roof, where K + 1 queries cost about what one does; as the verify step turns
compute-bound its cost grows ~ (K + 1) x and the speed-up shrinks, and at large batches turns into a loss.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..engine.analysis import weight_bytes_per_device
from ..engine.errors import RooflineInputError, unknown
from ..engine.models import ModelSpec, parameter_counts

SPEC_METHODS = ("mtp", "eagle", "draft", "ngram")
#: draft tokens per verify step when none are given (the CLI's --spec-tokens, a serving workload's spec_tokens)
DEFAULT_SPEC_TOKENS = 3
#: the most draft tokens a verify step may carry
MAX_SPEC_TOKENS = 16


@dataclass(frozen=True)
class Speculation:
    """A speculative-decoding setting (method None = none)."""

    method: str | None = None
    tokens: int = DEFAULT_SPEC_TOKENS  # K drafted tokens per verify step
    acceptance: float | None = None  # per-token acceptance probability, 0 <= A < 1
    accepted_length: float | None = None  # mean tokens per verify step, 1 <= L <= K + 1
    draft_model: ModelSpec | None = None  # method `draft`

    @property
    def on(self) -> bool:
        return self.method is not None

    @property
    def queries(self) -> int:
        """Query tokens per sequence in a step: K + 1 when verifying, else 1."""
        return self.tokens + 1 if self.on else 1

    @property
    def tokens_per_step(self) -> float:
        """Expected tokens a step yields per sequence (1 without speculation)."""
        if not self.on:
            return 1.0
        if self.accepted_length is not None:
            return float(self.accepted_length)
        a = float(self.acceptance)
        return float(sum(a ** i for i in range(self.tokens + 1)))

    def validate(self, target: ModelSpec) -> "Speculation":
        if not self.on:
            return self
        if self.method not in SPEC_METHODS:
            raise unknown("--spec-method", self.method, SPEC_METHODS)
        if isinstance(self.tokens, bool) or not isinstance(self.tokens, int) or not 1 <= self.tokens <= MAX_SPEC_TOKENS:
            raise RooflineInputError(f"--spec-tokens: {self.tokens!r} is not allowed; expected an integer from 1 to "
                                     f"{MAX_SPEC_TOKENS}")
        if (self.acceptance is None) == (self.accepted_length is None):
            raise RooflineInputError("--spec-acceptance / --spec-accepted-length: give exactly one of the two with "
                                     f"--spec-method {self.method}")
        if self.acceptance is not None and not 0 <= self.acceptance < 1:
            raise RooflineInputError(f"--spec-acceptance: {self.acceptance!r} is not allowed; expected a probability "
                                     "from 0 to below 1 (each drafted token accepted with it)")
        if self.accepted_length is not None and not 1 <= self.accepted_length <= self.tokens + 1:
            raise RooflineInputError(f"--spec-accepted-length: {self.accepted_length!r} is not allowed; expected "
                                     f"1 to {self.tokens + 1} tokens per verify step (--spec-tokens + 1)")
        if self.method == "mtp" and not target.mtp_layers:
            raise RooflineInputError(f"--spec-method: mtp runs the model's own multi-token-prediction module, and "
                                     f"{target.key} ships none (its config.json sets no num_nextn_predict_layers or "
                                     "mtp_num_hidden_layers); use eagle, draft or ngram")
        self._check_draft(target)
        return self

    def _check_draft(self, target: ModelSpec) -> None:
        if self.method != "draft":
            if self.draft_model is not None:
                raise RooflineInputError(f"--spec-draft-model: only with --spec-method draft, not {self.method}")
            return
        if self.draft_model is None:
            raise RooflineInputError("--spec-draft-model: --spec-method draft needs a draft model (a catalog key or "
                                     "the path of a config.json)")
        if parameter_counts(self.draft_model)[1] >= parameter_counts(target)[1]:
            raise RooflineInputError(f"--spec-draft-model: {self.draft_model.key} is not smaller than "
                                     f"{target.key} ({parameter_counts(self.draft_model)[1] / 1e9:.3g}B against "
                                     f"{parameter_counts(target)[1] / 1e9:.3g}B active parameters); a draft must be "
                                     "cheaper than the model it drafts for")
        if self.draft_model.vocab != target.vocab:
            raise RooflineInputError(f"--spec-draft-model: {self.draft_model.key} has a vocabulary of "
                                     f"{self.draft_model.vocab}, {target.key} of {target.vocab}; a draft model's "
                                     "logits must be the target's token ids one for one (the same vocabulary size, "
                                     "padding included)")


def draft_weight_bytes(spec: Speculation, scenario, target: ModelSpec | None = None) -> float:
    """Bytes of the drafting weights on the busiest device of the target's plan (`scenario`), which the KV cache's
    budget loses: a separate draft model's whole weights; an MTP or EAGLE head's one layer (DeepSeek-V3's MTP layer
    is an MoE layer of ~11.5 B parameters, Llama-3.1-70B's EAGLE head a dense layer of ~0.9 B), split as the target's
    layers are by tp and ep but held whole by the last pipeline stage, the embedding and LM head it shares with the
    target not counted twice (EAGLE's small input projection is left out); 0 for ngram, or for a head without
    `target`."""
    if spec.method == "draft" and spec.draft_model is not None:
        return float(weight_bytes_per_device(spec.draft_model, scenario))
    head = draft_model(spec, target) if target is not None and spec.method in ("mtp", "eagle") else None
    if head is None:
        return 0.0
    one_stage = replace(scenario, parallel=replace(scenario.parallel, pp=1))
    two = replace(head, n_layers=2, first_dense_layers=2 * head.first_dense_layers)
    return float(weight_bytes_per_device(two, one_stage) - weight_bytes_per_device(head, one_stage))


def draft_model(spec: Speculation, target: ModelSpec) -> ModelSpec | None:
    """The model whose passes draft the tokens: a one-layer head of the target (mtp: one of its MoE layers if it
    has them; eagle: a dense layer where the target has one), the draft model, or None (ngram, no speculation)."""
    if spec.method in ("mtp", "eagle"):
        dense = spec.method == "eagle" and target.is_moe and target.first_dense_layers > 0
        return replace(target, key=f"{target.key}:{spec.method}", n_layers=1,
                       first_dense_layers=1 if dense else 0 if target.is_moe else target.first_dense_layers,
                       sliding_layers=0, chunked_layers=0, linear_layers=0, nope_layers=0)
    return spec.draft_model if spec.method == "draft" else None


def check_has_decode(method: str | None, osl: int) -> None:
    """Refuse speculation (one line) for requests that decode nothing: the first token comes from the prefill, so a
    request of one output token has no step to draft for (the row had shown a verify step's TPOT for it)."""
    if method and osl < 2:
        raise RooflineInputError(f"--spec-method: a request of --osl {osl} has no decode step to speculate on; drop "
                                 "it or raise --osl")
