"""The scenario: what is run (stage, batch, lengths) and how (dtypes, attention kernel, logits, routing, MLA)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from functools import lru_cache

from .dtypes import DEFAULT_GROUP_SIZE, ELEMENT_BITS, FP8_SCALINGS, WEIGHT_DTYPES, check_storage_dtype
from .errors import RooflineInputError, unknown
from .hardware import FRAMEWORKS
from .model_spec import ModelSpec
from .parallel import Parallel

STAGES = ("prefill", "decode")
ATTENTION_IMPLS = ("eager", "flash")
LOGITS_MODES = ("last", "all")
EXPERT_ROUTINGS = ("uniform", "balanced", "all")
MLA_MODES = ("absorbed", "naive", "decompressed")
#: upper bounds that keep every count exact in float64 (B * S * widths < 2^53) and far beyond any real deployment
MAX_BATCH = 1 << 20
MAX_SEQ_LEN = 1 << 24
MAX_GROUP_SIZE = 1 << 20


@dataclass(frozen=True)
class Scenario:
    """batch: sequences in flight. seq_len: prefill = prompt tokens per sequence; decode = tokens already in the KV
    cache per sequence (the step adds one new token each, which attends to seq_len + 1 keys).

    attention: 'flash' (default: what Hugging Face's SDPA path and every serving engine run) is one fused kernel: no
    score traffic, causal (and windowed) pairs only; 'eager' materializes the full seq x seq score matrix in DRAM (as
    unfused kernels do, the causal mask applied after the matmul; the paper's Table 1 case).
    logits: prefill computes lm_head for the 'last' token of each sequence (serving default) or for 'all'.
    expert_routing: how many distinct MoE experts a layer loads (see formulas.distinct_experts).
    mla_mode: MLA decode; 'absorbed' (default: W_UK/W_UV folded into q and the output, attention over the cached
    latent, as DeepSeek's, vLLM's and SGLang's kernels do), 'naive' (latent cache, re-decompressed with kv_b_proj
    every step, as transformers 5 does), 'decompressed' (per-head K and V cached, as transformers 4.x does).
    quantize_embeddings: with weights narrower than 16 bits, False (default) keeps the embedding table and lm_head at
    16 bits, as GPTQ/AWQ/FP8 checkpoints ship them; True quantizes them with the other weights (rule in dtypes.py).
    weight_dtype: a storage dtype, or 'native': the checkpoint's own (resolved per model by `for_model`).
    expert_weight_dtype: the MoE experts' weights, '' = as weight_dtype (gpt-oss's native MXFP4 experts).
    attention_weight_dtype: the attention blocks' projections (q, k, v, o; MLA's low-rank and absorbed ones; linear
    attention's; a sparse indexer's), '' = as weight_dtype. NVIDIA's NVFP4 checkpoints of DeepSeek-V3.1, GLM-5,
    Kimi-K2.6 and MiniMax-M2.5 leave them 16-bit (their hf_quant_config.json exclude_modules), Qwen3-235B's does not.
    Routers are 16-bit whatever the weight dtype (roofline.engine.parts.part_weight_dtype).
    weight_group_size: int4 weights that share one fp16 scale (dtypes.weight_bytes_per_element).
    fp8_scaling: the fp8 weights' scales (FP8_SCALINGS): 'tensor' (default) or 'block'. The bounds are the same
    (a block's fp32 scale is 4 bytes per 16,384 weights, left out); the expected times of the dense GEMMs read the
    measured block-scaled kernels (their own curve; MoE tables already hold both kinds, the faster kept). With
    weight_dtype 'native' the checkpoint's own scales apply (for_model).
    framework: the serving framework (FRAMEWORKS) whose measured kernels and step model the expected times use
    (roofline.estimate; a device without its tables keeps its default); '' = each device's default. The bounds
    ignore it.
    """

    batch: int = 1
    seq_len: int = 2048
    weight_dtype: str = "native"
    act_dtype: str = "fp16"
    kv_dtype: str = "fp16"
    attention: str = "flash"
    logits: str = "last"
    expert_routing: str = "uniform"
    mla_mode: str = "absorbed"
    parallel: Parallel | str = Parallel()
    memory_utilization: float = 0.90
    quantize_embeddings: bool = False
    expert_weight_dtype: str = ""
    attention_weight_dtype: str = ""
    weight_group_size: int = DEFAULT_GROUP_SIZE
    framework: str = ""
    fp8_scaling: str = "tensor"

    def __post_init__(self):
        if isinstance(self.parallel, dict):  # rebuilt from asdict() (job params, JSON)
            object.__setattr__(self, "parallel", Parallel(**self.parallel))

    @property
    def expert_dtype(self) -> str:
        """Storage dtype of the MoE experts' weights."""
        return self.expert_weight_dtype or self.weight_dtype

    @property
    def attention_weights_dtype(self) -> str:
        """Storage dtype of the attention blocks' projection weights."""
        return self.attention_weight_dtype or self.weight_dtype

    def for_model(self, model: ModelSpec) -> "Scenario":
        """This scenario with weight_dtype 'native' replaced by `model`'s checkpoint dtypes: its quantized linears
        (model.native_weight_dtype, e.g. fp8 of DeepSeek-V3) and experts (model.native_expert_dtype, e.g. mxfp4 of
        gpt-oss); unquantized weights are 16-bit (the activation dtype when that is 16-bit, else bf16). The
        checkpoint's fp8 scales come with its dtype: fp8_scaling 'block' for a block-scaled fp8 checkpoint
        (model.native_fp8_scaling: DeepSeek-V3's weight_block_size), whatever this scenario's fp8_scaling says
        (give weight_dtype fp8 to choose). A concrete weight_dtype (a resolved scenario) is returned at once; each
        resolution is computed once."""
        if self.weight_dtype != "native":
            return self
        return _resolved(self, model.native_weight_dtype, model.native_expert_dtype, model.native_attention_dtype,
                         model.native_fp8_scaling)

    def validate(self) -> "Scenario":
        for name, upper in (("batch", MAX_BATCH), ("seq_len", MAX_SEQ_LEN)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= upper:
                raise RooflineInputError(
                    f"scenario.{name}: {value!r} is not allowed; expected an integer from 1 to {upper}")
        check_storage_dtype("scenario.weight_dtype", self.weight_dtype, WEIGHT_DTYPES)
        for name in ("act_dtype", "kv_dtype"):
            check_storage_dtype(f"scenario.{name}", getattr(self, name))
        for name in ("expert_weight_dtype", "attention_weight_dtype"):
            if getattr(self, name):
                check_storage_dtype(f"scenario.{name}", getattr(self, name))
        size = self.weight_group_size
        if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MAX_GROUP_SIZE:
            raise RooflineInputError(f"scenario.weight_group_size: {size!r} is not allowed; expected an integer "
                                     f"from 1 to {MAX_GROUP_SIZE} (int4 weights per fp16 scale, usually 32-128)")
        for name, allowed in (("attention", ATTENTION_IMPLS), ("logits", LOGITS_MODES),
                              ("expert_routing", EXPERT_ROUTINGS), ("mla_mode", MLA_MODES),
                              ("fp8_scaling", FP8_SCALINGS)):
            if getattr(self, name) not in allowed:
                raise unknown(f"scenario.{name}", getattr(self, name), allowed)
        object.__setattr__(self, "parallel", Parallel.from_value(self.parallel, "scenario.parallel"))
        fraction = self.memory_utilization
        if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0.05 <= fraction <= 1:
            raise RooflineInputError(f"scenario.memory_utilization: {fraction!r} is not allowed; expected a "
                                     "fraction from 0.05 to 1 of each device's memory")
        if self.framework and self.framework not in FRAMEWORKS:
            raise unknown("scenario.framework", self.framework, FRAMEWORKS)
        if not isinstance(self.quantize_embeddings, bool):
            raise RooflineInputError(f"scenario.quantize_embeddings: {self.quantize_embeddings!r} is not allowed; "
                                     "expected true or false")
        return self

    def with_(self, **changes) -> "Scenario":
        return replace(self, **changes).validate()

    @classmethod
    def from_dict(cls, values: dict | None) -> "Scenario":
        values = dict(values or {})
        known = {f.name for f in fields(cls)}
        for name in values:
            if name not in known:
                raise unknown("scenario", name, known)
        return cls(**values).validate()


@lru_cache(maxsize=1024)
def _resolved(scenario: Scenario, native_weight_dtype: str, native_expert_dtype: str,
              native_attention_dtype: str = "", native_fp8_scaling: str = "") -> Scenario:
    """`scenario` (weight_dtype 'native') resolved for a checkpoint of these dtypes (Scenario.for_model)."""
    sixteen = scenario.act_dtype if ELEMENT_BITS[scenario.act_dtype] == 16 else "bf16"
    dense = native_weight_dtype or sixteen
    expert = scenario.expert_weight_dtype or native_expert_dtype
    attention = scenario.attention_weight_dtype or native_attention_dtype
    scaling = native_fp8_scaling if dense == "fp8" and native_fp8_scaling else scenario.fp8_scaling
    return replace(scenario, weight_dtype=dense, expert_weight_dtype="" if expert == dense else expert,
                   attention_weight_dtype="" if attention == dense else attention, fp8_scaling=scaling)


def longest_seq_len(model, stage: str) -> int | None:
    """The longest seq_len `model`'s context takes at `stage` (prefill: max_position; decode, whose step writes one
    token more: max_position - 1); None for a model without a recorded context."""
    return model.max_position - (1 if stage == "decode" else 0) if model.max_position else None


def check_context(model, stage: str, scenario: Scenario) -> None:
    """Refuse a scenario longer than the model's context: prefill needs seq_len positions, decode seq_len + 1.

    A model with a longer usable context (RoPE scaling) can raise `max_position` in its config entry."""
    longest = longest_seq_len(model, stage)
    if longest is not None and scenario.seq_len > longest:
        raise RooflineInputError(
            f"scenario.seq_len: {scenario.seq_len} is not allowed for {model.key} {stage}: it needs "
            f"{scenario.seq_len + model.max_position - longest} positions and the model has {model.max_position} "
            f"(max_position); use seq_len <= {longest} or override max_position")


def check_stage(stage: str) -> str:
    if stage not in STAGES:
        raise unknown("stage", stage, STAGES)
    return stage


def scenario_for_model(scenario: dict, model: dict) -> dict:
    """A scenario dict (results/specs.json) as `model`'s jobs ran it: weight_dtype 'native' resolved (both given
    as the dicts of specs.json; figures and reports of one model read them)."""
    return asdict(Scenario(**scenario).for_model(ModelSpec(**model)))
