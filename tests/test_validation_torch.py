"""Validation of the engine's FLOP counts against the real Hugging Face implementations, run by PyTorch.

For each supported architecture a tiny model (2-4 layers, hidden 64) is built from a random config on the CPU,
with eager attention and the eager (per-expert loop) MoE implementation. Its config is written to a temporary
config.json and loaded with `roofline.models.model_from_hf_config`, exactly as a user would. FLOPs are counted with
`torch.utils.flop_counter.FlopCounterMode` (matmul-class ops only: mm, addmm, bmm, baddbmm, ...; 2 FLOPs per
multiply-add, the engine's convention) for a prefill pass (batch B, S tokens) and for one decode step (one new
token per sequence, with the KV cache the prefill left behind).

The comparison is per module: each HF module's own FLOPs (its total minus its children's) are mapped to an engine
operator group (q_proj, ..., router, experts, attention = the matmuls inside the attention module = engine
qk_matmul + sv_matmul, lm_head). Every FLOP torch counts must land in a group, and each group must agree within 1%
(in practice exactly). The scenario is chosen to run what HF runs (eager attention, logits for all prompt tokens,
the MLA cache layout HF keeps); the differences of the engine's other modes are asserted with exact ratios in the
`test_known_difference_*` tests rather than tolerated.

Needs the optional dependency group `validation` (torch CPU build, transformers); skipped with a reason otherwise.
"""
from __future__ import annotations

import inspect
from collections import defaultdict
from functools import lru_cache

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install -e '.[validation]')")
transformers = pytest.importorskip("transformers",
                                   reason="transformers is not installed (pip install -e '.[validation]')")
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from roofline import formulas as f  # noqa: E402
from roofline.graph import attention_groups, build_operators  # noqa: E402
from roofline.models import kv_elements_per_token, model_from_hf_config, parameter_counts  # noqa: E402
from roofline.scenario import Scenario  # noqa: E402

B, S = 2, 12  # batch and prompt length (S > the sliding window below, so the window bites)
WINDOW = 8
VOCAB = 128

# Tiny configs, one per architecture; keys are HF model_type + the fields that differ from the class defaults.
_COMMON = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, vocab_size=VOCAB,
               max_position_embeddings=64)
ARCHS: dict[str, tuple[str, dict]] = {
    "llama-mha": ("llama", dict(_COMMON, intermediate_size=96, num_key_value_heads=4)),
    "llama-gqa": ("llama", dict(_COMMON, intermediate_size=96, num_key_value_heads=2)),
    "mistral-swa": ("mistral", dict(_COMMON, intermediate_size=96, num_key_value_heads=2, sliding_window=WINDOW)),
    "qwen2": ("qwen2", dict(_COMMON, intermediate_size=96, num_key_value_heads=2)),  # q/k/v biases
    "phi3-swa": ("phi3", dict(_COMMON, intermediate_size=96, num_key_value_heads=4, sliding_window=WINDOW,
                              pad_token_id=0)),  # fused qkv_proj and gate_up_proj
    "mixtral": ("mixtral", dict(_COMMON, intermediate_size=96, num_key_value_heads=2, num_local_experts=4,
                                num_experts_per_tok=2, sliding_window=None)),
    "qwen3-moe": ("qwen3_moe", dict(_COMMON, intermediate_size=96, num_key_value_heads=2, head_dim=24,
                                    num_experts=8, num_experts_per_tok=2, moe_intermediate_size=32,
                                    decoder_sparse_step=1, mlp_only_layers=[], norm_topk_prob=True)),
    # layer 1 and 3 MoE by decoder_sparse_step 2, layer 3 dense by mlp_only_layers -> 1 MoE + 3 dense layers
    "qwen3-moe-mixed": ("qwen3_moe", dict(_COMMON, num_hidden_layers=4, intermediate_size=96,
                                          num_key_value_heads=2, num_experts=4, num_experts_per_tok=2,
                                          moe_intermediate_size=32, decoder_sparse_step=2, mlp_only_layers=[3])),
    # MLA + MoE: q_lora path, nope 8 + rope 4 = 12 query/key dims, v 10, one leading dense layer, 1 shared expert
    "deepseek-v3": ("deepseek_v3", dict(_COMMON, num_hidden_layers=3, intermediate_size=96, num_key_value_heads=4,
                                        moe_intermediate_size=32, n_routed_experts=8, num_experts_per_tok=2,
                                        n_shared_experts=1, first_k_dense_replace=1, n_group=2, topk_group=1,
                                        q_lora_rank=24, kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=4,
                                        v_head_dim=10)),
    # DeepSeek-V2-Lite style MLA: no q_lora_rank -> a plain q_proj
    "deepseek-v3-noqlora": ("deepseek_v3", dict(_COMMON, num_hidden_layers=2, intermediate_size=96,
                                                num_key_value_heads=4, moe_intermediate_size=32,
                                                n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=2,
                                                first_k_dense_replace=0, n_group=1, topk_group=1, q_lora_rank=None,
                                                kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=4,
                                                v_head_dim=10)),
    "gpt2": ("gpt2", dict(n_embd=64, n_layer=2, n_head=4, n_positions=64, vocab_size=VOCAB)),
    "opt": ("opt", dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, ffn_dim=96, vocab_size=VOCAB,
                        max_position_embeddings=64, word_embed_proj_dim=64)),
    "falcon": ("falcon", dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, vocab_size=VOCAB,
                              multi_query=True, new_decoder_architecture=False, parallel_attn=True, bias=False,
                              alibi=False)),
    "falcon-new-arch": ("falcon", dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, vocab_size=VOCAB,
                                       new_decoder_architecture=True, num_kv_heads=2, parallel_attn=True,
                                       bias=True, alibi=False)),
    "gemma2": ("gemma2", dict(_COMMON, num_hidden_layers=3, intermediate_size=96, num_key_value_heads=2,
                              head_dim=16, sliding_window=WINDOW)),
}

# HF leaf module name -> engine operator group
_HF_LEAF = {
    "q_proj": "q_proj", "k_proj": "k_proj", "v_proj": "v_proj", "o_proj": "o_proj",
    "q_a_proj": "q_a_proj", "q_b_proj": "q_b_proj", "kv_a_proj_with_mqa": "kv_a_proj_with_mqa",
    "kv_b_proj": "kv_b_proj", "out_proj": "o_proj",  # OPT's attention output
    "gate_proj": "gate_proj", "up_proj": "up_proj", "down_proj": "down_proj", "fc1": "fc1", "fc2": "fc2",
    "c_attn": "qkv", "query_key_value": "qkv", "qkv_proj": "qkv", "gate_up_proj": "gate_up", "dense": "o_proj", "c_fc": "fc1",
    "dense_h_to_4h": "fc1", "dense_4h_to_h": "fc2", "gate": "router", "experts": "experts", "lm_head": "lm_head",
}
_HF_ATTENTION = ("self_attn", "attn", "self_attention")  # own FLOPs of these modules = the attention matmuls


def hf_group(fqn: str) -> str | None:
    """Engine operator group of an HF module path, or None for a container module (expected to own no FLOPs)."""
    parts = fqn.split(".")
    leaf, parent = parts[-1], parts[-2] if len(parts) > 1 else ""
    if leaf in _HF_ATTENTION:
        return "attention"
    if leaf == "rotary_emb":  # transformers 4.x: cos/sin tables from an inv_freq x positions matmul
        return "rotary_table"
    if leaf == "c_proj":  # GPT-2 Conv1D: attn.c_proj is the output projection, mlp.c_proj the second MLP matmul
        return "o_proj" if parent == "attn" else "fc2"
    if parent == "shared_experts" and leaf in ("gate_proj", "up_proj", "down_proj"):
        return f"shared_{leaf}"
    if "experts" in parts:  # fused expert weights (transformers 5) or a ModuleList experts.N.{w1,gate_proj,..} (4.x)
        return "experts"
    return _HF_LEAF.get(leaf)


def engine_group(name: str) -> str:
    """Engine op name -> group (fused HF modules compare against sums of engine rows)."""
    base = name.removesuffix("_swa")
    if base in ("qk_matmul", "sv_matmul", "fused_attention"):
        return "attention"
    if base.startswith("expert_"):
        return "experts"
    return base


_FUSED = {"qkv": ("q_proj", "k_proj", "v_proj"),  # GPT-2 c_attn, Falcon query_key_value, Phi-3 qkv_proj
          "gate_up": ("gate_proj", "up_proj")}  # Phi-3 gate_up_proj


def _own_flops(counts: dict[str, dict]) -> dict[str, int]:
    """Per-module FLOPs excluding those of child modules (FlopCounterMode reports inclusive totals)."""
    totals = {name: sum(ops.values()) for name, ops in counts.items() if name != "Global"}
    own = dict(totals)
    for name, total in totals.items():
        parent = name.rpartition(".")[0]
        while parent and parent not in own:  # containers without FLOPs of their own (ModuleList) are not listed
            parent = parent.rpartition(".")[0]
        if parent:
            own[parent] -= total
    return own


def hf_groups(counts: dict[str, dict]) -> dict[str, int]:
    grouped: dict[str, int] = defaultdict(int)
    for name, flops in _own_flops(counts).items():
        if not flops:
            continue
        group = hf_group(name)
        assert group is not None, f"torch counted {flops} FLOPs in module '{name}', which maps to no engine op"
        grouped[group] += flops
    grand_total = sum(counts["Global"].values())
    assert sum(grouped.values()) == grand_total, "every FLOP torch counts must be attributed to one module"
    return dict(grouped)


def engine_groups(spec, stage, scenario, fused=()) -> dict[str, float]:
    grouped: dict[str, float] = defaultdict(float)
    for op in build_operators(spec, stage, scenario):
        if op.op_class not in ("gemm", "attention") or op.name.startswith("softmax"):
            continue
        group = engine_group(op.name)
        for fused_name in fused:
            if group in _FUSED[fused_name]:
                group = fused_name
        grouped[group] += op.cost.flops * op.count
    return dict(grouped)


# ------------------------------------------------------------------------------------------------ running HF
def _cache_of(output):
    for name in ("cache", "past_key_values"):
        value = output.get(name) if hasattr(output, "get") else None
        if value is not None:
            return value
    raise AssertionError("the model returned no KV cache")


def _cached_elements(cache) -> int:
    """Elements held in the cache (keys + values of every layer), whatever the Cache API of this release."""
    if hasattr(cache, "layers"):
        return sum(layer.keys.numel() + layer.values.numel() for layer in cache.layers)
    if hasattr(cache, "key_cache"):
        return sum(k.numel() + v.numel() for k, v in zip(cache.key_cache, cache.value_cache))
    return sum(k.numel() + v.numel() for k, v in cache)


def _first_cached_key(cache):
    """The first layer's cached key tensor, whatever the Cache API of this transformers release."""
    if hasattr(cache, "layers"):
        return cache.layers[0].keys
    if hasattr(cache, "key_cache"):
        return cache.key_cache[0]
    return cache[0][0]


@lru_cache(maxsize=None)
def _build(arch: str):
    """The tiny HF model of `arch` (random weights, seed 0), eager attention and eager experts."""
    model_type, fields = ARCHS[arch]
    config = transformers.AutoConfig.for_model(model_type, **dict(dict(bos_token_id=0, eos_token_id=1), **fields))
    # transformers 5 defaults to experts_implementation="grouped_mm", whose aten._grouped_mm FlopCounterMode
    # (torch 2.13) does not count; the eager loop runs the same top-k products as mm calls.
    kwargs = dict(attn_implementation="eager", experts_implementation="eager")
    torch.manual_seed(0)
    try:
        model = transformers.AutoModelForCausalLM.from_config(config, **kwargs)
    except (TypeError, ValueError):  # transformers 4.x: no experts_implementation (experts always loop)
        kwargs.pop("experts_implementation")
        model = transformers.AutoModelForCausalLM.from_config(config, **kwargs)
    return config, model.eval()


def _count(model, **inputs) -> tuple[dict, object]:
    counter = FlopCounterMode(display=False, depth=None)
    with torch.no_grad(), counter:
        output = model(**inputs, use_cache=True)
    return counter.get_flop_counts(), output


@lru_cache(maxsize=None)
def run_hf(arch: str, tmp_dir: str, batch: int = B, seq_len: int = S):
    """Write the config.json of `arch`, count prefill and decode FLOPs per engine group. Cached."""
    config, model = _build(arch)
    path = f"{tmp_dir}/{arch}.json"
    config.to_json_file(path)
    generator = torch.Generator().manual_seed(seq_len)
    prompt = torch.randint(0, VOCAB, (batch, seq_len), generator=generator)
    prefill_counts, output = _count(model, input_ids=prompt)
    cache = _cache_of(output)
    cached_key_width = _first_cached_key(cache).shape[-1]
    cached_elements = _cached_elements(cache)
    cache_kw = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    new_token = torch.randint(0, VOCAB, (batch, 1), generator=generator)
    decode_counts, _ = _count(model, input_ids=new_token, **{cache_kw: cache})
    hf_params = sum(p.numel() for p in model.parameters())
    hf_params += sum(b.numel() for name, b in model.named_buffers() if name.endswith("e_score_correction_bias"))
    return dict(path=path, prefill=hf_groups(prefill_counts), decode=hf_groups(decode_counts),
                cached_key_width=int(cached_key_width), cached_elements=int(cached_elements), params=hf_params)


@pytest.fixture(scope="module")
def tmp_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("hf_configs"))


def matching_scenario(spec, run, batch=B, seq_len=S) -> Scenario:
    """The engine scenario that runs what HF runs: eager attention, logits for every prompt token, and the MLA
    cache layout this transformers release keeps (latent -> re-expanded each step = 'naive'; per-head K/V =
    'decompressed')."""
    mla_mode = "absorbed"
    if spec.is_mla:
        latent = run["cached_key_width"] in (spec.kv_lora_rank, spec.kv_lora_rank + spec.qk_rope_head_dim)
        mla_mode = "naive" if latent else "decompressed"
    return Scenario(batch=batch, seq_len=seq_len, attention="eager", logits="all", mla_mode=mla_mode)


FUSED_ARCHS = {"gpt2": ("qkv",), "falcon": ("qkv",), "falcon-new-arch": ("qkv",), "phi3-swa": ("qkv", "gate_up")}


def _rotary_table_flops(spec, stage, batch=B, seq_len=S):
    """FLOPs of the cos/sin tables some transformers releases build with a matmul: positions [Sq] x inv_freq
    [rot/2], 2 FLOPs per product, for a position batch of 1 (shared) or B. The engine ignores it (formulas.py:
    the rope op applies the tables; building them is O(S x d), below 0.1% of the QK^T matmul)."""
    rot = spec.qk_rope_head_dim if spec.is_mla else spec.head_dim
    per_sequence = 2 * (seq_len if stage == "prefill" else 1) * rot // 2
    return {per_sequence, batch * per_sequence}


def _compare(engine: dict, torch_counts: dict, where: str, spec, stage, batch=B, seq_len=S):
    torch_counts = dict(torch_counts)
    if "rotary_table" in torch_counts:
        table = torch_counts.pop("rotary_table")
        assert table in _rotary_table_flops(spec, stage, batch, seq_len), f"{where}: rotary table {table} FLOPs"
    assert set(engine) == set(torch_counts), (
        f"{where}: operator groups differ: engine-only {sorted(set(engine) - set(torch_counts))}, "
        f"torch-only {sorted(set(torch_counts) - set(engine))}")
    for group, hf_flops in torch_counts.items():
        assert engine[group] == pytest.approx(hf_flops, rel=0.01), (
            f"{where}: {group}: engine {engine[group]:.0f} vs torch {hf_flops} FLOPs")


# ------------------------------------------------------------------------------------------------- the tests
@pytest.mark.parametrize("stage", ["prefill", "decode"])
@pytest.mark.parametrize("arch", list(ARCHS))
def test_flops_per_module_match_torch(arch, stage, tmp_dir):
    run = run_hf(arch, tmp_dir)
    spec = model_from_hf_config(run["path"])
    scenario = matching_scenario(spec, run)
    engine = engine_groups(spec, stage, scenario, FUSED_ARCHS.get(arch, ()))
    _compare(engine, run[stage], f"{arch} {stage}", spec, stage)


@pytest.mark.parametrize("arch", list(ARCHS))
def test_parameter_count_matches_torch(arch, tmp_dir):
    """Total parameters of the loaded spec = numel of the HF model's parameters (tied embeddings counted once;
    DeepSeek's router e_score_correction_bias is a buffer in HF but a stored tensor of the checkpoint)."""
    run = run_hf(arch, tmp_dir)
    total, _ = parameter_counts(model_from_hf_config(run["path"]))
    assert total == run["params"]


@pytest.mark.parametrize("arch", ["mistral-swa", "gemma2", "phi3-swa"])
@pytest.mark.parametrize("seq_len", [WINDOW - 2, WINDOW - 1, WINDOW, WINDOW + 1, 2 * WINDOW + 3])
def test_sliding_window_decode_keys_match_the_hf_cache(arch, seq_len, tmp_dir):
    """HF's sliding cache keeps the last W-1 tokens and the new token attends them plus itself; the engine's decode
    attends min(S+1, W) keys. Checked around the edge S+1 = W, batch 1 and 2."""
    for batch in (1, 2):
        run = run_hf(arch, tmp_dir, batch, seq_len)
        spec = model_from_hf_config(run["path"])
        engine = engine_groups(spec, "decode", matching_scenario(spec, run, batch, seq_len),
                               FUSED_ARCHS.get(arch, ()))
        _compare(engine, run["decode"], f"{arch} decode S={seq_len} B={batch}", spec, "decode", batch, seq_len)


@pytest.mark.parametrize("arch", list(ARCHS))
def test_kv_cache_elements_match_the_hf_cache(arch, tmp_dir):
    """models.kv_elements_per_token (in the cache layout HF keeps) x layers x tokens = what the HF cache holds after
    the prefill. Windowed layers: HF keeps the last W-1 tokens between steps (the new one makes W); the engine's
    footprint (analysis.kv_cache_bytes) books the W slots a step needs, one token more, deliberately.
    Falcon new_decoder_architecture: HF broadcasts K/V to all H query heads before caching (FalconAttention.
    _split_heads), an H/Hkv times larger cache than the model needs; the engine books the Hkv heads, as serving
    engines store them."""
    run = run_hf(arch, tmp_dir)
    spec = model_from_hf_config(run["path"])
    per_token = kv_elements_per_token(spec, matching_scenario(spec, run).mla_mode)
    expected = sum(layers * B * (S if window is None else min(S, window - 1)) * per_token
                   for _, window, layers in attention_groups(spec))
    if arch == "falcon-new-arch":
        expected *= spec.n_heads // spec.n_kv_heads  # 4 query heads / 2 KV heads
    assert run["cached_elements"] == expected


# ------------------------------------------------------------------------- deliberate differences, asserted
@pytest.mark.parametrize("arch", ["llama-gqa", "mistral-swa", "gemma2"])
def test_known_difference_flash_counts_causal_pairs(arch, tmp_dir):
    """attention='flash' (the engine's fused kernel) visits only the causal, windowed (query, key) pairs and counts
    the softmax (5 FLOPs per pair) inside the kernel; eager torch multiplies the full S x S block. Exactly, per
    group of layers: engine = torch x pairs / (S*S) x (2d + 2dv + 5) / (2d + 2dv).
    E.g. Mistral S=12, W=8: pairs = 8*9/2 + 4*8 = 68 of 144."""
    run = run_hf(arch, tmp_dir)
    spec = model_from_hf_config(run["path"])
    d, dv = spec.qk_head_dim, spec.attn_v_head_dim
    per_pair = (2 * d + 2 * dv + 5) / (2 * d + 2 * dv)
    prefill = {op.name: op for op in build_operators(spec, "prefill", Scenario(batch=B, seq_len=S,
                                                                               attention="flash"))}
    decode = {op.name: op for op in build_operators(spec, "decode", Scenario(batch=B, seq_len=S,
                                                                             attention="flash"))}
    eager_torch_prefill = 0
    for suffix, window, layers in attention_groups(spec):
        torch_per_layer = 2 * B * spec.n_heads * S * S * (d + dv)  # QK^T + PV over the full block
        eager_torch_prefill += layers * torch_per_layer
        op = prefill[f"fused_attention{suffix}"]
        assert op.count == layers
        assert op.cost.flops == pytest.approx(torch_per_layer * f.causal_pairs(S, window) / (S * S) * per_pair,
                                              rel=1e-12)
    assert eager_torch_prefill == run["prefill"]["attention"]  # the derivation above is what torch counts
    if arch == "mistral-swa":
        assert f.causal_pairs(S, WINDOW) == 68
    # decode: the same keys (a single query row has no causal saving), plus the in-kernel softmax
    flash_decode = sum(op.count * op.cost.flops for op in decode.values() if op.name.startswith("fused_attention"))
    assert flash_decode == pytest.approx(run["decode"]["attention"] * per_pair, rel=1e-12)


def test_known_difference_logits_last_computes_one_row_per_sequence(tmp_dir):
    """logits='last' (the engine's serving default): lm_head on the last prompt token only; HF computes all S."""
    run = run_hf("llama-gqa", tmp_dir)
    spec = model_from_hf_config(run["path"])
    ops = {op.name: op for op in build_operators(spec, "prefill", Scenario(batch=B, seq_len=S))}
    assert ops["lm_head"].cost.flops * S == run["prefill"]["lm_head"]


def test_known_difference_mla_absorbed_decode(tmp_dir):
    """Default mla_mode='absorbed': W_UK is folded into the query (q_absorb), attention runs over the cached latent
    (C + R wide keys, C wide values, one shared KV head) and W_UV is applied after it (out_absorb); no kv_b_proj.
    HF instead expands K/V per head with kv_b_proj. Every other module is identical; the difference is exact."""
    run = run_hf("deepseek-v3", tmp_dir)
    spec = model_from_hf_config(run["path"])
    L, H, C, R = spec.n_layers, spec.n_heads, spec.kv_lora_rank, spec.qk_rope_head_dim
    dn, dv, dq, Skv = spec.qk_nope_head_dim, spec.v_head_dim, spec.qk_head_dim, S + 1
    hf = run["decode"]
    # defaults, but eager: the HF reference counts QK^T and PV only, the fused kernel also softmax's FLOPs
    engine = engine_groups(spec, "decode", Scenario(batch=B, seq_len=S, attention="eager"))
    assert "kv_b_proj" not in engine
    assert hf["attention"] == L * 2 * B * H * Skv * (dq + dv)  # per-head QK^T and PV, the HF reference
    assert engine["attention"] == L * (2 * B * H * Skv * (C + R) + 2 * B * H * Skv * C)
    assert engine["q_absorb"] == L * 2 * B * H * dn * C
    assert engine["out_absorb"] == L * 2 * B * H * C * dv
    same = set(hf) - {"kv_b_proj", "attention", "rotary_table"}
    assert set(engine) - {"q_absorb", "out_absorb"} == same | {"attention"}
    for group in same:
        assert engine[group] == hf[group], group
    # prefill decompresses in every mode, as HF does
    for mode in ("absorbed", "naive", "decompressed"):
        prefill = engine_groups(spec, "prefill", Scenario(batch=B, seq_len=S, logits="all", mla_mode=mode,
                                                          attention="eager"))
        _compare(prefill, run["prefill"], f"deepseek-v3 prefill mla_mode={mode}", spec, "prefill")


@pytest.mark.parametrize("arch", ["deepseek-v3", "deepseek-v3-noqlora"])
def test_known_difference_mla_cache_layouts(arch, tmp_dir):
    """'naive' re-expands the S+1 cached latents every step; 'decompressed' caches per-head K/V and expands only the
    new token: kv_b_proj differs by exactly S+1. HF matches the layout it caches (transformers 5 caches the latent,
    kv_lora_rank wide, = 'naive'; transformers 4 cached per-head K/V = 'decompressed')."""
    run = run_hf(arch, tmp_dir)
    spec = model_from_hf_config(run["path"])
    by_mode = {mode: engine_groups(spec, "decode", Scenario(batch=B, seq_len=S, mla_mode=mode))
               for mode in ("naive", "decompressed")}
    assert by_mode["naive"]["kv_b_proj"] == (S + 1) * by_mode["decompressed"]["kv_b_proj"]
    assert by_mode["naive"]["kv_b_proj"] == spec.n_layers * 2 * B * (S + 1) * spec.kv_lora_rank * spec.n_heads * (
        spec.qk_nope_head_dim + spec.v_head_dim)
    hf_mode = matching_scenario(spec, run).mla_mode
    if run["cached_key_width"] == spec.kv_lora_rank:
        assert hf_mode == "naive"
    else:
        assert run["cached_key_width"] == spec.qk_head_dim and hf_mode == "decompressed"
    assert run["decode"]["kv_b_proj"] == by_mode[hf_mode]["kv_b_proj"]


@pytest.mark.parametrize("arch", ["mixtral", "qwen3-moe", "deepseek-v3"])
@pytest.mark.parametrize("batch", [1, B])
def test_expert_flops_follow_top_k_under_every_routing_switch(arch, batch, tmp_dir):
    """HF runs each token through its top-k experts (the eager loop visits only experts that were hit); the engine's
    expert FLOPs are 2 x T x k x 3 x D x Fe whatever expert_routing says (routing only changes weight bytes)."""
    run = run_hf(arch, tmp_dir, batch, S)
    spec = model_from_hf_config(run["path"])
    for stage, T in (("prefill", batch * S), ("decode", batch)):
        expected = spec.n_moe_layers * 2 * T * spec.top_k * 3 * spec.hidden * spec.moe_intermediate
        assert run[stage]["experts"] == expected
        for routing in ("uniform", "balanced", "all"):
            sc = Scenario(batch=batch, seq_len=S, expert_routing=routing)
            assert engine_groups(spec, stage, sc)["experts"] == expected
