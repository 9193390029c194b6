"""Will the job fit: bytes per parameter, activations, and sharding across the job's GPUs.

* States per parameter (sharded ZeRO-3/FSDP-style across every GPU of the job):
  full training with mixed-precision Adam = 16 B (BF16 weights 2 + grads 2, FP32 master 4 + two
  moments 8; the ZeRO paper's figure, arXiv:1910.02054 section 3.1); LoRA = 2 B frozen BF16 weights
  plus 16 B for the adapters; QLoRA = 0.5 B NF4 weights + ~0.06 B quantization constants and
  BF16 copies in flight (Dettmers et al., arXiv:2305.14314), plus 16 B for the adapters.
* Activations per GPU, per token of the micro-batch, by activation recomputation strategy
  (``RECOMPUTE``; Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
  arXiv:2205.05198, section 4: a layer without recomputation keeps s.b.h.(34 + 5.a.s/h) bytes, selective
  recomputation 34.s.b.h, full recomputation 2.s.b.h, its input):

  - ``selective``: 34 x width bytes per layer. The 5.a.s/h term is the attention scores, softmax and its
    dropout, which selective recomputation does not keep; a fused attention kernel (FlashAttention, PyTorch
    SDPA, what every current framework runs and what the calibration assumes) never keeps them either, so a
    job "without activation checkpointing" today is this strategy, at the calibrated speed.
  - ``full``: 2 x width bytes per layer (each layer's input) plus one layer's 34 x width while its forward
    pass is recomputed in the backward pass; the recomputation costs time (optimizer.mfu.RECOMPUTE_FULL).

  The output logits add 4 B x vocabulary per token (FP32 for the loss), whatever the strategy.
* Tensor parallelism t inside one node, with sequence parallelism (Megatron-LM, NeMo, torchtitan; Llama 3
  trained with t = 8): the paper's table 2 divides selective's 34.s.b.h by t, and its section 4 the logits'
  4.s.b.v (vocabulary-parallel loss); full recomputation's 2.s.b.h per layer stays whole, as in the
  paper's table (the layer being recomputed is divided by t). Model and optimizer states are sharded
  over all the job's GPUs either way (tensor shards, then ZeRO-3/FSDP over the data-parallel ranks).
  Only where the node's GPUs talk over NVLink/NVSwitch or AMD's Infinity Fabric mesh (``TENSOR_PARALLEL_LINKS``;
  an NVLink bridge joins pairs, so t <= 2 there); over PCIe the per-layer all-reduces of tensor
  parallelism would cost more than the memory they save, so t = 1.
* Which strategy and t a job runs (``choose``): the ones asked, or with ``auto`` the cheapest that fits:
  selective at the smallest t (1, 2, 4, 8 up to the node) that fits, else full at the largest t allowed.
  Selective is never slower than full and its cost is inside the calibrated MFU, so the choice is by memory
  alone; estimate charges the time of the strategy chosen here, and nothing for t (calibrated runs at scale
  used it).
* Usable memory is 90 % of the card: the CUDA context, NCCL buffers and allocator fragmentation
  take the rest.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from optimizer.models import ModelSpec

# the activation recomputation strategies (mfu.py charges full x6/8); defined here, the lower module, since mfu
# imports network, which imports this module
RECOMPUTE = ("selective", "full")

LORA_TRAINABLE_FRACTION = 0.005  # rank-16 adapters on every linear layer of a Llama-class model
STATE_BYTES_PER_PARAM = {"full": 16.0, "lora": 2.0, "qlora": 0.56}
ADAPTER_BYTES_PER_PARAM = 16.0
USABLE_FRACTION = 0.90
# A GPU's memory as sold ("80GB") is binary: an H100 SXM holds 80 GiB (nvidia-smi: 81,559 MiB), an RTX 4090 24 GiB.
# Read as 10^9 bytes, every card lost 7 % of itself, and Llama 3.1 405B, selective at t = 8, came 0.8 GB short of the
# H100s it trained on. Figures shown to a user stay in GB (10^9 bytes): 90 % of 80 GiB is 77.3 GB usable.
GIB = 2**30
# Korthikanti et al. 2022 (arXiv:2205.05198), bytes per layer and token, times the width:
LAYER_INPUT_BYTES = 2.0  # the layer's input in BF16: all that full recomputation keeps
LAYER_BYTES = 34.0  # every tensor one layer keeps for its backward pass, attention scores not kept (selective)
LOGIT_BYTES = 4.0
# --recompute: a strategy of RECOMPUTE, or "auto", the cheapest that fits (``choose``); auto is the default
RECOMPUTE_SETTINGS = ("auto", *RECOMPUTE)
# node links that carry tensor parallelism, and how many GPUs one group spans (None: the whole node)
TENSOR_PARALLEL_LINKS: dict[str, int | None] = {"nvlink": None, "infinity_fabric": None, "nvlink_pair": 2}


@dataclass(frozen=True, slots=True)
class MemoryFit:
    total_gb: float  # model and optimizer states over the whole job
    per_gpu_gb: float  # what each GPU holds at this GPU count (states share + activations)
    activations_gb: float  # per GPU, with the strategy in ``recompute``
    # the fewest GPUs that hold the job with a strategy allowed (auto: either), None: no count does (one micro-batch's
    # activations exceed the card)
    min_gpus: int | None
    fits: bool
    reason: str
    recompute: str = "selective"  # the strategy these figures are for: the one asked, or auto's choice
    # the fewest GPUs each strategy needs (None: it never fits), at any tensor-parallel degree allowed
    min_gpus_by_recompute: dict[str, int | None] = field(default_factory=dict)
    tensor_parallel: int = 1  # the tensor-parallel degree these figures are for: the one asked, or auto's choice

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def state_bytes(model: ModelSpec, method: str) -> float:
    adapters = LORA_TRAINABLE_FRACTION * ADAPTER_BYTES_PER_PARAM if method != "full" else 0.0
    return model.total_params * (STATE_BYTES_PER_PARAM[method] + adapters)


def activation_bytes(
    model: ModelSpec, *, seq_len: int, micro_batch: int, recompute: str, tensor_parallel: int = 1
) -> float:
    """One GPU's activations for one micro-batch with a recomputation strategy of ``RECOMPUTE``, in a
    tensor-parallel group of ``tensor_parallel`` GPUs with sequence parallelism (1: none)."""
    tokens = seq_len * micro_batch
    t = tensor_parallel
    if recompute == "full":
        per_token = model.hidden * (model.layers * LAYER_INPUT_BYTES + LAYER_BYTES / t)
    elif recompute == "selective":
        per_token = model.hidden * model.layers * LAYER_BYTES / t
    else:
        raise ValueError(f"activation_bytes: recompute must be one of {', '.join(RECOMPUTE)}, got {recompute!r}")
    return tokens * (per_token + LOGIT_BYTES * model.vocab / t)


def tensor_parallel_reach(intra_node: str, gpus_per_node: int) -> int:
    """The largest tensor-parallel degree a node's GPU link carries (1: none, PCIe)."""
    if intra_node not in TENSOR_PARALLEL_LINKS:
        return 1
    group = TENSOR_PARALLEL_LINKS[intra_node]
    return gpus_per_node if group is None else min(group, gpus_per_node)


def tensor_parallel_ladder(reach: int, gpus_per_node: int) -> tuple[int, ...]:
    """The degrees auto tries: 1, 2, 4, 8 ... up to ``reach``, each dividing the node."""
    return tuple(t for t in (2**k for k in range(11)) if t <= reach and gpus_per_node % t == 0)


def _min_gpus(states: float, activations: float, usable: float, t: int) -> int | None:
    """The fewest GPUs, whole tensor-parallel groups of ``t``, that hold ``states`` with ``activations`` each."""
    room = usable - activations
    return t * max(1, math.ceil(states / room / t)) if room > 0 else None


Need = dict[tuple[str, int], int | None]  # (strategy, tensor-parallel degree) -> the fewest GPUs (None: never)


def choose(recompute: str, gpus: int, need: Need, degrees: tuple[int, ...]) -> tuple[str, int]:
    """The strategy and tensor-parallel degree a job runs on ``gpus``, ``degrees`` being the degrees allowed there
    (the one asked, or auto's ladder), ascending.

    Selective is never slower than full (full runs every layer's forward pass twice), so auto takes selective at
    the smallest degree where it fits (the least tensor parallelism: its communication is not charged, so it is
    not spent where it is not needed); where it fits at none, full at the largest degree, what a team that has
    the node's tensor parallelism runs. An asked strategy runs at its smallest degree that fits. Where nothing
    fits, auto answers with the strategy that needs the fewest GPUs (full, but for a one-layer model, where keeping
    the layer's input too makes full keep more), so that the verdict's minimum count and the time shown belong to
    the same strategy.
    """
    strategies = RECOMPUTE if recompute == "auto" else (recompute,)

    def fits(s: str, t: int) -> bool:
        n = need[(s, t)]
        return n is not None and gpus >= n

    for s in strategies:
        ladder = degrees[::-1] if recompute == "auto" and s == "full" else degrees
        for t in ladder:
            if fits(s, t):
                return s, t
    if recompute != "auto":
        return recompute, degrees[-1]

    def fewest(s: str) -> int | None:
        return min((n for t in degrees if (n := need[(s, t)]) is not None), default=None)

    selective, full = fewest("selective"), fewest("full")
    strategy = "selective" if selective is not None and (full is None or selective <= full) else "full"
    return strategy, degrees[-1]


def memory_fit(
    model: ModelSpec,
    *,
    method: str,
    gpu_memory_gb: float,
    gpus: int,
    seq_len: int,
    micro_batch: int = 1,
    recompute: str = "auto",
    tensor_parallel: int | None = None,
    reach: int = 1,
    gpus_per_node: int = 1,
) -> MemoryFit:
    """The memory verdict of ``gpus`` GPUs of ``gpu_memory_gb``, with the recomputation strategy ``recompute``
    (``RECOMPUTE_SETTINGS``) and the tensor-parallel degree ``tensor_parallel`` (None: auto, among the ladder up to
    ``reach``, what the node's link carries, on nodes of ``gpus_per_node``): the figures are those of the strategy
    and degree the job runs there (``choose``); the minimum counts are over every degree allowed."""
    if recompute not in RECOMPUTE_SETTINGS:
        raise ValueError(f"memory_fit: recompute must be one of {', '.join(RECOMPUTE_SETTINGS)}, got {recompute!r}")
    states = state_bytes(model, method)
    usable = gpu_memory_gb * GIB * USABLE_FRACTION
    allowed = (tensor_parallel,) if tensor_parallel is not None else tensor_parallel_ladder(reach, gpus_per_node)
    here = tuple(t for t in allowed if gpus % t == 0) or allowed[:1]  # whole groups of this job's GPUs
    kept = {
        (s, t): activation_bytes(model, seq_len=seq_len, micro_batch=micro_batch, recompute=s, tensor_parallel=t)
        for s in RECOMPUTE
        for t in allowed
    }
    need: Need = {key: _min_gpus(states, kept[key], usable, key[1]) for key in kept}
    strategy, t = choose(recompute, gpus, need, here)
    activations = kept[(strategy, t)]
    per_gpu = states / gpus + activations
    by_recompute = {s: min((n for u in allowed if (n := need[(s, u)]) is not None), default=None) for s in RECOMPUTE}
    min_gpus = min(
        (n for s in (RECOMPUTE if recompute == "auto" else (strategy,)) if (n := by_recompute[s]) is not None),
        default=None,
    )
    gb = 1e9
    needed = need[(strategy, t)]
    fits = needed is not None and gpus >= needed
    tp = f" and tensor parallelism {t}" if t > 1 else ""
    if min_gpus is None:
        even = ", even with full recomputation" if strategy == "full" else ""
        reason = (
            f"one micro-batch's activations ({activations / gb:.1f} GB at seq-len {seq_len} x {micro_batch}{even}{tp}) "
            f"exceed the {usable / gb:.0f} GB usable per GPU; lower --seq-len or --micro-batch"
            + (", or --recompute full or auto" if strategy == "selective" and by_recompute["full"] is not None else "")
        )
    elif fits:
        reason = f"{per_gpu / gb:.1f} GB per GPU of {usable / gb:.0f} GB usable"
    else:
        reason = (
            f"needs {per_gpu / gb:.1f} GB per GPU on {gpus} GPU{'s' if gpus != 1 else ''}, "
            f"{usable / gb:.0f} GB usable: "
            f"at least {min_gpus} GPUs with {gpu_memory_gb:g} GB"
        )
    if min_gpus is not None:
        reason += f", with {strategy} recomputation{tp}"
    return MemoryFit(
        total_gb=states / gb,
        per_gpu_gb=per_gpu / gb,
        activations_gb=activations / gb,
        min_gpus=min_gpus,
        fits=fits,
        reason=reason,
        recompute=strategy,
        min_gpus_by_recompute=by_recompute,
        tensor_parallel=t,
    )
