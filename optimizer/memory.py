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

  The paper's figures divide by the tensor-parallel degree t (with sequence parallelism); costopt shards
  with ZeRO-3/FSDP and no tensor or sequence parallelism (t = 1), so each data-parallel rank holds its own
  micro-batch's activations whole, and no GPU count lowers them. A Megatron job with tensor parallelism can
  keep selective where costopt says only full fits. The output logits add 4 B x vocabulary per token (FP32
  for the loss), whatever the strategy.
* Which strategy a job runs (``choose``): the one asked, or with ``auto`` the cheapest that fits:
  selective where it fits, else full. Selective is never slower than full and its cost is inside the
  calibrated MFU, so the choice is by memory alone; estimate charges the time of the strategy chosen here.
* Usable memory is 90 % of the card: the CUDA context, NCCL buffers and allocator fragmentation
  take the rest.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from optimizer.mfu import RECOMPUTE
from optimizer.models import ModelSpec

LORA_TRAINABLE_FRACTION = 0.005  # rank-16 adapters on every linear layer of a Llama-class model
STATE_BYTES_PER_PARAM = {"full": 16.0, "lora": 2.0, "qlora": 0.56}
ADAPTER_BYTES_PER_PARAM = 16.0
USABLE_FRACTION = 0.90
# Korthikanti et al. 2022 (arXiv:2205.05198), bytes per layer and token, times the width:
LAYER_INPUT_BYTES = 2.0  # the layer's input in BF16: all that full recomputation keeps
LAYER_BYTES = 34.0  # every tensor one layer keeps for its backward pass, attention scores not kept (selective)
LOGIT_BYTES = 4.0
# --recompute: a strategy of RECOMPUTE, or "auto", the cheapest that fits (``choose``); auto is the default
RECOMPUTE_SETTINGS = ("auto", *RECOMPUTE)


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
    # the fewest GPUs each strategy needs (None: it never fits)
    min_gpus_by_recompute: dict[str, int | None] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def state_bytes(model: ModelSpec, method: str) -> float:
    adapters = LORA_TRAINABLE_FRACTION * ADAPTER_BYTES_PER_PARAM if method != "full" else 0.0
    return model.total_params * (STATE_BYTES_PER_PARAM[method] + adapters)


def activation_bytes(model: ModelSpec, *, seq_len: int, micro_batch: int, recompute: str) -> float:
    """One GPU's activations for one micro-batch with a recomputation strategy of ``RECOMPUTE``."""
    tokens = seq_len * micro_batch
    if recompute == "full":
        per_token = model.hidden * (model.layers * LAYER_INPUT_BYTES + LAYER_BYTES)
    elif recompute == "selective":
        per_token = model.hidden * model.layers * LAYER_BYTES
    else:
        raise ValueError(f"activation_bytes: recompute must be one of {', '.join(RECOMPUTE)}, got {recompute!r}")
    return tokens * (per_token + LOGIT_BYTES * model.vocab)


def _min_gpus(states: float, activations: float, usable: float) -> int | None:
    room = usable - activations
    return math.ceil(states / room) if room > 0 else None


def choose(recompute: str, gpus: int, min_gpus: dict[str, int | None]) -> str:
    """The strategy a job runs on ``gpus``: the one asked, or for ``auto`` the cheapest that fits there.

    Selective is never slower than full (full runs every layer's forward pass twice), so auto takes selective
    wherever it fits. Where it does not, auto answers with the strategy that needs the fewest GPUs (full, but for a
    one-layer model, where keeping the layer's input too makes full keep more), so that the verdict's minimum
    count and the time shown belong to the same strategy.
    """
    if recompute != "auto":
        return recompute
    selective = min_gpus["selective"]
    if selective is not None and gpus >= selective:
        return "selective"
    full = min_gpus["full"]
    if selective is not None and (full is None or selective <= full):
        return "selective"
    return "full"


def memory_fit(
    model: ModelSpec,
    *,
    method: str,
    gpu_memory_gb: float,
    gpus: int,
    seq_len: int,
    micro_batch: int = 1,
    recompute: str = "auto",
) -> MemoryFit:
    """The memory verdict of ``gpus`` GPUs of ``gpu_memory_gb``, with the recomputation strategy ``recompute``
    (``RECOMPUTE_SETTINGS``): the figures are those of the strategy the job runs there (``choose``)."""
    if recompute not in RECOMPUTE_SETTINGS:
        raise ValueError(f"memory_fit: recompute must be one of {', '.join(RECOMPUTE_SETTINGS)}, got {recompute!r}")
    states = state_bytes(model, method)
    usable = gpu_memory_gb * 1e9 * USABLE_FRACTION
    kept = {s: activation_bytes(model, seq_len=seq_len, micro_batch=micro_batch, recompute=s) for s in RECOMPUTE}
    need = {s: _min_gpus(states, kept[s], usable) for s in RECOMPUTE}
    strategy = choose(recompute, gpus, need)
    activations = kept[strategy]
    per_gpu = states / gpus + activations
    allowed = [need[s] for s in (RECOMPUTE if recompute == "auto" else (strategy,))]
    min_gpus = min((n for n in allowed if n is not None), default=None)
    gb = 1e9
    needed = need[strategy]
    fits = needed is not None and gpus >= needed
    if min_gpus is None:
        even = ", even with full recomputation" if strategy == "full" else ""
        reason = (
            f"one micro-batch's activations ({activations / gb:.1f} GB at seq-len {seq_len} x {micro_batch}{even}) "
            f"exceed the {usable / gb:.0f} GB usable per GPU; lower --seq-len or --micro-batch"
            + (", or --recompute full or auto" if strategy == "selective" and need["full"] is not None else "")
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
        reason += f", with {strategy} recomputation"
    return MemoryFit(
        total_gb=states / gb,
        per_gpu_gb=per_gpu / gb,
        activations_gb=activations / gb,
        min_gpus=min_gpus,
        fits=fits,
        reason=reason,
        recompute=strategy,
        min_gpus_by_recompute=need,
    )
