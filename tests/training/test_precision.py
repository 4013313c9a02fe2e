"""The training precision: bf16 only where the hardware computes in it and, on a CPU, where it is measured faster."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from training import precision  # noqa: E402


@pytest.fixture
def model(tiny):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(tiny, dtype=torch.float32)


@pytest.fixture(autouse=True)
def cpu_only(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(precision, "_measured", {})


def test_a_cpu_without_bf16_instructions_trains_in_fp32_without_measuring(model, monkeypatch):
    monkeypatch.setattr(precision, "cpu_computes_bf16", lambda: False)
    monkeypatch.setattr(precision, "pass_seconds", lambda m: pytest.fail("measured on a CPU that emulates bf16"))
    assert precision.train_in_bf16(model) is False


@pytest.mark.parametrize("variable", ["ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"])
def test_a_cpu_whose_onednn_is_kept_below_avx512_computes_no_bf16(monkeypatch, variable):
    """Kept to AVX2 (to time a machine without AVX-512), oneDNN emulates bf16, as such a machine does: neither
    training nor inference picks it, and its measurement (minutes at that rate) is not taken."""
    for name in ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"):
        monkeypatch.delenv(name, raising=False)
    native = precision.cpu_computes_bf16()
    monkeypatch.setenv(variable, "avx2")
    assert precision.cpu_computes_bf16() is False
    assert precision.choose(object()) == (
        False,
        f"oneDNN is kept to AVX2 here ({variable}), where bf16 is emulated",
    )
    monkeypatch.setenv(variable, "AVX512_CORE_BF16")
    assert precision.cpu_computes_bf16() is native


@pytest.mark.parametrize(("seconds", "bf16"), [((1.0, 0.5), True), ((1.0, 0.95), False), ((1.0, 1.6), False)])
def test_bf16_is_chosen_only_where_measured_faster_by_the_margin(model, monkeypatch, seconds, bf16):
    calls = []
    monkeypatch.setattr(precision, "cpu_computes_bf16", lambda: True)
    monkeypatch.setattr(precision, "pass_seconds", lambda m: calls.append(m) or seconds)
    assert precision.train_in_bf16(model) is bf16
    assert precision.train_in_bf16(model) is bf16
    assert len(calls) == 1, "measured again for the same model shape"


def test_the_measurement_times_both_precisions_and_leaves_no_gradients(model):
    fp32, bf16 = precision.pass_seconds(model, tokens=16, repeats=1)
    assert fp32 > 0 and bf16 > 0
    assert all(p.grad is None for p in model.parameters())
