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
from dataclasses import asdict, dataclass, replace
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
    # Where the depth and width, the vocabulary and the embedding tying come from, for the output: "preset" (its
    # source), "derived" / "assumed" (a bare count's conventional shape, vocabulary 32000, the whole count in the
    # matmuls), "given" (--layers/--hidden, --vocab, --embeddings: ``with_shape``), "published" (a calibration row)
    shape_basis: str = "preset"
    vocab_basis: str = "preset"
    embeddings_basis: str = "preset"

    @property
    def moe(self) -> bool:
        return self.active_params < self.total_params * 0.95

    @property
    def embeddings(self) -> str:
        """``untied`` where the input embedding is a table of its own (a lookup, out of the FLOPs), else ``tied``:
        the whole count does matmul work, as a bare count without --embeddings assumes."""
        return "untied" if self.input_embedding else "tied"

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
        shape_basis="derived",
        vocab_basis="assumed",
        embeddings_basis="assumed",
    )


EMBEDDINGS = ("tied", "untied")
# How far a given shape's implied count (12.L.d^2 + the embeddings) may lie from the count it shapes, either way,
# before it is refused as a slip (a width typed for the layers): every calibration row's published shape lies within
# 0.53-1.5x of its count (nanochat's value embeddings and JetMoE's experts are the far ends), a fine-grained MoE's
# active path or a big vocabulary within 2x too (Mixtral 8x7B's 32 x 4096 is 0.54x of its 12.9B active).
SHAPE_TOLERANCE = 2.0


def with_shape(
    spec: ModelSpec,
    *,
    layers: int | None = None,
    hidden: int | None = None,
    vocab: int | None = None,
    embeddings: str | None = None,
    heads: int | None = None,
    basis: str = "given",
) -> ModelSpec:
    """A bare count's spec with a known shape in place of the conventional one, the one rule the calibration's rows
    (``calibration._model``, ``basis="published"``) and the command line (--layers, --hidden, --vocab, --embeddings)
    share, so that what a user types and what the calibration was fitted on cannot drift apart.

    Why: the shape sets the attention FLOPs (12.L.d.S per token) and the activation memory, and an untied input
    embedding (vocab x hidden) is a lookup, left out of the FLOPs (optimizer.compute); a small untied model typed as
    a bare count was predicted 1.3-1.7x too slow (Pythia 70M: 1.69x against 1.01x with its published shape).
    ``layers`` and ``hidden`` go together and replace the derived ones (for an MoE: its active path's); the heads
    are ``heads`` or the conventional 128-wide ones of the width (they set only unfused attention's cost, not the
    FLOPs); ``embeddings="untied"`` needs ``vocab`` and takes vocab x hidden out of the matmuls, ``"tied"`` keeps the
    whole count in them; ``vocab`` alone is recorded (the logits' memory).
    """
    if spec.preset:
        raise UsageError(f"{spec.name} is a preset with its published shape: give a parameter count to set the shape")
    if (layers is None) != (hidden is None):
        raise UsageError("--layers and --hidden go together: give both (config.json's num_hidden_layers and "
                         "hidden_size) or neither")  # fmt: skip
    for flag, value in (("--layers", layers), ("--hidden", hidden), ("--vocab", vocab), ("heads", heads)):
        if value is not None and value <= 0:
            raise UsageError(f"{flag} must be a positive whole number, got {value}")
    if embeddings is not None and embeddings not in EMBEDDINGS:
        raise UsageError(f"--embeddings must be one of {', '.join(EMBEDDINGS)}, got {embeddings!r}")
    if embeddings == "untied" and vocab is None:
        raise UsageError("--embeddings untied needs --vocab: the untied input table is vocab x hidden parameters")
    if layers is not None and hidden is not None:
        spec = replace(spec, layers=layers, hidden=hidden, source=f"{basis} shape", shape_basis=basis)
    # the head width of unfused attention's cost (mfu.unfused_attention_cost): the heads given, else 128-wide heads of
    # the width; the FLOPs do not change (the share of kv heads stays)
    count = heads or max(1, spec.hidden // 128)
    spec = replace(spec, heads=count, kv_heads=max(1, count * spec.kv_heads // spec.heads))
    if vocab is not None:
        spec = replace(spec, vocab=vocab, vocab_basis=basis)
    if embeddings is not None:
        table = float(spec.vocab * spec.hidden) if embeddings == "untied" else 0.0
        spec = replace(spec, input_embedding=table, embeddings_basis=basis)
    if spec.input_embedding >= spec.active_params:
        raise UsageError(
            f"an untied input embedding of {spec.vocab:,} x {spec.hidden:,} ({human_count(spec.input_embedding)}) is "
            f"not less than the {human_count(spec.active_params)} parameters it belongs to: check --vocab and --hidden"
        )
    return spec


def implied_params(spec: ModelSpec) -> float:
    """The count a shape implies, 12.L.d^2 for the layers plus the output projection (vocab x hidden, where the
    vocabulary is known) and an untied input table: the plausibility test of a given shape."""
    output = spec.vocab * spec.hidden if spec.vocab_basis != "assumed" else 0.0
    return 12.0 * spec.layers * spec.hidden**2 + output + spec.input_embedding


def check_given_shape(spec: ModelSpec) -> None:
    """Refuse a given shape more than ``SHAPE_TOLERANCE`` off the count it shapes (the active path's for an MoE): a
    slip such as the width typed for the layers would otherwise change the FLOPs without a word."""
    implied, count = implied_params(spec), spec.active_params
    if not 1 / SHAPE_TOLERANCE <= implied / count <= SHAPE_TOLERANCE:
        path = "the active path's" if spec.moe else "the model's"
        raise UsageError(
            f"--layers {spec.layers} --hidden {spec.hidden} imply {human_count(implied)} parameters (12.L.d^2 + the "
            f"embeddings), more than {SHAPE_TOLERANCE:g}x off {path} {human_count(count)}: check the shape and --model"
        )


def resolve_model(
    text: str,
    *,
    active_params: str | None = None,
    layers: int | None = None,
    hidden: int | None = None,
    vocab: int | None = None,
    embeddings: str | None = None,
) -> ModelSpec:
    """A preset name (``llama3-8b``) or a parameter count (``8B``, ``1.3b``, ``175e9``), the count with the shape
    options where given (``with_shape``: for an MoE the shape is its active path's, as ``derived_shape`` gives it)."""
    spec = _resolve(text, active_params=active_params)
    given = {"--layers": layers, "--hidden": hidden, "--vocab": vocab, "--embeddings": embeddings}
    named = [flag for flag, value in given.items() if value is not None]
    if not named:
        return spec
    if spec.preset:
        raise UsageError(
            f"{', '.join(named)}: {spec.name} is a preset and carries its published shape; give a parameter count "
            "(--model 1.2B) to set the shape"
        )
    spec = with_shape(spec, layers=layers, hidden=hidden, vocab=vocab, embeddings=embeddings)
    if layers is not None:
        check_given_shape(spec)
    return spec


def _resolve(text: str, *, active_params: str | None = None) -> ModelSpec:
    """The preset, or the count with its conventional shape (an MoE's sized by its active count)."""
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
