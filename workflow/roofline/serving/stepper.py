"""The step times of a deployment, read from its step tables: a decode step at occupancy D, a step carrying C prompt
tokens beside D decodes (mixed) or alone (separate), a lone prompt's bound; under data-parallel attention with what
the busiest attention replica adds. The serving models (aggregated, disaggregated) solve their steady states on it.
"""
from __future__ import annotations

import copy

import numpy as np

from .steps import GRID_RATIO, Curve, Parts, at, lookup, physical


class Stepper:
    """Step times of a deployment, or of stacked candidates (tables [G, K]; every point then names its row by
    `group`): the target's parts, the draft's (K decode passes of its own plus its share of the prompts), the
    framework's host time per step (and per running sequence: `host_per_sequence_s`, each attention replica's
    scheduler handling its own), combined once into tables over the decode occupancy D. `even_prompts`: under
    data-parallel attention the framework deals a step's prompt chunks evenly over the replicas (TensorRT-LLM's
    attention-DP balancing); otherwise a step that carries prompts waits for the replica that computes one
    (_busiest)."""

    def __init__(self, target: Parts, mixed: bool, draft: Parts | None = None, passes: int = 0, host_s: float = 0.0,
                 group=None, even_prompts: bool = False, host_per_sequence_s: float = 0.0):
        self.target, self.mixed, self.draft, self.passes, self.host_s = target, mixed, draft, passes, host_s
        self.host_per_sequence_s = host_per_sequence_s
        self.even_prompts = even_prompts
        self.tables = {side: {name: value if name == "rate" else Curve(value)
                              for name, value in self._combine(side).items()} for side in ("bound", "expected")}
        if group is not None or target.attention_bound.ndim == 1:  # stacked tables are read at points (at_points)
            self._place(group)

    def _place(self, group) -> None:
        """Read the tables at `group` (each point's row of stacked tables; None for one deployment's)."""
        self.group, self._offsets = group, {}
        self.computed, self.queries = at(self.target.computed, group), at(self.target.queries, group)
        self.replicas = at(self.target.replicas, group)
        spread = np.asarray(self.replicas) > 1  # the points under data-parallel attention
        self._balanced = not spread.any()
        self._spread = None if spread.ndim == 0 or spread.all() else np.flatnonzero(spread)  # None: every point
        self.prompt = {side: at(self.tables[side]["rate"], group) for side in ("bound", "expected")}
        self.token_compute = at(self.target.token_compute_bound, group)  # the token-wise FLOPs' roof per token
        self.logit_compute = at(self.target.logit_compute_bound, group)  # the logits' FLOPs' roof per row
        self.stages = at(self.target.stages, group)  # pipeline stages: concurrent under load (throughput_bound)
        self.lone_prompt = self._alone(self.computed, "bound")  # one prompt alone: the TTFT bound

    def at_points(self, group) -> "Stepper":
        """The same steps read at other points (`group`: each point's row of the stacked tables), sharing the
        tables: a search solves its points a chunk at a time."""
        other = copy.copy(self)
        other._place(group)
        return other

    def _combine(self, side: str) -> dict:
        t = self.target
        stacked = t.attention_bound.ndim == 2
        D = GRID_RATIO ** np.arange(t.attention_bound.shape[-1])
        rows = np.arange(t.attention_bound.shape[0])[:, None] if stacked else None
        D = np.broadcast_to(D, t.attention_bound.shape)
        tokens = D * (t.queries[:, None] if stacked else t.queries)
        attend = getattr(t, f"attention_{side}")
        if self.draft is not None:  # K passes of the draft's decode (one query each)
            attend = attend + self.passes * self.draft.time(D, 0.0, side, rows)
        per_token = lookup(getattr(t, f"tokenwise_{side}"), tokens, rows) + lookup(
            getattr(t, f"logits_{side}"), tokens, rows)
        prompt = getattr(t, f"prompt_{side}") + (getattr(self.draft, f"prompt_{side}") if self.draft else 0.0)
        tokenwise = getattr(t, f"tokenwise_{side}")
        return {"light": per_token + attend, "attend": attend, "rate": prompt, "tokenwise": tokenwise,
                "logits": getattr(t, f"logits_{side}"),
                # one replica's own share, held as every part is (steps.physical): the difference of two held curves
                # need not be, and a step of uneven prompts had priced below an even one
                "replica": physical(np.maximum(tokenwise - getattr(t, f"experts_{side}"), 0.0),
                                    GRID_RATIO ** np.arange(np.shape(tokenwise)[-1]))}

    def _host(self, side: str, D=0.0):
        """The framework's host time of a step with D sequences decoding (expected side only): per step, and per
        running sequence on each attention replica (its own scheduler process under data-parallel attention)."""
        if side != "expected":
            return 0.0
        if not self.host_per_sequence_s:
            return self.host_s
        return self.host_s + self.host_per_sequence_s * D / self.replicas

    def _read(self, side: str, name: str, x):
        return self._reads(side, (name,), x)[0]

    def _reads(self, side: str, names: tuple[str, ...], x) -> list:
        """Tables of one grid width read at the same x: located once (the solver reads a step's decode tables at
        the same occupancy in every iteration)."""
        curves = [self.tables[side][name] for name in names]
        index, w = curves[0].locate(x, self._row_offsets(curves[0]))
        return [curve.at(index, w) for curve in curves]

    def _row_offsets(self, curve):
        """Each point's first flat index in `curve`'s rows, once per grid width (tables of one width share it)."""
        if curve.width not in self._offsets:
            self._offsets[curve.width] = curve.offsets(self.group)
        return self._offsets[curve.width]

    def _prompts(self, C, side: str):
        """The draft's prompt passes beyond their attention (which the `prompt` rate holds)."""
        if self.draft is None:
            return 0.0
        return self.draft.time(0.0, C, side, self.group) - C * at(getattr(self.draft, f"prompt_{side}"), self.group)

    def prompts_alone(self) -> "Stepper":
        """The same steps with prompts run alone, no decodes beside them (a disaggregated prefill worker's)."""
        other = copy.copy(self)
        other.mixed = False
        return other

    def with_host(self, host_s: float) -> "Stepper":
        """The same steps under another host time per step (the tables do not hold it)."""
        other = copy.copy(self)
        other.host_s = host_s
        return other

    def light(self, D, side: str):
        """A decode step at occupancy D (at least the sequence asking: one)."""
        D = np.maximum(D, 1.0)
        return self._read(side, "light", D) + self._host(side, D)

    def pipelined(self, D, side: str):
        """The least time between a sequence's tokens at occupancy D: a pipeline of p stages runs the D sequences
        as p micro-batches, a full step of D / p per round at best (aggregated.throughput_bound); light(D) at p = 1."""
        return self.light(np.asarray(D, dtype=float) / self.stages, side)

    def decode_attention(self, D, side: str):
        """The attention part of a decode step at occupancy D (light's share that reads the cached tokens)."""
        return self._read(side, "attend", np.maximum(D, 1.0))

    def heavy(self, D, C, side: str, chunk=np.inf):
        """A step carrying C prompt tokens (one request's at most `chunk` of them, which bounds the busiest
        attention replica's share: _busiest) beside D decodes (mixed) or alone (separate)."""
        if not self.mixed:
            return self._alone(C, side, chunk) + self._host(side)
        D = np.maximum(D, 1.0)
        return self._fused(D, C, side, chunk=chunk) + self._host(side, D)

    def light_and_heavy(self, D, prompt_tokens: tuple, side: str, chunk=np.inf) -> tuple:
        """(light(D), [heavy(D, C, chunk) for each C of prompt_tokens]), the decode tables read at D once."""
        if not self.mixed:
            return self.light(D, side), [self.heavy(D, C, side, chunk) for C in prompt_tokens]
        D = np.maximum(D, 1.0)
        host = self._host(side, D)
        light, attend = self._reads(side, ("light", "attend"), D)
        return light + host, [self._fused(D, C, side, attend, chunk) + host for C in prompt_tokens]

    def spread(self, D, P):
        """Bound of a decode step at occupancy D carrying P prompt tokens fused."""
        return self._fused(np.maximum(D, 1.0), P, "bound")

    def lone(self, C):
        """Bound of C prompt tokens computed alone (one prompt: the TTFT bound)."""
        return self._alone(C, "bound")

    def _fused(self, D, C, side: str, attend=None, chunk=np.inf):
        """A decode step with C prompt tokens fused in, as slow as its busiest attention replica (_busiest; the
        bound, and a framework that deals prompts evenly, spread them evenly)."""
        tokens = D * self.queries
        attend = self._read(side, "attend", D) if attend is None else attend
        step = (self._read(side, "tokenwise", tokens + C) + self._read(side, "logits", tokens + C / self.computed)
                + attend + C * self.prompt[side] + self._prompts(C, side))
        return step if self.even_prompts else self._with_busiest(step, C, side, chunk, tokens)

    def _alone(self, C, side: str, chunk=np.inf):
        """A step of C prompt tokens and no decodes, as slow as its busiest attention replica (_busiest)."""
        return (self._prompt_tokenwise(C, side, chunk) + self._read(side, "logits", C / self.computed)
                + C * self.prompt[side] + self._prompts(C, side))

    def _prompt_tokenwise(self, C, side: str, chunk):
        """The token-wise part of a step of C prompt tokens, with what the busiest attention replica adds at the
        points under data-parallel attention."""
        return self._with_busiest(self._read(side, "tokenwise", C), C, side, chunk)

    def _with_busiest(self, step, C, side: str, chunk, base=0.0):
        """`step` (C prompt tokens beside `base` decode tokens, every replica at its even share) plus what the
        busiest attention replica adds, at the points under data-parallel attention."""
        if side != "expected" or self._balanced:
            return step
        if self._spread is None or np.ndim(step) != 1:  # every point (the mask reads a flat list of points)
            return step + self._busiest(C, side, chunk, base=base)
        step = np.array(step, dtype=float)
        step[self._spread] += self._busiest(C, side, chunk, self._spread, base)
        return step

    def _busiest(self, C, side: str, chunk, points=None, base=0.0):
        """Expected time the busiest attention replica adds to a step of C prompt tokens (beside `base` decode
        tokens, dealt evenly) under data-parallel attention: a prompt lives on one replica, so one replica
        computes max(C / r, min(C, c, chunk)) of them: the even share, or one whole prompt (at most a chunk) where
        the step holds fewer prompts than replicas (dealing r + 1 whole prompts would give one replica two; the
        even share is taken past r, as a scheduler that chunks can balance), while the rest wait for it at the
        experts' all-to-all. The tables price every replica at its even share: the replica's own operators (the
        token-wise part but the routed experts) and its prompts' attention are read again at its load. None
        without DP attention (r = 1) or on the bound side (prompts dealt evenly: no step is faster). This holds
        for prompt-only steps (a disaggregated prefill worker's, SGLang's prefill steps) and for decode steps that
        carry prompt chunks, unless the framework deals those evenly (`even_prompts`: TensorRT-LLM's attention-DP
        balancing; its measured DeepSeek DEP runs' TPOT follows the even spread, where this would price it 2-4x
        too slow). Without it, as in TensorRT-LLM's published Qwen3 and Llama 4 maximum-load runs, the expected
        tokens/s of those came down from 1.3-2.6x the published figures (benchmarks/validate_max_load.py).
        `points`: the indices of the points to price (C, chunk and base given for every point or as one value;
        None: every point)."""
        if side != "expected" or self._balanced:
            return 0.0

        def pick(value):  # a per-point value at `points` (None: every point)
            return value if points is None or np.ndim(value) == 0 else np.asarray(value)[points]
        C, chunk, base = pick(C), pick(chunk), pick(base)
        r, computed, prompt = pick(self.replicas), pick(self.computed), pick(self.prompt[side])
        busiest = np.maximum(C / r, np.minimum(np.minimum(C, computed), chunk))
        return (self._read_at(side, "replica", base + r * busiest, points)
                - self._read_at(side, "replica", base + C, points) + (r * busiest - C) * prompt)

    def _read_at(self, side: str, name: str, x, points):
        """A table read at some of the points (`points`: their indices; None: every point)."""
        if points is None:
            return self._read(side, name, x)
        curve = self.tables[side][name]
        index, w = curve.locate(x, self._row_offsets(curve)[points])
        return curve.at(index, w)
