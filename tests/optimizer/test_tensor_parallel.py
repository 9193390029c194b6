"""Tensor parallelism inside the node for the memory verdict (session 60, F2).

After one recomputation choice drove memory and time (F), costopt sharded with ZeRO-3/FSDP only, so every preset of
70B or more at its training length was charged full recomputation on any count: llama3-70b x 1T on 64 H100 took
370 days. Teams on NVLink nodes run tensor parallelism with sequence parallelism, which divides the selective
activations per GPU by t (Korthikanti et al. 2022, arXiv:2205.05198, table 2: 34.s.b.h/t).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from optimizer.estimate import Job, estimate
from optimizer.memory import activation_bytes
from optimizer.models import resolve_model
from warehouse.errors import UsageError
from warehouse.gpus import catalog

GPUS = catalog()
LLAMA70 = resolve_model("llama3-70b")  # 80 layers of 8192, vocabulary 128,256, trained at 8,192 tokens
LLAMA405 = resolve_model("llama3.1-405b")  # 126 layers of 16384, vocabulary 128,256, trained at 8,192 tokens


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cli.app", *args], capture_output=True, text=True, timeout=60)


def test_tensor_parallelism_divides_selective_and_the_logits_but_not_full_recomputations_inputs():
    s, h, layers, vocab = 8192, 8192, 80, 128256
    assert activation_bytes(LLAMA70, seq_len=s, micro_batch=1, recompute="selective", tensor_parallel=4) == (
        s * (34 * h * layers / 4 + 4 * vocab / 4)
    )
    assert activation_bytes(LLAMA70, seq_len=s, micro_batch=1, recompute="full", tensor_parallel=8) == (
        s * (h * (2 * layers + 34 / 8) + 4 * vocab / 8)
    )


def test_auto_picks_the_smallest_degree_at_which_selective_fits():
    """70B x 1T on 64 H100: states 1,129.6 GB / 64 = 17.65 GB per GPU; selective keeps 186.7 / t GB: 93.4 at t = 2
    (too much for 72 GB usable), 46.7 at t = 4 (64.3 GB per GPU: fits). Selective costs no time: 277.7 days, not
    the 370.2 of full recomputation without tensor parallelism."""
    est = estimate(Job(LLAMA70, 1e12), GPUS.resolve("H100"), 64)
    assert (est.recompute, est.tensor_parallel, est.memory.fits) == ("selective", 4, True)
    assert est.memory.per_gpu_gb == pytest.approx(64.3, abs=0.05)
    assert "recompute" not in est.factors
    assert est.wall_hours.expected / 24 == pytest.approx(277.7, abs=0.1)
    assumed = est.as_dict()["assumptions"]
    assert (assumed["tensor_parallel"], assumed["tensor_parallel_asked"]) == (4, None)
    # minimum counts are over the degrees the node allows: selective at t = 8 needs ceil(1129.6 / (72 - 23.3)) = 24
    assert est.memory.min_gpus_by_recompute["selective"] == 24


def test_no_tensor_parallelism_over_pcie_and_only_pairs_over_an_nvlink_bridge():
    pcie = estimate(Job(LLAMA70, 1e12), GPUS.resolve("H100-PCIe"), 64)
    assert (pcie.recompute, pcie.tensor_parallel) == ("full", 1)
    # H100-NVL (94 GiB, 90.8 GB usable): selective keeps 93.4 GB at t = 2, the bridge's most: full, at t = 2
    pair = estimate(Job(LLAMA70, 1e12), GPUS.resolve("H100-NVL"), 64)
    assert (pair.recompute, pair.tensor_parallel) == ("full", 2)


def test_the_405b_fits_an_h100_with_selective_recomputation_at_tensor_parallelism_8():
    """Llama 3.1 405B at 8,192 tokens keeps 579.2 GB of selective activations, 72.4 GB at t = 8, plus 0.40 GB of
    states on 16,384 GPUs: 72.8 GB, under the 77.3 GB usable of an 80 GiB card (90 %). Read as 80e9 bytes (72 GB
    usable) it came 0.8 GB short, was charged full recomputation, and Meta's published 30.84M GPU-hours fell below
    the range; at t = 4 it needs more than a card."""
    est = estimate(Job(LLAMA405, 15.6e12, stack="large-lab"), GPUS.resolve("H100"), 16384)
    selective = activation_bytes(LLAMA405, seq_len=8192, micro_batch=1, recompute="selective", tensor_parallel=8)
    assert selective / 1e9 + est.memory.total_gb / 16384 == pytest.approx(72.8, abs=0.05)
    assert (est.recompute, est.tensor_parallel, est.memory.fits) == ("selective", 8, True)
    assert est.gpu_hours.low <= 30.84e6 <= est.gpu_hours.high


def test_an_asked_degree_is_used():
    h100 = GPUS.resolve("H100")
    eight = estimate(Job(LLAMA70, 1e12, tensor_parallel=8), h100, 64)
    assert (eight.recompute, eight.tensor_parallel) == ("selective", 8)
    assert eight.memory.activations_gb == pytest.approx(23.3, abs=0.05)
    one = estimate(Job(LLAMA70, 1e12, tensor_parallel=1), h100, 64)
    assert (one.recompute, one.tensor_parallel) == ("full", 1)


@pytest.mark.parametrize(
    ("gpu", "t", "gpus", "message"),
    [
        ("H100-PCIe", 2, 64, "PCIe"),
        ("RTX 4090", 8, 8, "PCIe"),
        ("H100", 3, 63, "does not divide the 8 GPUs per node"),
        ("H100-NVL", 4, 64, "pairs; at most 2"),
        ("H100", 8, 4, "does not divide the job's 4 GPUs"),
    ],
)
def test_a_degree_the_node_cannot_hold_is_refused(gpu, t, gpus, message):
    with pytest.raises(UsageError, match=message):
        estimate(Job(LLAMA70, 1e12, tensor_parallel=t), GPUS.resolve(gpu), gpus)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--gpu", "H100-PCIe", "--tensor-parallel", "4"], "no NVLink"),
        (["--gpu", "H100", "--tensor-parallel", "3"], "does not divide the 8 GPUs per node"),
        (["--gpu", "H100", "--tensor-parallel", "two"], "must be auto or a positive whole number"),
    ],
)
def test_the_cli_refuses_in_one_line(args, message):
    result = run_cli("estimate", "--model", "llama3-70b", "--tokens", "1T", "--gpus", "64", *args)
    assert result.returncode == 2 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0]


def test_the_cli_says_the_degree():
    result = run_cli("estimate", "--model", "llama3-70b", "--tokens", "1T", "--gpu", "H100", "--gpus", "64")
    assert result.returncode == 0
    text = " ".join(result.stdout.split())
    assert "with selective recomputation and tensor parallelism 4" in text
    assert "tensor parallelism 4 inside each node, with sequence parallelism (activations / 4;" in text
