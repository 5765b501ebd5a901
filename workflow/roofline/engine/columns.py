"""Column names of every table the tool writes, defined once (the README lists them with units)."""

#: Per-operator table: one row per operator, values for ONE instance; multiply by `count` for the pass.
OP_COLUMNS = (
    "model",  # model key
    "gpu",  # accelerator key
    "stage",  # prefill | decode
    "op",  # operator name (Hugging Face module name where one exists)
    "op_class",  # gemm | attention | norm | elementwise | embedding | communication
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
    "t_s",  # s = max(t_compute_s, t_memory_s, t_network_s)
    "bound",  # memory | compute | network: the largest of the three times
    "bytes_network",  # byte on this device's link (communication rows; 0 elsewhere), not DRAM traffic
    "network_bandwidth_bytes_per_s",  # byte/s, per direction, of the link the collective crosses; across scale-up
    # domains the effective bandwidth of both links (roofline.engine.collectives) (NaN elsewhere)
    "t_network_s",  # s = link latency + bytes_network / network_bandwidth (0 for non-communication rows)
)

#: Extra per-operator columns in the pipeline's parquet files (after OP_COLUMNS).
OP_EXTRA_COLUMNS = ("compute_dtype",)

#: Scenario columns appended to every pipeline table.
SCENARIO_COLUMNS = (
    "batch", "seq_len", "weight_dtype", "act_dtype", "kv_dtype", "attention", "logits", "expert_routing", "mla_mode",
    "memory_utilization",
    "quantize_embeddings",
    "expert_weight_dtype", "weight_group_size", "attention_weight_dtype", "fp8_scaling",
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
    "weight_bytes",  # byte, all weights, each part at its dtype (total parameters, the whole deployment)
    "kv_cache_bytes",  # byte, KV cache of the batch at the end of the stage (the whole deployment)
    "activation_bytes",  # byte, peak activations (largest operator's inputs + outputs)
    "footprint_bytes",  # byte, the busiest device's weights + KV cache + activations
    "memory_bytes",  # byte, one device's capacity (real bytes: the vendor's "80 GB" is 80 GiB)
    "fits",  # footprint_bytes <= usable_memory_bytes
    "total_params",  # parameters
    "active_params",  # parameters touched per token (MoE: top-k routed + shared experts)
    "ridge_flops_per_byte",  # FLOP/byte, ridge of the GEMM compute dtype
    "critical_batch",  # decode batch at which the weight GEMMs reach the ridge (NaN if never)
    "critical_tokens_per_expert",  # MoE: tokens per routed expert at critical_batch = batch x top_k / experts touched
    "devices",  # accelerators of the deployment = tp x pp
    "tp", "pp", "ep",  # tensor-, pipeline- and expert-parallel degrees
    "attention_dp",  # attention data-parallel over the tp devices (DeepSeek-style MLA serving)
    "deployment",  # text: "4 x H100 SXM5 80GB, TP 4"
    "weight_bytes_per_device",  # byte, weights the busiest device holds
    "kv_cache_bytes_per_device",  # byte, KV cache the busiest device holds
    "usable_memory_bytes",  # byte, memory_utilization x memory_bytes
    "tokens_per_s_per_device",  # token/s, tokens_per_s / devices
    "t_network_s",  # s, sum of t_network_s x count (link time of the collectives)
    "network_share",  # fraction of t_s spent in communication operators
    "bound",  # memory | compute | network: the roof the stage spends most of its time under (roofline.dominant_bound)
)

#: Treatments: what each optimization buys for one (model, gpu, stage) baseline (roofline.engine.treatments).
TREATMENT_COLUMNS = (
    "model", "gpu", "stage",
    "treatment",  # key: fusion | flash_attention | weight_int8 | weight_int4 | kv_int8 | kv_fp8 | fp8_compute |
    # more_devices | overlap_communication | batching | batching_kv_fp8 (batching with an fp8 KV cache)
    "label",  # human description of the change, e.g. "weights int4 (W4A16)"
    "helps",  # which bottleneck it attacks: memory (fewer bytes) | compute (more FLOP/s, fewer FLOPs) | both | network
    "applicable",  # False when the treatment does not apply (already in place, device lacks the dtype, ...)
    "note",  # why not applicable, or the condition it needs (e.g. memory for the larger batch)
    "baseline_t_s",  # s, stage time of the configured scenario
    "t_s",  # s, stage time with the treatment
    "speedup",  # baseline_t_s / t_s for latency; for batching (and batching_kv_fp8): tokens/s ratio
    "baseline_tokens_per_s", "tokens_per_s",  # token/s
    "baseline_memory_bound_share", "memory_bound_share",  # fraction of time in memory-bound operators
    "bound",  # dominant bound after the treatment: memory | compute (by share of time)
    "footprint_bytes",  # byte, memory footprint after the treatment
    "fits",  # footprint fits device memory
    "batch",  # batch used (differs from the scenario only for batching)
    "usable_memory_bytes",  # byte, what the footprint is held against (memory_utilization x one device's memory)
)

#: Sweeps: totals along one axis, the other scenario fields fixed (roofline.engine.sweeps).
SWEEP_COLUMNS = (
    "model", "gpu", "stage",
    "sweep",  # batch | seq_len: which axis varies
    "batch", "seq_len",
    "t_s",  # s, stage time (decode: time per output token)
    "tokens_per_s",  # token/s
    "memory_bound_share",
    "gemm_intensity",  # FLOP/byte of the weight GEMMs together
    "attention_intensity",  # FLOP/byte of the attention operators together
    "attention_time_share",  # fraction of stage time in attention operators
    "footprint_bytes",  # byte: weights + KV cache + activations
    "fits",  # footprint fits device memory
    "critical_batch",  # decode batch where the weight GEMMs reach the ridge (same for every row of a sweep)
)

#: Deployment search: one row per candidate deployment (roofline.serving.planner; `roofline plan`, results/plans/).
PLAN_COLUMNS = (
    "model", "gpu",
    "devices",  # devices in the deployment (tp x pp)
    "tp", "pp", "ep",  # tensor-, pipeline- and expert-parallel degrees
    "attention_dp",  # data-parallel attention (MoE: ep = tp)
    "batch",  # concurrent requests
    "weight_dtype", "act_dtype", "kv_dtype", "attention",
    "isl", "osl",  # prompt and output tokens per request
    "seq_len",  # tokens in the KV cache at the mean decode step: isl + osl // 2
    "ttft_s",  # s, prefill of one request of isl tokens
    "tpot_s",  # s, mean time between a user's tokens (the decode step; plus prefills when interleaved)
    "decode_step_s",  # s, one decode step at batch and seq_len (the engine's tpot_s)
    "tokens_per_s",  # token/s, whole deployment: batch / tpot_s
    "tokens_per_s_per_device",  # token/s: tokens_per_s / devices
    "tokens_per_s_per_user",  # token/s: 1 / tpot_s
    "footprint_bytes",  # byte, the busiest device's footprint with every request at its full isl + osl tokens
    "usable_memory_bytes",  # byte, memory_utilization x one device's memory: what the footprint is compared with
    "fits",  # decode at the full length and the one-request prefill both fit
    "bound",  # memory | compute | network: the roof the decode step spends most of its time under
    "memory_bound_share",  # fraction of the decode step in memory-bound operators
    "network_share",  # fraction of the decode step in communication operators
    "ttft_expected_s",  # s, expected twin of ttft_s: the prefill as the framework serves it (roofline.estimate)
    "tpot_expected_s",  # s, expected twin of tpot_s (the decode step; plus prefills when interleaved)
    "tokens_per_s_expected",  # token/s, whole deployment (step model: batch / tpot_expected_s)
    "tokens_per_s_per_device_expected",  # token/s, tokens_per_s_expected / devices
    "tokens_per_s_per_user_expected",  # token/s, 1 / tpot_expected_s
    "estimate",  # calibrated | partial | default: how much of the expected times the device's own tables back
    # serving framework whose measured kernels and step model the expected times use (step model: none without a
    # table); the serving model's rows: the framework served under (scheduler, host time and kernel tables)
    "framework",
    "calibration",  # the table they rest on (shipped file with package and framework versions, or one's own)
    "deployment",  # text, e.g. "4 x H100 SXM5 80GB, TP 4"
)

#: Extra columns of results/plans/{model}.parquet (each device's frontier, after PLAN_COLUMNS).
PLAN_TABLE_EXTRA_COLUMNS = (
    "on_frontier",  # also on the frontier across every device
    "recommended",  # the best plan of its device: most tokens/s per device meeting the targets
    "chosen",  # the best recommended plan over every device (on expected times: among devices with measured kernels
    # of their own where some have them; roofline.serving.marks)
)

#: Calibrated estimates (roofline.estimate), after OP_COLUMNS in every per-operator table.
OP_EXPECTED_COLUMNS = (
    "t_expected_s",  # s, expected time of one instance run alone (its kernel, launch included); >= t_s
    "estimate",  # calibrated (measured on this device under its framework) | default (a fallback)
)

#: Calibrated estimates of the totals, after TOTAL_COLUMNS (roofline.estimate.step: the step as a framework serves it).
TOTAL_EXPECTED_COLUMNS = (
    "ttft_expected_s",  # s, expected time to first token (prefill; NaN for decode)
    "tpot_expected_s",  # s, expected time per output token (decode; NaN for prefill)
    "tokens_per_s_expected",  # token/s, the same tokens as tokens_per_s over the expected time
    "estimate",  # calibrated | partial | default: GEMM, attention, MoE and communication from the device's tables
    "framework",  # serving framework whose kernels and step model the expected times use (none: no table)
    "calibration",  # the table they rest on: shipped file (package and framework versions) or one's own file name
)

#: Cost and energy (roofline.engine.cost), after the expected columns of the totals (TOTAL_EXPECTED_COLUMNS) and
#: after PLAN_COLUMNS in the plan rows: tokens are the row's (prefill: prompt tokens; decode and plans: output tokens).
COST_COLUMNS = (
    "cost_per_million_tokens",  # USD per 1e6 tokens at the bound's throughput: a lower bound on cost (NaN: no price)
    "cost_per_million_tokens_expected",  # USD per 1e6 tokens at the expected throughput (NaN: no price)
    "energy_per_token_j",  # J per token = power x devices / expected tokens/s (NaN: no tdp_w or power_w)
    "energy_basis",  # "tdp (upper estimate)": the datasheet TDP, an upper estimate at that speed | "measured power"
)

#: Your own measured runs beside ours (roofline.serving.measured; results/measurements/{model}.parquet): per quantity
#: the bound, the expected value, the measurement and the error expected / measured - 1.
MEASUREMENT_COLUMNS = (
    "model", "gpu",  # the config's keys (a run naming neither is listed in results/measurements/rows.csv)
    "framework",  # as the measurement says (vllm, sglang, trtllm, ...); "" = not given
    "source",  # where the run came from: "runs.csv line 4", "bench.json result 1"
    "tp", "pp", "ep",  # the measured deployment's parallel plan
    "devices",  # tp x pp
    "deployment",  # text, e.g. "4 x H100 SXM5 80GB, TP 4"
    "weight_dtype", "kv_dtype",  # the dtypes it is predicted at (the run's, else the config scenario's)
    "isl", "osl",  # prompt and output tokens per request
    "concurrency",  # requests in flight
    "ttft_s", "ttft_expected_s", "ttft_measured_s",  # s, time to first token: bound, expected, measured
    "ttft_error",  # ttft_expected_s / ttft_measured_s - 1
    "tpot_s", "tpot_expected_s", "tpot_measured_s",  # s, time per output token
    "tpot_error",
    "tokens_per_s", "tokens_per_s_expected", "tokens_per_s_measured",  # token/s, output tokens of the deployment
    "tokens_per_s_error",
    "fits",  # the engine's fit of the predicted deployment (False when not predicted)
    "status",  # predicted | why not (a model or gpu the config lacks)
    "beyond_bound",  # the quantities measured beyond their bound ("ttft, tpot": faster than the hardware allows,
    # a unit slip or another deployment than the row says); "" = none
)

#: Comparison across runs (roofline.pipeline.compare; `roofline compare`, results/compare.csv): one row per value
#: that moved by more than the threshold, or per (model, gpu, stage) only one run has.
COMPARE_COLUMNS = (
    "table",  # totals | plans (the recommended plan of each gpu)
    "model", "gpu",
    "stage",  # prefill | decode ("" for plans)
    "column",  # the column that moved ("" for added and removed rows)
    "old", "new",  # its values in the old and the new run (numbers in SI units, or text)
    "change",  # new / old - 1 (NaN for text; inf when old is 0)
    "what",  # moved (beyond the threshold) | changed (text, or a value that appeared or vanished) | added | removed
)

#: Calibration table (roofline measure; data/calibrations/*.csv): one row per measured kernel or ceiling.
CALIBRATION_COLUMNS = (
    "device",  # device name as the framework reports it (e.g. "NVIDIA H200")
    "gpu",  # catalog key the bound_s column is computed for ("" = the measured ceilings of `device`)
    "source",  # measured (timed on `device`) | derived (rescaled from another device's measurements)
    # gemm | attention | moe | norm | elementwise | embedding | communication | ceiling (copy/read bandwidth, square
    # matmul)
    "op_class",
    "op",  # kernel: matmul, qkv_proj, sdpa_prefill, sdpa_decode, rmsnorm, layernorm, silu_mul, residual_add, copy, ...
    "dtype",  # compute dtype whose peak bounds the kernel
    "m", "n", "k",  # GEMM [m x k] @ [k x n]; element-wise ops: m rows x n channels; 0 where not applicable
    "batch", "q_len", "kv_len",  # attention: sequences, query tokens per sequence, keys attended; 0 elsewhere
    "heads", "kv_heads", "head_dim",  # attention heads (query, key/value) and head size; 0 elsewhere
    "flops",  # FLOP (engine formulas, roofline.engine.formulas)
    "bytes",  # byte, compulsory DRAM traffic (engine formulas)
    "measured_s",  # s, median kernel time
    "bound_s",  # s, the engine's roofline bound of the same kernel on `gpu`
    "provenance",  # how it was measured or derived (tool, timer, versions, source file)
    "framework",  # serving framework whose kernels were timed: trtllm | vllm | sglang ("" = not a framework's)
    "weight_dtype",  # GEMM and MoE rows: the weights' storage dtype ("" elsewhere)
    "kv_dtype",  # attention rows: the KV cache's storage dtype ("" elsewhere)
    "group_size",  # int4 weights per fp16 scale (0 where not group-quantized)
    "experts", "top_k",  # MoE rows: routed experts of the layer and experts per token (0 elsewhere)
    "span",  # communication rows: devices the collective spans; MoE rows: the expert-parallel degree (1 elsewhere)
)

#: Served predictions (roofline.serving; `roofline serve`, results/serving/): one row per deployment and workload.
#: Bounds (ttft_s, tpot_s, tokens_per_s*) are roofline limits no run can beat; `_expected` columns are the
#: estimator's times with the framework's scheduling and host time.
SERVE_COLUMNS = (
    "mode",  # aggregated | disaggregated
    "model", "gpu",
    "deployment",  # text: the deployment, or "prefill: ...; decode: ..." naming both pools
    "devices",  # accelerators of the whole deployment (both pools)
    "tp", "pp", "ep", "attention_dp",  # the (decode pool's) parallel plan
    "framework",  # vllm | sglang | trtllm: scheduler defaults and host time
    "weight_dtype", "act_dtype", "kv_dtype",
    "concurrency",  # closed-loop users (NaN under a request rate)
    "request_rate",  # request/s of an open-loop workload (NaN under a concurrency)
    "isl", "osl",  # prompt and output tokens per request
    "prefix_hit",  # share of prompt tokens found in the prefix cache
    "length_spread",  # requests' lengths uniform over isl and osl x (1 +- it); 0: all exactly (fixed-length benchmark)
    "max_batched_tokens",  # tokens one step may compute: per attention replica under DP attention (TensorRT-LLM,
    # vLLM; SGLang: the whole engine's), one request's prompt at most this many per step
    "ttft_s",  # s, bound: the request's own prompt at the roofline (disaggregated: plus the KV transfer)
    "tpot_s",  # s, bound: the roofline of the steps a token waits for (prompts fused evenly)
    "ttft_expected_s",  # s, expected time to first token, queueing included
    "tpot_expected_s",  # s, expected time per output token, prompt chunks and host time included
    "e2e_latency_s",  # s, bound: ttft_s + (osl - 1) x tpot_s
    "e2e_latency_expected_s",  # s, ttft_expected_s + (osl - 1) x tpot_expected_s
    "tokens_per_s",  # token/s, bound: output tokens of the whole deployment
    "tokens_per_s_expected",  # token/s, expected output tokens of the whole deployment
    "tokens_per_s_per_device",  # token/s, tokens_per_s / devices
    "tokens_per_s_per_device_expected",  # token/s, tokens_per_s_expected / devices
    "tokens_per_s_per_user",  # token/s, bound: 1 / tpot_s
    "tokens_per_s_per_user_expected",  # token/s, 1 / tpot_expected_s
    "requests_per_s",  # request/s, bound: tokens_per_s / osl
    "requests_per_s_expected",  # request/s completed
    "decode_batch_expected",  # sequences decoding in a step, on average
    "kv_capacity_requests",  # requests held at once (expected): the KV cache's, at most max_num_seqs
    "kv_cache_utilization",  # requests in flight / kv_capacity_requests
    "fits",  # the cache holds every request in flight (no user waits for a slot)
    "keeps_up",  # the deployment keeps up with the offered load (always True for a concurrency)
    "spec_method",  # mtp | eagle | draft | ngram | none
    "accepted_tokens_per_step",  # tokens a (verify) step yields per sequence: 1 without speculation
    "prefill_workers", "decode_workers",  # disaggregated pools (0 when aggregated)
    "kv_transfer_s",  # s, one prompt's KV cache from the prefill to the decode pool (0 when aggregated)
    "limited_by",  # disaggregated: the pool that sets the rate (prefill | decode); aggregated: none
    "estimate",  # calibrated | partial | default: how much of the step times the device's own tables back
    "calibration",  # the table the expected step times rest on (the run's framework's; roofline.estimate.lookup)
    "expert_weight_dtype",  # the MoE experts' weights (weight_dtype unless set apart)
    "attention_weight_dtype",  # the attention projections' weights (weight_dtype unless set apart)
    "fp8_scaling",  # tensor | block: how fp8 weights are scaled (the expected times' GEMM kernels)
    "attention_dp_balance",  # trtllm's attention-DP balancing: "TIMEOUT,WAIT" steps, or off
    "batch_wait",  # trtllm's batch waiting without attention DP: "STEPS,RATIO" (of max_num_tokens), or off
    "max_running",  # --max-running as given: sequences one engine (disaggregated: a decode worker) runs at once, as
    # the framework counts its setting; 0: the framework's own cap (kv_capacity_requests: what the engines hold)
)

#: Extra columns of a served plan row (`roofline plan` on the serving model), after PLAN_COLUMNS.
PLAN_SERVING_COLUMNS = (
    "mode",  # aggregated | disaggregated
    "prefill_workers",  # disaggregated: prefill instances (0 when aggregated)
    "prefill_tp", "prefill_pp", "prefill_ep", "prefill_attention_dp",  # the prefill instances' plan (0 when aggregated)
    "decode_workers",  # disaggregated: decode instances of the tp/pp/ep plan (0 when aggregated)
    "kv_transfer_s",  # s, one prompt's KV cache from prefill to decode (0 when aggregated)
    "limited_by",  # disaggregated: prefill | decode, the pool that sets the rate; aggregated: none
    "requests_per_s",  # request/s, bound: tokens_per_s / osl
    "requests_per_s_expected",  # request/s
    "e2e_latency_s",  # s, bound: ttft_s + (osl - 1) x tpot_s
    "e2e_latency_expected_s",  # s, ttft_expected_s + (osl - 1) x tpot_expected_s
    "kv_capacity_requests",  # requests held at once (expected): the KV cache's, at most max_num_seqs
    "prefix_hit",  # share of prompt tokens found in the prefix cache
    "length_spread",  # requests' lengths uniform over isl and osl x (1 +- it); 0: all exactly (fixed-length benchmark)
    "spec_method",  # speculative decoding method, or none
    "accepted_tokens_per_step",  # tokens a (verify) step yields per sequence
    "attention_weight_dtype",  # the candidate's attention projections' weights (weight_dtype unless set apart)
    "fp8_scaling",  # tensor | block: how fp8 weights are scaled (the expected times' GEMM kernels)
    "attention_dp_balance",  # trtllm's attention-DP balancing: "TIMEOUT,WAIT" steps, or off
    "batch_wait",  # trtllm's batch waiting: "STEPS,RATIO" where the candidate holds prompts (aggregated, no DP), or off
)
