"""Where a framework's table lacks a kernel: the same device's table of another framework, then the pooled fit, whose
times never fall as the work grows."""
import numpy as np
import pytest

from roofline.engine import hardware, models
from roofline.engine.parallel import Parallel
from roofline.engine.scenario import Scenario
from roofline.estimate import curves
from roofline.estimate.expected import analyze
from roofline.estimate.lookup import calibration_for, pooled

BATCHES = (2, 4, 6, 8, 10, 12, 16, 32, 64)


def _attention(gpu: str, framework: str, batch: int) -> tuple[float, float, str]:
    """(bound, expected, estimate) of DeepSeek-V3's decode attention at TP 8, 5120 cached tokens, bf16 KV."""
    scenario = Scenario(batch=batch, seq_len=5120, weight_dtype="fp8", kv_dtype="bf16", parallel=Parallel(tp=8),
                        framework=framework)
    ops, _ = analyze(models.get_model("deepseek-v3"), hardware.get_accelerator(gpu), "decode", scenario)
    row = next(op for op in ops if op["op"] == "fused_attention")
    return row["t_s"], row["t_expected_s"], row["estimate"]


def test_a_kernel_the_framework_did_not_measure_comes_from_the_device_s_other_tables():
    # the package measured no MLA kernel under vLLM; the H200's TensorRT-LLM and SGLang tables did. Before, vLLM's
    # MLA decode came from the pooled fit: 306 us at batch 8 against 31 us measured under TensorRT-LLM
    for batch in BATCHES:
        bound, vllm, label = _attention("h200-sxm", "vllm", batch)
        _, trtllm, _ = _attention("h200-sxm", "trtllm", batch)
        assert label == "default" and vllm == pytest.approx(trtllm, rel=0.05) and vllm >= bound


@pytest.mark.parametrize("gpu", ["mi300x", "h100-pcie"])
def test_the_pooled_fallback_never_takes_longer_for_less_work(gpu):
    # devices without tables: before, MI300X's MLA decode took 278 us at batch 16 and 72 us at batch 32
    times = [_attention(gpu, "", batch)[1] for batch in BATCHES]
    assert all(later >= earlier * (1 - 1e-6) for earlier, later in zip(times, times[1:])), times  # interpolation


def test_monotone_caps_each_node_by_the_larger_bounds():
    # log ratios along the bound axis (0.1 decade apart): 0.0, 1.0, 0.0 -> log times 0.0, 1.1, 0.2: the middle
    # node's time is capped at the next one's, 0.2, so its log ratio becomes 0.2 - 0.1 = 0.1
    grid = curves.Grid((0.0,), (0.1,), np.array([0.0, 1.0, 0.0]))
    assert np.allclose(curves.monotone(grid).values, [0.0, 0.1, 0.0])


def test_every_pooled_grid_is_monotone_in_the_bound():
    fit = pooled()
    for key in fit.grids:
        grid = fit.grids[key]
        x = grid.origin[0] + grid.step[0] * np.arange(grid.values.shape[0])
        times = grid.values.astype(float) + x.reshape((-1,) + (1,) * (grid.values.ndim - 1))
        assert (np.diff(times, axis=0) >= -1e-3).all(), key  # float16 storage rounds


def test_a_device_without_other_tables_has_no_siblings():
    assert calibration_for(hardware.get_accelerator("mi300x"), "").sibling_paths == ()
    assert len(calibration_for(hardware.get_accelerator("h200-sxm"), "vllm").sibling_paths) == 2


def test_a_gemm_of_a_few_outputs_is_priced_as_the_stream_it_is():
    # Qwen3-Next's shared-expert gate is Linear(2048, 1): 4000 tokens x 2048 x 1 x 2 = 16.4 MFLOP over 8.2 MB of
    # bf16 input. The GEMM tables' narrowest outputs are 128 wide; read there it came to 20-100x its bound (215 us
    # for a 2 us bound on a B200). As a stream it is at most a few times its bound
    from roofline.estimate.step import GEMV_OUTPUTS, gemm_outputs
    model = models.get_model("qwen3-next-80b-a3b")
    scenario = Scenario(batch=1, seq_len=4000, framework="trtllm")
    ops, _ = analyze(model, hardware.get_accelerator("h200-sxm"), "prefill", scenario)
    gate = next(op for op in ops if op["op"] == "shared_expert_gate")
    assert gate["t_s"] <= gate["t_expected_s"] <= 5 * gate["t_s"] + 10e-6
    from roofline.engine.graph import build_operators
    resolved = scenario.for_model(model)  # as the step's lookups call it: weight_dtype native resolved
    by_name = {op.name: op for op in build_operators(model, "prefill", resolved)}
    assert gemm_outputs(by_name["shared_expert_gate"], resolved, np.asarray) == 1
    assert gemm_outputs(by_name["router"], resolved, np.asarray) == 512 >= GEMV_OUTPUTS  # a GEMM: its tables


def test_gated_deltanet_kernels_are_no_table_s_measurement():
    # Qwen3-Next's convolution and delta rule are priced on the softmax-attention curve of the H200's table, which
    # measured neither: their estimate is default, and so the step's is partial, not calibrated
    ops, totals = analyze(models.get_model("qwen3-next-80b-a3b"), hardware.get_accelerator("h200-sxm"), "decode",
                          Scenario(batch=8, seq_len=2048))
    labels = {op["op"]: op["estimate"] for op in ops}
    assert (labels["conv1d"], labels["gated_delta_rule"], labels["fused_attention"]) == \
        ("default", "default", "calibrated")
    assert totals["estimate"] == "partial"


@pytest.mark.parametrize("framework", ["trtllm", "vllm", "sglang"])
def test_a_gemv_does_not_decide_the_step_s_label(framework):
    # Mixtral's router (8 outputs) is priced as a stream; the GEMMs, attention and MoE of its decode step are measured
    # in every H100 table, so the step stays calibrated whatever the framework's element-wise coverage (SGLang has none)
    _, totals = analyze(models.get_model("mixtral-8x7b"), hardware.get_accelerator("h100-sxm"), "decode",
                        Scenario(batch=8, seq_len=1024, parallel=Parallel(tp=2), framework=framework))
    assert totals["estimate"] == "calibrated"
