"""Data types: storage size and the rule that picks which peak a kernel computes at.

Storage: bytes per element include the block scales a format carries. `nvfp4` = e2m1 (4 bits) + one fp8 (e4m3)
scale per 16 elements = 4.5 bits; `mxfp4` (OCP microscaling) = e2m1 + one 8-bit (e8m0) scale per 32 elements =
4.25 bits. `int4` weights are group-quantized: 4 bits + one fp16 scale per `weight_group_size` elements (scenario
field, default 128: 4 + 16/128 = 4.125 bits; see `weight_bytes_per_element`); int4 activations and KV caches are
counted at 4 bits flat. `fp8` block-scaled checkpoints (DeepSeek-V3, Kimi-K2: one fp32 scale per 128 x 128 block,
0.002 bits per element) are counted at 8 bits.

Rule for the compute dtype of a matmul with two operands (weight x activation, or K/V x activation): the kernel
dequantizes the narrower operand to the wider one and multiplies at the wider type's peak. Equal widths compute at the
activation's type. Hence W4A16 and W8A16 run at the 16-bit peak, W8A8 (int8 x int8) at the int8 peak, FP8 weights with
FP8 activations at the fp8 peak, and an fp8 KV cache with 16-bit activations at the 16-bit peak (a known limit:
SGLang's FlashAttention-3 and TensorRT-LLM's fp8 context kernels quantize the queries and run attention over an fp8
cache at the fp8 peak, so for their long prefills this bound is not strict; the README lists the measured kernels that
beat it). The 4-bit floating-point formats compute at the `fp4` peak (PEAK_OF): W4A4 NVFP4 (or MXFP4) on Blackwell or
MI355X runs at fp4, while MXFP4 weights with 16-bit or fp8 activations (gpt-oss on Hopper, vLLM's Marlin/Triton MXFP4
kernels) compute at the activation's peak. Widths compare by element bits (4 for every 4-bit format), not by the scale
overhead. Non-matmul operators (norms, softmax, element-wise) compute at the activation type (16 bits at least, next
rule).

Rule for quantized scenarios (tensors stored narrower than 16 bits), as FP8 (W8A8), SmoothQuant and GPTQ/AWQ
engines run them:
* An act_dtype narrower than 16 bits is the dtype of GEMM activation operands only: the input a weight GEMM reads.
  Every other activation tensor stays at the scenario's 16-bit type (unquantized_dtype of act, KV and weight dtypes,
  else bf16), in DRAM and in compute: GEMM outputs, the residual stream, norms, softmax, RoPE and the other
  element-wise operators, attention's Q, K, V, scores and output, the input of the KV-cache copy. The KV cache is
  at kv_dtype, quantized only when asked; attention over an 8-bit cache dequantizes it (the matmul rule above).
  NB: the tensor a GEMM reads at 8 bits is written at 16 bits by its producer (a norm, the activation function,
  attention); engines fuse that cast into the producer, which would halve that one write.
* A weight_dtype narrower than 16 bits quantizes the weights of the transformer blocks; the embedding table and
  lm_head stay at 16 bits (GPTQ/AWQ and FP8 checkpoints ship them unquantized) unless the scenario sets
  quantize_embeddings; lm_head then runs as a 16-bit GEMM, its input at 16 bits too.

`native` (scenario.weight_dtype) is not a storage dtype: it stands for the model checkpoint's own dtypes and is
resolved per model by `Scenario.for_model` (fp8 linears of DeepSeek-V3/Kimi-K2, MXFP4 experts of gpt-oss; 16-bit
where the checkpoint is not quantized).
"""
from __future__ import annotations

from .errors import unknown

#: bytes per element, block scales included; int4 packs two values per byte (its group scales: see above)
DTYPE_BYTES: dict[str, float] = {
    "fp32": 4.0,
    "tf32": 4.0,  # stored as fp32; a compute mode only
    "fp16": 2.0,
    "bf16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
    "nvfp4": (4 + 8 / 16) / 8,  # 4.5 bits: e2m1 + an fp8 e4m3 scale per 16 elements
    "mxfp4": (4 + 8 / 32) / 8,  # 4.25 bits: e2m1 + an e8m0 scale per 32 elements
    "fp4": 0.5,  # a compute mode only (the peak of the two formats above)
}

#: bits of one element without its scales: the width the compute-dtype rule compares
ELEMENT_BITS: dict[str, int] = {"fp32": 32, "tf32": 32, "fp16": 16, "bf16": 16, "fp8": 8, "int8": 8, "int4": 4,
                                "nvfp4": 4, "mxfp4": 4, "fp4": 4}

#: dtypes a tensor (weights, activations, KV cache) may be stored in
STORAGE_DTYPES = ("fp32", "fp16", "bf16", "fp8", "int8", "int4", "nvfp4", "mxfp4")

#: what scenario.weight_dtype accepts: a storage dtype or `native` (the checkpoint's own, per model)
WEIGHT_DTYPES = (*STORAGE_DTYPES, "native")
#: how fp8 weights are scaled: one scale per tensor (ModelOpt's and most FP8 checkpoints), or per 128 x 128 block
#: with activations quantized per token and 128 channels (DeepSeek-V3's, Qwen3's own FP8 checkpoints)
FP8_SCALINGS = ("tensor", "block")

#: dtypes an accelerator may publish a dense peak for
PEAK_DTYPES = ("fp32", "tf32", "fp16", "bf16", "fp8", "int8", "int4", "fp4")

#: the peak a storage dtype computes at, where it differs from its own name
PEAK_OF = {"nvfp4": "fp4", "mxfp4": "fp4"}

#: default number of int4 weights that share one fp16 scale (GPTQ/AWQ's group size)
DEFAULT_GROUP_SIZE = 128
#: bytes of one int4 group scale (fp16)
GROUP_SCALE_BYTES = 2


def check_storage_dtype(option: str, dtype: str, allowed: tuple[str, ...] = STORAGE_DTYPES) -> str:
    """Return `dtype` if it is in `allowed` (storage dtypes), else raise a one-line error naming `option`."""
    if dtype not in allowed:
        raise unknown(option, dtype, allowed)
    return dtype


def weight_bytes_per_element(dtype: str, group_size: int = DEFAULT_GROUP_SIZE) -> float:
    """Bytes per stored weight: DTYPE_BYTES, plus for int4 one fp16 scale per `group_size` weights.
    E.g. int4, group 128: 0.5 + 2/128 = 0.515625 byte (4.125 bits)."""
    extra = GROUP_SCALE_BYTES / group_size if dtype == "int4" else 0.0
    return DTYPE_BYTES[dtype] + extra


def peak_dtype(dtype: str) -> str:
    """The peak a tensor stored in `dtype` computes at (non-matmul operators at the activation's): fp4 for the
    4-bit float formats, else the dtype itself."""
    return PEAK_OF.get(dtype, dtype)


def matmul_dtype(operand: str, activation: str) -> str:
    """The peak dtype a matmul of `operand` (weights or KV) by `activation` computes at (rule in the module
    docstring): the wider operand by element bits, the activation's on a tie, 4-bit floats at `fp4`."""
    wider = operand if ELEMENT_BITS[operand] > ELEMENT_BITS[activation] else activation
    return peak_dtype(wider)


#: bytes per element below which a tensor counts as quantized (rule in the module docstring)
MIN_ACTIVATION_BYTES = 2.0


def unquantized_dtype(*candidates: str) -> str:
    """The first of `candidates` that is 16 bits or wider (the type a quantized scenario keeps), else bf16."""
    return next((dtype for dtype in candidates if DTYPE_BYTES[dtype] >= MIN_ACTIVATION_BYTES), "bf16")


def state_bytes_per_element(act_dtype: str) -> float:
    """Bytes per element of a linear-attention layer's recurrent and conv state: the activations' float of 16 bits
    or more, whatever the KV cache's dtype (vLLM sizes it by mamba_ssm_cache_dtype, auto = the model's dtype; no
    framework stores it in 8 or 4 bits)."""
    return DTYPE_BYTES[unquantized_dtype(act_dtype)]
