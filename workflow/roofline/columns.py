"""Column names of every table the tool writes, defined once (the README lists them with units)."""

#: Per-operator table: one row per operator, values for ONE instance; multiply by `count` for the pass.
OP_COLUMNS = (
    "model",  # model key
    "gpu",  # accelerator key
    "stage",  # prefill | decode
    "op",  # operator name (Hugging Face module name where one exists)
    "op_class",  # gemm | attention | norm | elementwise | embedding
    "count",  # instances per forward pass (prefill pass or one decode step)
    "flops",  # FLOP
    "bytes_weight",  # byte, weights (and biases) read
    "bytes_act_read",  # byte, activations read
    "bytes_act_write",  # byte, activations written
    "bytes_kv_read",  # byte, KV cache read
    "bytes_kv_write",  # byte, KV cache written
    "bytes",  # byte, sum of the five above
    "intensity",  # FLOP/byte = flops / bytes
    "peak_flops_per_s",  # FLOP/s, dense peak of the op's compute dtype
    "bandwidth_bytes_per_s",  # byte/s
    "attainable_flops_per_s",  # FLOP/s = min(peak, intensity x bandwidth)
    "t_compute_s",  # s = flops / peak
    "t_memory_s",  # s = bytes / bandwidth
    "t_s",  # s = max(t_compute_s, t_memory_s)
    "bound",  # memory | compute
)

#: Extra per-operator columns in the pipeline's parquet files (after OP_COLUMNS).
OP_EXTRA_COLUMNS = ("compute_dtype",)

#: Scenario columns appended to every pipeline table.
SCENARIO_COLUMNS = (
    "batch", "seq_len", "weight_dtype", "act_dtype", "kv_dtype", "attention", "logits", "expert_routing", "mla_mode",
)

#: Totals per (model, gpu, stage, scenario).
TOTAL_COLUMNS = (
    "model", "gpu", "stage",
    "flops",  # FLOP, sum of flops x count
    "bytes",  # byte, sum of bytes x count
    "intensity",  # FLOP/byte, flops / bytes of the whole pass
    "t_compute_s",  # s, sum of t_compute_s x count
    "t_memory_s",  # s, sum of t_memory_s x count
    "t_s",  # s, sum of t_s x count (no overlap between operators)
    "ttft_s",  # s, time to first token (prefill; NaN for decode)
    "tpot_s",  # s, time per output token = one decode step (decode; NaN for prefill)
    "tokens_per_s",  # token/s: decode batch / tpot; prefill prompt tokens / ttft
    "memory_bound_share",  # fraction of t_s spent in memory-bound operators
    "compute_utilization",  # fraction of t_s the compute units would be busy: t_compute / t
    "weight_bytes",  # byte, all weights at the weight dtype (total parameters)
    "kv_cache_bytes",  # byte, KV cache of the batch at the end of the stage
    "activation_bytes",  # byte, peak activations (largest operator's inputs + outputs)
    "footprint_bytes",  # byte, weights + KV cache + activations
    "memory_bytes",  # byte, device capacity
    "fits",  # footprint_bytes <= memory_bytes
    "total_params",  # parameters
    "active_params",  # parameters touched per token (MoE: top-k routed + shared experts)
    "ridge_flops_per_byte",  # FLOP/byte, ridge of the GEMM compute dtype
    "critical_batch",  # decode batch at which the weight GEMMs reach the ridge (NaN if never)
)
