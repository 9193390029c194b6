"""Activation recomputation: the memory verdict and the time come from one strategy (audit BUG 5, session 59).

Before, memory.py kept only layer inputs by default (full recomputation) while the MFU charged no recomputation, and
``--checkpointing`` and ``--recompute`` set the two halves independently: llama3-70b x 1T on 64 H100 "fit" at 278 days
where full recomputation takes 370.
"""

from __future__ import annotations

import math

import pytest

from optimizer import mfu as mfu_model
from optimizer.estimate import Job, estimate
from optimizer.measured import parse_measurement
from optimizer.memory import activation_bytes, choose, memory_fit
from optimizer.models import resolve_model
from warehouse.errors import UsageError
from warehouse.gpus import catalog

GPUS = catalog()
LLAMA70 = resolve_model("llama3-70b")  # 80 layers of 8192, vocabulary 128,256, trained at 8,192 tokens
B8 = resolve_model("8B")  # a bare count: 35 layers of 4352, vocabulary 32,000


def test_activations_per_strategy_by_hand():
    """Korthikanti et al. 2022: 34.s.b.h per layer kept with selective recomputation, the layer's input (2.s.b.h)
    with full recomputation plus one layer's 34.s.b.h while it is recomputed; FP32 logits 4 x vocabulary per token."""
    s, h, layers, logits = 8192, 8192, 80, 4 * 128256
    assert activation_bytes(LLAMA70, seq_len=s, micro_batch=1, recompute="selective") == s * (34 * h * layers + logits)
    assert activation_bytes(LLAMA70, seq_len=s, micro_batch=2, recompute="full") == 2 * s * (
        h * (2 * layers + 34) + logits
    )
    selective_gb = activation_bytes(LLAMA70, seq_len=s, micro_batch=1, recompute="selective") / 1e9
    assert selective_gb == pytest.approx(186.7, 1e-3)  # the audit's figure


def test_auto_keeps_every_activation_where_it_fits_and_recomputes_where_only_that_fits():
    # 8B at 2,048 tokens on 40 GiB cards (90 %: 38.65 GB usable): states 128 GB; selective keeps 10.9 GB per GPU, so
    # it needs ceil(128 / 27.8) = 5 GPUs; full keeps 1.19 GB and needs ceil(128 / 37.5) = 4
    usable = 40 * 2**30 * 0.9
    selective = activation_bytes(B8, seq_len=2048, micro_batch=1, recompute="selective")
    full = activation_bytes(B8, seq_len=2048, micro_batch=1, recompute="full")
    need = {"selective": math.ceil(128e9 / (usable - selective)), "full": math.ceil(128e9 / (usable - full))}
    assert need == {"selective": 5, "full": 4}
    four = memory_fit(B8, method="full", gpu_memory_gb=40, gpus=4, seq_len=2048)
    five = memory_fit(B8, method="full", gpu_memory_gb=40, gpus=5, seq_len=2048)
    assert (four.recompute, four.fits, four.activations_gb) == ("full", True, pytest.approx(full / 1e9))
    assert (five.recompute, five.fits, five.activations_gb) == ("selective", True, pytest.approx(selective / 1e9))
    assert four.min_gpus == five.min_gpus == 4 and four.min_gpus_by_recompute == need
    one = memory_fit(B8, method="full", gpu_memory_gb=40, gpus=1, seq_len=2048)  # neither fits: full needs fewer
    assert (one.recompute, one.fits, one.min_gpus) == ("full", False, 4)
    assert "at least 4 GPUs" in one.reason and "full recomputation" in one.reason


def test_an_asked_strategy_is_kept_even_where_it_does_not_fit():
    asked = memory_fit(LLAMA70, method="full", gpu_memory_gb=80, gpus=64, seq_len=8192, recompute="selective")
    assert (asked.recompute, asked.fits, asked.min_gpus) == ("selective", False, None)
    assert "--recompute full or auto" in asked.reason
    full = memory_fit(B8, method="full", gpu_memory_gb=80, gpus=8, seq_len=2048, recompute="full")
    assert (full.recompute, full.min_gpus) == ("full", 2)


def test_one_layer_auto_never_picks_full_which_keeps_more():
    one = (1,)
    assert choose("auto", 1, {("selective", 1): 5, ("full", 1): 6}, one) == ("selective", 1)
    assert choose("auto", 1, {("selective", 1): 5, ("full", 1): None}, one) == ("selective", 1)
    assert choose("auto", 1, {("selective", 1): None, ("full", 1): None}, one) == ("full", 1)


def test_the_audit_case_without_tensor_parallelism_is_charged_the_recomputation_its_memory_needs():
    """llama3-70b x 1T on 64 H100 with --tensor-parallel 1 (ZeRO-3/FSDP only): selective keeps 186.7 GB per GPU, so
    the job fits only with full recomputation, and its time is that of full recomputation (x6/8 MFU): 370 days."""
    h100 = GPUS.resolve("H100")
    default = estimate(Job(LLAMA70, 1e12, tensor_parallel=1), h100, 64)
    full = estimate(Job(LLAMA70, 1e12, recompute="full", tensor_parallel=1), h100, 64)
    selective = estimate(Job(LLAMA70, 1e12, recompute="selective", tensor_parallel=1), h100, 64)
    assert default.recompute == "full" and default.memory.fits
    assert default.mfu.expected == pytest.approx(full.mfu.expected)
    assert default.mfu.expected == pytest.approx(selective.mfu.expected * mfu_model.RECOMPUTE_FULL)
    assert default.wall_hours.expected / 24 == pytest.approx(370.2, abs=0.1)
    assert not selective.memory.fits and selective.memory.min_gpus is None


@pytest.mark.parametrize(
    ("model", "gpu", "counts"),
    [("8B", "A100-80GB", (2, 3, 8)), ("llama3-8b", "RTX 4090", (8, 16)), ("llama3-70b", "H100", (8, 64, 512))],
)
def test_the_time_is_charged_for_the_strategy_the_memory_verdict_uses(model, gpu, counts):
    for n in counts:
        est = estimate(Job(resolve_model(model), 1e11), GPUS.resolve(gpu), n)
        assert ("recompute" in est.factors) == (est.recompute == "full") == (est.memory.recompute == "full")
        assert est.as_dict()["assumptions"]["recompute"] == est.recompute


def test_measured_carries_the_recomputation_from_the_measured_setup_to_the_target():
    """A throughput measured where only full recomputation fits (8B on 4 A100-40GB, no tensor parallelism) carried
    to 8 GPUs, where selective fits, gains the recomputation back: the transfer is 8/6 of the one with full on both
    sides."""
    a100 = GPUS.resolve("A100-40GB")
    measured = parse_measurement("3100@4xA100-40GB")
    auto = estimate(Job(B8, 1e11, measured=measured, tensor_parallel=1), a100, 8)
    both = estimate(Job(B8, 1e11, measured=measured, recompute="full", tensor_parallel=1), a100, 8)
    assert auto.recompute == "selective" and both.recompute == "full"
    assert auto.factors["transfer"] == pytest.approx(both.factors["transfer"] / mfu_model.RECOMPUTE_FULL)


def test_an_unknown_strategy_is_refused():
    with pytest.raises(UsageError, match="auto, selective, full"):
        Job(B8, 1e9, recompute="none")
