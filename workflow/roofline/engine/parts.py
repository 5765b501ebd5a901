"""Which dtype each part of the operator graph stores and computes at, beyond a scenario's three dtype fields
(the rules are roofline.engine.dtypes'): 16-bit activations outside GEMM inputs, the embedding table and lm_head,
the MoE routers (16 bits in every quantized checkpoint) and the attention projections (attention_weight_dtype)."""
from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

from .dtypes import DTYPE_BYTES, MIN_ACTIVATION_BYTES, matmul_dtype, unquantized_dtype
from .scenario import Scenario


class ScenarioDtypes(NamedTuple):
    """The dtypes a scenario computes and stores at, beyond its three fields (rules in roofline.engine.dtypes)."""

    gemm: str  # weight GEMMs: weight_dtype x act_dtype
    act16: str  # every activation but a GEMM's input, and the non-matmul operators' compute: 16 bits at least
    attention: str  # attention over the KV cache: kv_dtype x act16
    head_weight: str  # embedding table and lm_head: 16 bits at least unless quantize_embeddings
    head_input: str  # lm_head's input
    head: str  # lm_head's compute: head_weight x head_input
    router_weight: str  # MoE routers: 16 bits at least (every quantized checkpoint leaves them unquantized)


@lru_cache(maxsize=1024)
def scenario_dtypes(sc: Scenario) -> ScenarioDtypes:
    """Which dtype each part of the graph uses: 8-bit activations only as GEMM inputs; embedding table and lm_head
    at 16 bits unless sc.quantize_embeddings (rules in roofline.engine.dtypes)."""
    act16 = unquantized_dtype(sc.act_dtype, sc.kv_dtype, sc.weight_dtype)
    if sc.quantize_embeddings:
        head_weight, head_input = sc.weight_dtype, sc.act_dtype
    else:
        head_weight, head_input = unquantized_dtype(sc.weight_dtype, act16), act16
    return ScenarioDtypes(gemm=matmul_dtype(sc.weight_dtype, sc.act_dtype), act16=act16,
                          attention=matmul_dtype(sc.kv_dtype, act16), head_weight=head_weight, head_input=head_input,
                          head=matmul_dtype(head_weight, head_input),
                          router_weight=unquantized_dtype(sc.weight_dtype, act16))


#: the attention blocks' weight projections, stored at Scenario.attention_weight_dtype
ATTENTION_PROJECTIONS = frozenset((
    "q_proj", "k_proj", "v_proj", "o_proj", "q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj", "q_absorb",
    "out_absorb", "in_proj_qkvz", "in_proj_ba", "out_proj", "indexer_wq_b", "indexer_wk", "indexer_weights_proj"))
#: MoE routers and Qwen's shared-expert gate, 16-bit in every quantized checkpoint (DeepSeek-V3's fp8 one and
#: NVIDIA's NVFP4 ones: the gate is no Linear there or in exclude_modules; Qwen3's FP8 ones: modules_to_not_convert)
ROUTERS = frozenset(("router", "shared_expert_gate"))


def weight_part(name: str) -> str:
    """Which weights the (non-expert) weight GEMM `name` belongs to: router, attention or dense."""
    return "router" if name in ROUTERS else "attention" if name in ATTENTION_PROJECTIONS else "dense"


def part_weight_dtype(name: str, sc: Scenario) -> str:
    """Storage dtype of the weights of the (non-expert) weight GEMM `name`: the routers' 16 bits, the attention
    projections' attention_weight_dtype, the scenario's weight_dtype elsewhere."""
    part = weight_part(name)
    if part == "router":
        return scenario_dtypes(sc).router_weight
    return sc.attention_weights_dtype if part == "attention" else sc.weight_dtype


def part_gemm(sc: Scenario, dtype: str) -> tuple[str, str]:
    """(compute dtype, input dtype) of a non-expert weight GEMM whose weights are stored at `dtype`: the scenario's
    (act_dtype inputs) at weight_dtype; a part kept at 16 bits or more in a quantized scenario (routers, 16-bit
    attention) runs an unquantized GEMM on 16-bit inputs."""
    act = sc.act_dtype
    if dtype != sc.weight_dtype and DTYPE_BYTES[dtype] >= MIN_ACTIVATION_BYTES:
        act = scenario_dtypes(sc).act16
    return matmul_dtype(dtype, act), act


def gemm_input_dtype(name: str, sc: Scenario) -> str:
    """The dtype a weight GEMM `name` reads its input at: lm_head's head_input, the experts' act_dtype, a part kept
    at 16 bits or more in a quantized scenario 16-bit (part_gemm), act_dtype elsewhere."""
    if name == "lm_head":
        return scenario_dtypes(sc).head_input
    if name.startswith("expert_"):
        return sc.act_dtype
    return part_gemm(sc, part_weight_dtype(name, sc))[1]
