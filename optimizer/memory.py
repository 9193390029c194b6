"""Will the job fit: bytes per parameter, activations, and sharding across the job's GPUs.

* States per parameter (sharded ZeRO-3/FSDP-style across every GPU of the job):
  full training with mixed-precision Adam = 16 B (BF16 weights 2 + grads 2, FP32 master 4 + two
  moments 8; the ZeRO paper's figure, arXiv:1910.02054 section 3.1); LoRA = 2 B frozen BF16 weights
  plus 16 B for the adapters; QLoRA = 0.5 B NF4 weights + ~0.06 B quantization constants and
  BF16 copies in flight (Dettmers et al., arXiv:2305.14314), plus 16 B for the adapters.
* Activations per GPU (not sharded: each data-parallel rank holds its own micro-batch), per token
  of the micro-batch: with full activation checkpointing the layer inputs (2.d B per layer) plus
  one layer's working set recomputed in the backward pass; without checkpointing ~34.d B per
  layer (Korthikanti et al., arXiv:2205.05198, with flash attention removing the 5.a.s/d term).
  The output logits add 4 B x vocabulary per token (FP32 for the loss).
* Usable memory is 90 % of the card: the CUDA context, NCCL buffers and allocator fragmentation
  take the rest.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from optimizer.models import ModelSpec

LORA_TRAINABLE_FRACTION = 0.005  # rank-16 adapters on every linear layer of a Llama-class model
STATE_BYTES_PER_PARAM = {"full": 16.0, "lora": 2.0, "qlora": 0.56}
ADAPTER_BYTES_PER_PARAM = 16.0
USABLE_FRACTION = 0.90
CHECKPOINTED_BYTES_PER_LAYER_TOKEN = 2.0  # times hidden: the saved layer input in BF16
FULL_BYTES_PER_LAYER_TOKEN = 34.0  # times hidden: every saved tensor of one layer (with flash attention)
LOGIT_BYTES = 4.0


@dataclass(frozen=True, slots=True)
class MemoryFit:
    total_gb: float  # model and optimizer states over the whole job
    per_gpu_gb: float  # what each GPU holds at this GPU count (states share + activations)
    activations_gb: float  # per GPU
    min_gpus: int | None  # None: no count fits (one micro-batch's activations exceed the card)
    fits: bool
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def state_bytes(model: ModelSpec, method: str) -> float:
    adapters = LORA_TRAINABLE_FRACTION * ADAPTER_BYTES_PER_PARAM if method != "full" else 0.0
    return model.total_params * (STATE_BYTES_PER_PARAM[method] + adapters)


def activation_bytes(model: ModelSpec, *, seq_len: int, micro_batch: int, checkpointing: bool) -> float:
    tokens = seq_len * micro_batch
    if checkpointing:
        per_token = model.hidden * (model.layers * CHECKPOINTED_BYTES_PER_LAYER_TOKEN + FULL_BYTES_PER_LAYER_TOKEN)
    else:
        per_token = model.hidden * model.layers * FULL_BYTES_PER_LAYER_TOKEN
    return tokens * (per_token + LOGIT_BYTES * model.vocab)


def memory_fit(
    model: ModelSpec,
    *,
    method: str,
    gpu_memory_gb: float,
    gpus: int,
    seq_len: int,
    micro_batch: int = 1,
    checkpointing: bool = True,
) -> MemoryFit:
    states = state_bytes(model, method)
    activations = activation_bytes(model, seq_len=seq_len, micro_batch=micro_batch, checkpointing=checkpointing)
    usable = gpu_memory_gb * 1e9 * USABLE_FRACTION
    per_gpu = states / gpus + activations
    room = usable - activations
    min_gpus = math.ceil(states / room) if room > 0 else None
    gb = 1e9
    if min_gpus is None:
        reason = (
            f"one micro-batch's activations ({activations / gb:.1f} GB at seq-len {seq_len} x {micro_batch}) exceed "
            f"the {usable / gb:.0f} GB usable per GPU; lower --seq-len or --micro-batch"
            + ("" if checkpointing else ", or enable activation checkpointing")
        )
    elif gpus >= min_gpus:
        reason = f"{per_gpu / gb:.1f} GB per GPU of {usable / gb:.0f} GB usable"
    else:
        reason = (
            f"needs {per_gpu / gb:.1f} GB per GPU on {gpus} GPU{'s' if gpus != 1 else ''}, "
            f"{usable / gb:.0f} GB usable: "
            f"at least {min_gpus} GPUs with {gpu_memory_gb:g} GB"
        )
    return MemoryFit(
        total_gb=states / gb,
        per_gpu_gb=per_gpu / gb,
        activations_gb=activations / gb,
        min_gpus=min_gpus,
        fits=min_gpus is not None and gpus >= min_gpus,
        reason=reason,
    )
