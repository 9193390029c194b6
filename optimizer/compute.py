"""Training FLOPs: 6.N.D for the weights, plus 12.L.d.S per token for attention.

Convention (PaLM, arXiv:2204.02311 appendix B; Megatron-LM): per token, a full training step costs
6.N_active FLOPs in the weight matmuls plus 12.L.d.S in attention scores and values (forward and
backward, no credit taken for the causal mask). The attention term is always counted, as the calibration runs
count it: with a bare count's conventional shape and, unless --seq-len says otherwise, an assumed sequence length
(``models.ASSUMED_SEQ_LEN``), which the output names. N counts the parameters that take part in a matmul: an
untied input embedding is a table lookup and is left out (Megatron-LM's count, 96.B.s.l.h^2.(1 + s/6h +
V/16lh) in arXiv:2104.04473, has the logit layer's V.h once and no input-embedding term); a tied one is the
output projection and stays in; so do other lookup tables a model may have (nanochat's value embeddings), and
a layer with a sliding window attends only its window (``ModelSpec.attention_span``), both stated only by calibration
rows. Where the embedding is not known (a bare ``8B``) N is the whole count: a few
per cent too many FLOPs for a model of a billion parameters or more (Llama 3 8B: 6.5 %), a fifth for a 135M
model with a 32K vocabulary. Fine-tuning with frozen base weights (LoRA, QLoRA) skips the weight-gradient
matmuls: 4.N per token instead of 6.N, the adapters' own cost is negligible. MFU figures in this project
are always relative to these "model FLOPs", never to hardware FLOPs that count activation recomputation.
"""

from __future__ import annotations

from dataclasses import dataclass

from optimizer.models import ModelSpec

METHODS = ("full", "lora", "qlora")
WEIGHT_FLOPS_PER_PARAM = {"full": 6.0, "lora": 4.0, "qlora": 4.0}


@dataclass(frozen=True, slots=True)
class Flops:
    weights: float
    attention: float

    @property
    def total(self) -> float:
        return self.weights + self.attention


def training_flops(model: ModelSpec, tokens: float, *, method: str = "full", seq_len: int | None = None) -> Flops:
    """FLOPs of one pass over ``tokens``, attention at ``seq_len`` or else the model's training length (a preset's
    published one; for a bare count, ``models.ASSUMED_SEQ_LEN``)."""
    matmul_params = model.active_params - model.input_embedding - model.lookup_params
    weights = WEIGHT_FLOPS_PER_PARAM[method] * matmul_params * tokens
    seq = seq_len if seq_len is not None else model.train_seq_len
    # attention's score and value products have no weights: their backward pass is all activation gradients, the
    # same under LoRA as in full training, so only the weight FLOPs shrink with a frozen base (it scaled by 4/6
    # too, putting LoRA at 32K tokens ~25 % fast)
    per_token = 12.0 * model.layers * model.hidden * seq * model.attention_span
    return Flops(weights=weights, attention=per_token * tokens)
