"""Model presets with their architecture, and what a bare parameter count stands for.

Architecture matters twice: the attention term of the training FLOPs grows with layers x width x
sequence length, and activation memory grows with layers x width. Presets carry the published
shapes (each preset names its source); a bare count like ``8B`` gets a conventional dense shape
(``derived_shape``) and the sequence length ``ASSUMED_SEQ_LEN`` unless ``--seq-len`` is given, and the output
says so. Leaving the attention term out for an unknown architecture would be a guess too, and a biased one: the
realized-MFU constants are fitted on published runs whose FLOPs count their attention (all but three of the
calibration runs), so a bare count without it was predicted about 12 % too fast (median 0.88x of the published
GPU-hours, out of sample, against 0.97x with it in round 14: ``python bench/calibration.py``).
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass
from typing import Any

from optimizer.units import human_count, parse_count
from warehouse.errors import UsageError

# The sequence length assumed for a bare parameter count (attention FLOPs and activation memory) when --seq-len is not
# given: the median of the calibration runs that publish theirs (2048: 45 of 102 runs, against 30 at 4096, 15 at
# 1024, 10 at 8192 and 2 at 512). Of the lengths tried for the bare-count view of the calibration (none, 1024, 2048,
# 4096), 2048 puts the most runs within 0.8-1.25x out of sample.
ASSUMED_SEQ_LEN = 2048


@dataclass(frozen=True, slots=True)
class ModelSpec:
    name: str
    total_params: float
    active_params: float  # equal to total for dense models; the routed share for mixture-of-experts
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    context: int  # the longest context the model supports
    train_seq_len: int  # the sequence length of (most of) its pre-training: the default --seq-len
    experts: int = 0  # routed experts per MoE layer (0 for dense)
    experts_per_token: int = 0
    source: str = ""
    gated_ffn: bool = True  # SwiGLU (three FFN matrices) vs GPT-style (two)
    preset: bool = True  # False for a bare parameter count with a derived shape
    # Parameters of an untied input embedding (vocab x width): a table lookup, no matmul, so no FLOPs
    # (optimizer.compute). 0 when the input and output embeddings are tied (the shared matrix does the output
    # projection's work) or unknown (a bare parameter count: its FLOPs stay 6.N.D).
    input_embedding: float = 0.0
    # Stated only by calibration rows (optimizer/data/calibration_runs.csv), never by --model: the share of the sequence
    # an average layer attends where some layers use sliding windows (1: every layer sees the whole sequence), and
    # parameters in lookup tables besides the input embedding (value embeddings), which do no matmul work either.
    attention_span: float = 1.0
    lookup_params: float = 0.0
    # False where the preset's source does not publish its pre-training length and ``train_seq_len`` is an assumption
    # (its source says so): the output calls that length assumed, not the preset's published one
    train_seq_len_published: bool = True

    @property
    def moe(self) -> bool:
        return self.active_params < self.total_params * 0.95

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["moe"] = self.moe
        return data


def _p(
    name: str,
    total: float,
    active: float | None,
    layers: int,
    hidden: int,
    heads: int,
    kv: int,
    ffn: int,
    vocab: int,
    context: int,
    seq: int,
    source: str,
    experts: int = 0,
    top: int = 0,
    gated: bool = True,
    tied: bool = False,
    seq_assumed: bool = False,
) -> ModelSpec:
    """A preset; ``tied``: the input embedding shares the output projection's weights (GPT-3), else it is a lookup
    table of its own (Llama, Mistral, Qwen2.5 7B and up, DeepSeek: their configs' ``tie_word_embeddings: false``);
    ``seq_assumed``: the source publishes no pre-training length and ``seq`` is an assumption (the source says so)."""
    return ModelSpec(
        name, total, active or total, layers, hidden, heads, kv, ffn, vocab, context, seq, experts, top, source, gated,
        input_embedding=0.0 if tied else float(vocab * hidden), train_seq_len_published=not seq_assumed,
    )  # fmt: skip


# Published shapes: config.json of each model's official release and the papers named.
PRESETS: dict[str, ModelSpec] = {
    s.name: s
    for s in [
        _p("llama1-7b", 6.74e9, None, 32, 4096, 32, 32, 11008, 32000, 2048, 2048, "LLaMA, arXiv:2302.13971 Table 2"),
        _p("llama1-13b", 13.0e9, None, 40, 5120, 40, 40, 13824, 32000, 2048, 2048, "LLaMA, arXiv:2302.13971"),
        _p("llama1-33b", 32.5e9, None, 60, 6656, 52, 52, 17920, 32000, 2048, 2048, "LLaMA, arXiv:2302.13971"),
        _p("llama1-65b", 65.2e9, None, 80, 8192, 64, 64, 22016, 32000, 2048, 2048, "LLaMA, arXiv:2302.13971"),
        _p("llama2-7b", 6.74e9, None, 32, 4096, 32, 32, 11008, 32000, 4096, 4096, "meta-llama/Llama-2-7b-hf config"),
        _p("llama2-13b", 13.0e9, None, 40, 5120, 40, 40, 13824, 32000, 4096, 4096, "meta-llama/Llama-2-13b-hf config"),
        _p("llama2-70b", 69.0e9, None, 80, 8192, 64, 8, 28672, 32000, 4096, 4096, "meta-llama/Llama-2-70b-hf config"),
        _p("llama3-8b", 8.03e9, None, 32, 4096, 32, 8, 14336, 128256, 8192, 8192, "meta-llama/Meta-Llama-3-8B config"),
        _p(
            "llama3-70b", 70.6e9, None, 80, 8192, 64, 8, 28672, 128256, 8192, 8192, "meta-llama/Meta-Llama-3-70B config"
        ),
        _p(
            "llama3.1-8b",
            8.03e9,
            None,
            32,
            4096,
            32,
            8,
            14336,
            128256,
            131072,
            8192,
            "meta-llama/Llama-3.1-8B config; pre-trained at 8K, extended to 128K",
        ),
        _p(
            "llama3.1-70b",
            70.6e9,
            None,
            80,
            8192,
            64,
            8,
            28672,
            128256,
            131072,
            8192,
            "meta-llama/Llama-3.1-70B config",
        ),
        _p(
            "llama3.1-405b",
            405.9e9,
            None,
            126,
            16384,
            128,
            8,
            53248,
            128256,
            131072,
            8192,
            "meta-llama/Llama-3.1-405B config; The Llama 3 Herd of Models, arXiv:2407.21783",
        ),
        _p(
            "mistral-7b",
            7.24e9,
            None,
            32,
            4096,
            32,
            8,
            14336,
            32000,
            32768,
            8192,
            "mistralai/Mistral-7B-v0.1 config (training length not published; 8K assumed)",
            seq_assumed=True,
        ),
        _p(
            "mixtral-8x7b",
            46.7e9,
            12.9e9,
            32,
            4096,
            32,
            8,
            14336,
            32000,
            32768,
            8192,
            "Mixtral of Experts, arXiv:2401.04088 (47B total, 13B active)",
            experts=8,
            top=2,
        ),
        _p(
            "mixtral-8x22b",
            140.6e9,
            39.1e9,
            56,
            6144,
            48,
            8,
            16384,
            32768,
            65536,
            8192,
            "mistralai/Mixtral-8x22B-v0.1 config (141B total, 39B active)",
            experts=8,
            top=2,
        ),
        _p(
            "qwen2.5-7b",
            7.62e9,
            None,
            28,
            3584,
            28,
            4,
            18944,
            152064,
            131072,
            4096,
            "Qwen/Qwen2.5-7B config; Qwen2.5 report arXiv:2412.15115 (pre-trained at 4K, then 32K)",
        ),
        _p("qwen2.5-72b", 72.7e9, None, 80, 8192, 64, 8, 29568, 152064, 131072, 4096, "Qwen/Qwen2.5-72B config"),
        _p(
            "deepseek-v3",
            671e9,
            37e9,
            61,
            7168,
            128,
            128,
            18432,
            129280,
            131072,
            4096,
            "DeepSeek-V3 technical report arXiv:2412.19437 (671B total, 37B active, 256 routed experts, top-8)",
            experts=256,
            top=8,
        ),
        _p(
            "llama4-scout",
            109e9,
            17e9,
            48,
            5120,
            40,
            8,
            8192,
            202048,
            10485760,
            8192,
            "meta-llama/Llama-4-Scout-17B-16E config (16 routed experts, top-1, plus a shared expert); model card"
            " (109B total, 17B active; pre-training length not published: 8K assumed, the attention chunk size)",
            experts=16,
            top=1,
            seq_assumed=True,
        ),
        _p(
            "llama4-maverick",
            400e9,
            17e9,
            48,
            5120,
            40,
            8,
            8192,
            202048,
            1048576,
            8192,
            "meta-llama/Llama-4-Maverick-17B-128E config (128 routed experts in every other layer, top-1, plus a"
            " shared expert); model card (400B total, 17B active; 8K pre-training length assumed as for Scout)",
            experts=128,
            top=1,
            seq_assumed=True,
        ),
        _p(
            "gpt3-175b",
            175e9,
            None,
            96,
            12288,
            96,
            96,
            49152,
            50257,
            2048,
            2048,
            "Language Models are Few-Shot Learners, arXiv:2005.14165 Table 2.1",
            gated=False,
            tied=True,
        ),
    ]
}
ALIASES = {
    "llama-7b": "llama1-7b",
    "llama-13b": "llama1-13b",
    "llama-33b": "llama1-33b",
    "llama-65b": "llama1-65b",
    "gpt3": "gpt3-175b",
    "gpt-3": "gpt3-175b",
    "deepseekv3": "deepseek-v3",
    "llama4-scout-17b-16e": "llama4-scout",
    "llama4-maverick-17b-128e": "llama4-maverick",
}


def _key(name: str) -> str:
    return re.sub(r"[\s_]", "-", name.strip().lower()).replace("llama-", "llama", 1) if name else name


def derived_shape(params: float, name: str) -> ModelSpec:
    """A conventional dense decoder for a bare parameter count.

    N ~= 12.L.d^2 with d/L ~= 128 (the aspect ratio of Llama 2 7B/70B and GPT-3), width rounded to a
    multiple of 128. The shape sets activation memory and, at ``ASSUMED_SEQ_LEN`` or --seq-len, the attention FLOPs.
    """
    hidden = max(128, round((params * 128 / 12) ** (1 / 3) / 128) * 128)
    layers = max(1, round(params / (12 * hidden * hidden)))
    return ModelSpec(
        name=name,
        total_params=params,
        active_params=params,
        layers=layers,
        hidden=hidden,
        heads=max(1, hidden // 128),
        kv_heads=max(1, hidden // 128),
        ffn=4 * hidden,
        vocab=32000,
        gated_ffn=False,
        context=4096,
        train_seq_len=ASSUMED_SEQ_LEN,
        source="derived: N = 12.L.d^2, d/L = 128",
        preset=False,
    )


def resolve_model(text: str, *, active_params: str | None = None) -> ModelSpec:
    """A preset name (``llama3-8b``) or a parameter count (``8B``, ``1.3b``, ``175e9``)."""
    key = _key(text)
    key = ALIASES.get(key, key)
    spec = PRESETS.get(key) or PRESETS.get(key.replace("llama-", "llama"))
    if spec is None:
        if not re.match(r"^\s*[0-9.]", text):
            raise UsageError(
                f"unknown model {text!r}: give a parameter count (8B, 1.3b, 175e9) or a preset: " + ", ".join(PRESETS)
            )
        params = parse_count(text, what="--model")
        spec = derived_shape(params, human_count(params))
    if active_params is not None:
        active = parse_count(active_params, what="--active-params")
        if active > spec.total_params:
            raise UsageError(f"--active-params {active_params} exceeds the model's {human_count(spec.total_params)}")
        if spec.preset and not spec.experts:
            # a dense preset's every parameter is active: a smaller figure made it an MoE (moe: true, MFU x0.7) with
            # the dense shape's attention and memory, a model that does not exist (llama3-8b --active-params 2B)
            moe = ", ".join(name for name, preset in PRESETS.items() if preset.experts)
            raise UsageError(
                f"--active-params is for mixture-of-experts models: {spec.name} is dense (all "
                f"{human_count(spec.total_params)} parameters active for every token); leave it out, or give an MoE "
                f"as a total count (--model 47B --active-params 13B) or a preset ({moe})"
            )
        shape = spec if spec.preset else derived_shape(active, spec.name)  # width and depth follow the active path
        tables = shape.input_embedding + shape.lookup_params
        if active <= tables:  # the matmuls' share would be negative (llama3-8b with 100M gave -2.55e20 FLOPs)
            raise UsageError(
                f"--active-params {active_params} is not more than {spec.name}'s embedding tables "
                f"({human_count(tables)}): give the parameters each token passes through, tables included"
            )
        spec = ModelSpec(**{**asdict(shape), "total_params": spec.total_params, "active_params": active})
    return spec


def check_shape(spec: ModelSpec) -> float:
    """Relative gap between the preset's stated parameters and 12.L.d^2-style arithmetic (a sanity test aid)."""
    return abs(dense_params(spec) - spec.total_params) / spec.total_params if not spec.moe else math.nan


def dense_params(spec: ModelSpec) -> float:
    """Parameters implied by the shape of a dense decoder (attention with GQA, FFN, the embeddings)."""
    d = spec.hidden
    attention = 2 * d * d + 2 * d * d * spec.kv_heads / spec.heads
    ffn = (3 if spec.gated_ffn else 2) * d * spec.ffn
    embeddings = spec.vocab * d + spec.input_embedding  # the output projection, plus the input table when untied
    return spec.layers * (attention + ffn) + embeddings
