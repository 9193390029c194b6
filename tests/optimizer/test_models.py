"""The shape options of a bare parameter count (models.with_shape, resolve_model's --layers/--hidden/--vocab/
--embeddings): the calibration's rows and the command line build their models by one rule, so a user who types a
published run's shape gets the FLOPs the calibration was fitted with."""

from __future__ import annotations

import pytest

from optimizer.calibration import Case, as_typed, job_of, rows
from optimizer.compute import training_flops
from optimizer.models import SHAPE_TOLERANCE, implied_params, resolve_model, with_shape
from warehouse.errors import UsageError


def typed_shape(row: dict[str, str]) -> dict[str, int | str | None]:
    """The shape options a user would type for a calibration row, from what the row publishes."""
    return {
        "layers": int(row["layers"]) if row["layers"] else None,
        "hidden": int(row["hidden"]) if row["hidden"] else None,
        "vocab": int(row["vocab"]) if row["vocab"] else None,
        "embeddings": {"no": "untied", "yes": "tied"}.get(row["tied"]),
    }


SHAPED = [
    r
    for r in rows()
    if not r["model"] and not r["attention_span"] and not r["lookup_params_b"] and (r["layers"] or r["tied"])
]


def test_every_shaped_row_is_in_the_comparison() -> None:
    """The comparison below covers the rows a user can type whole (no preset, no sliding windows or value
    embeddings, which the command line does not take) and that publish a shape or a tying: 129 of the 160."""
    assert len(SHAPED) == 153  # round 56: one row (round 54: 152, six rows; round 51: 146)


@pytest.mark.parametrize("row", SHAPED, ids=lambda r: r["id"])
def test_the_shape_options_give_the_calibration_rows_flops(row: dict[str, str]) -> None:
    """--model COUNT [--active-params A] --layers L --hidden D --vocab V --embeddings E, as resolve_model builds it
    for the command line, has exactly the FLOPs calibration._model gives the row (and passes the plausibility
    check: every published shape lies within SHAPE_TOLERANCE of its count)."""
    job = job_of(row)
    model = resolve_model(
        row["total_params_b"] + "B",
        active_params=row["active_params_b"] + "B" if row["active_params_b"] else None,
        **typed_shape(row),  # type: ignore[arg-type]
    )
    typed = training_flops(model, job.tokens, seq_len=job.sequence_length)
    assert typed == job.flops()
    assert (model.layers, model.hidden, model.input_embedding) == (
        job.model.layers,
        job.model.hidden,
        job.model.input_embedding,
    )


def test_pythia_70m_typed_with_its_shape() -> None:
    """Pythia 70M (row 54: 6 x 512, vocabulary 50,304, untied): the untied table, 50,304 x 512, leaves the
    matmuls, and the attention is the published shape's, 12.L.d.S per token; the bare count gave 1.58x the
    weights' FLOPs and 2.04x the attention's."""
    tokens = 299.9e9
    given = resolve_model("0.0704B", layers=6, hidden=512, vocab=50304, embeddings="untied")
    flops = training_flops(given, tokens, seq_len=2048)
    assert given.input_embedding == 50304 * 512
    assert flops.weights == pytest.approx(6 * (70.4e6 - 50304 * 512) * tokens)
    assert flops.attention == pytest.approx(12 * 6 * 512 * 2048 * tokens)
    bare = training_flops(resolve_model("0.0704B"), tokens, seq_len=2048)
    assert bare.weights / flops.weights == pytest.approx(1.577, abs=1e-3)
    assert (given.shape_basis, given.vocab_basis, given.embeddings_basis, given.embeddings) == (
        "given",
        "given",
        "given",
        "untied",
    )


def test_tied_keeps_the_whole_count_and_records_the_vocabulary() -> None:
    tied = resolve_model("1.2B", layers=16, hidden=2048, vocab=100352, embeddings="tied")
    assert (tied.input_embedding, tied.vocab, tied.embeddings) == (0.0, 100352, "tied")
    assert training_flops(tied, 1e9, seq_len=2048).weights == pytest.approx(6 * 1.2e9 * 1e9)


def test_a_bare_count_says_its_shape_is_derived() -> None:
    bare = resolve_model("1.2B")
    assert (bare.shape_basis, bare.vocab_basis, bare.embeddings_basis, bare.embeddings) == (
        "derived",
        "assumed",
        "assumed",
        "tied",
    )
    assert resolve_model("llama3-8b").shape_basis == "preset"


def test_the_shape_of_an_moe_is_its_active_paths() -> None:
    """With --active-params the shape replaces the active path's derived one, as the calibration's MoE rows do."""
    moe = resolve_model("47B", active_params="13B", layers=32, hidden=4096, vocab=32000, embeddings="untied")
    assert (moe.total_params, moe.active_params, moe.layers, moe.hidden) == (47e9, 13e9, 32, 4096)
    assert training_flops(moe, 1e9, seq_len=4096).weights == pytest.approx(6 * (13e9 - 32000 * 4096) * 1e9)


@pytest.mark.parametrize(
    ("text", "shape", "says"),
    [
        ("llama3-8b", {"layers": 32, "hidden": 4096}, "--layers, --hidden: llama3-8b is a preset"),
        ("llama3-8b", {"embeddings": "untied"}, "--embeddings: llama3-8b is a preset"),
        ("1.2B", {"layers": 16}, "--layers and --hidden go together"),
        ("1.2B", {"hidden": 2048}, "--layers and --hidden go together"),
        ("1.2B", {"layers": 0, "hidden": 2048}, "--layers must be a positive whole number, got 0"),
        ("1.2B", {"layers": 16, "hidden": -1}, "--hidden must be a positive whole number, got -1"),
        ("1.2B", {"vocab": 0}, "--vocab must be a positive whole number, got 0"),
        ("1.2B", {"embeddings": "untied"}, "--embeddings untied needs --vocab"),
        ("1.2B", {"embeddings": "shared"}, "--embeddings must be one of tied, untied, got 'shared'"),
        ("1.2B", {"layers": 2048, "hidden": 16}, "imply 6.29M parameters"),
        ("1.2B", {"layers": 16, "hidden": 8192}, "more than 2x off the model's 1.2B"),
        ("1.2B", {"vocab": 10**6, "embeddings": "untied"}, "is not less than the 1.2B parameters"),
    ],
)
def test_nonsense_shapes_are_refused(text: str, shape: dict[str, int | str], says: str) -> None:
    with pytest.raises(UsageError, match=says.replace("(", r"\(").replace(".", r"\.")):
        resolve_model(text, **shape)  # type: ignore[arg-type]


def test_the_tolerance_is_the_implied_count_either_way() -> None:
    """12.L.d^2 + the embeddings: 16 x 2048 with an untied 100,352 vocabulary implies 1.22B; 2x off either way is
    the limit."""
    spec = resolve_model("1.2B", layers=16, hidden=2048, vocab=100352, embeddings="untied")
    assert implied_params(spec) == 12 * 16 * 2048**2 + 2 * 100352 * 2048
    low = implied_params(spec) / SHAPE_TOLERANCE
    resolve_model(f"{low * 1.01:.0f}", layers=16, hidden=2048, vocab=100352, embeddings="untied")
    with pytest.raises(UsageError, match="more than 2x off"):
        resolve_model(f"{low * 0.99:.0f}", layers=16, hidden=2048, vocab=100352, embeddings="untied")


def test_with_shape_refuses_a_preset() -> None:
    with pytest.raises(UsageError, match="is a preset"):
        with_shape(resolve_model("llama3-8b"), layers=32, hidden=4096)


def test_the_typed_view_with_the_shape_options_has_the_calibrations_flops() -> None:
    """bench/calibration.py's "typed: count, --seq-len and the shape options" view (calibration.as_typed with
    ``shape=True``) gives every row a user can type whole the FLOPs and attention share the calibration reads, where
    the bare count does not: Pythia 70M (row 54) had 1.68x its FLOPs typed bare."""
    for row in SHAPED:
        case = Case.of(row)
        typed = as_typed(case, row, seq_len=True, shape=True)
        assert (typed.flops, typed.attention_share) == (case.flops, case.attention_share), row["run"]
    pythia = next(r for r in SHAPED if r["id"] == "54")
    case = Case.of(pythia)
    assert as_typed(case, pythia, seq_len=True).flops / case.flops == pytest.approx(1.68, abs=0.01)
