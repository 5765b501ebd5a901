"""Data types: storage size and the rule that picks which peak a kernel computes at.

Rule for the compute dtype of a matmul with two operands (weight x activation, or K/V x activation):
the kernel dequantizes the narrower operand to the wider one and multiplies at the wider type's peak.
Equal widths compute at the activation's type. Hence W4A16 and W8A16 run at the 16-bit peak, W8A8 (int8 x int8)
at the int8 peak, FP8 weights with FP8 activations at the fp8 peak, and an fp8 KV cache with 16-bit activations
at the 16-bit peak. Non-matmul operators (norms, softmax, element-wise) compute at the activation type (16 bits
at least, next rule).

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
"""
from __future__ import annotations

from .errors import unknown

#: bytes per element; int4 packs two values per byte
DTYPE_BYTES: dict[str, float] = {
    "fp32": 4.0,
    "tf32": 4.0,  # stored as fp32; a compute mode only
    "fp16": 2.0,
    "bf16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
}

#: dtypes a tensor (weights, activations, KV cache) may be stored in
STORAGE_DTYPES = ("fp32", "fp16", "bf16", "fp8", "int8", "int4")

#: dtypes an accelerator may publish a dense peak for
PEAK_DTYPES = ("fp32", "tf32", "fp16", "bf16", "fp8", "int8", "int4")


def check_storage_dtype(option: str, dtype: str) -> str:
    """Return `dtype` if it is a storage dtype, else raise a one-line error naming `option`."""
    if dtype not in STORAGE_DTYPES:
        raise unknown(option, dtype, STORAGE_DTYPES)
    return dtype


def matmul_dtype(operand: str, activation: str) -> str:
    """The dtype a matmul of `operand` (weights or KV) by `activation` computes at (rule in the module docstring)."""
    return operand if DTYPE_BYTES[operand] > DTYPE_BYTES[activation] else activation


#: bytes per element below which a tensor counts as quantized (rule in the module docstring)
MIN_ACTIVATION_BYTES = 2.0


def unquantized_dtype(*candidates: str) -> str:
    """The first of `candidates` that is 16 bits or wider (the type a quantized scenario keeps), else bf16."""
    return next((dtype for dtype in candidates if DTYPE_BYTES[dtype] >= MIN_ACTIVATION_BYTES), "bf16")
