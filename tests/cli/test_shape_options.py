"""--layers, --hidden, --vocab and --embeddings on ``estimate`` and ``plan``: what the output says about a given shape,
and the one-line refusals (exit 2)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import REPO, run_costopt

JOB = ("--model", "1.2B", "--tokens", "20B")
SHAPE = ("--layers", "16", "--hidden", "2048", "--vocab", "100352", "--embeddings", "untied")
ON = ("--gpu", "H100", "--gpus", "8")


def test_estimate_json_names_the_given_shape() -> None:
    out = run_costopt("estimate", *JOB, *ON, *SHAPE, "--format", "json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    model = data["model"]
    assert {k: model[k] for k in ("layers", "hidden", "vocab", "embeddings")} == {
        "layers": 16,
        "hidden": 2048,
        "vocab": 100352,
        "embeddings": "untied",
    }
    assert model["input_embedding_params"] == pytest.approx(100352 * 2048, rel=1e-3)  # rounded to 4 figures
    assert (model["shape_basis"], model["vocab_basis"], model["embeddings_basis"]) == ("given", "given", "given")
    # the untied table is out of the 6.N.D: 6 x (1.2B - 100,352 x 2,048) x 20B
    assert data["assumptions"]["flops_weights"] == pytest.approx(6 * (1.2e9 - 100352 * 2048) * 20e9, rel=1e-3)


def test_estimate_json_of_a_bare_count_says_the_shape_is_derived() -> None:
    out = run_costopt("estimate", *JOB, *ON, "--format", "json")
    assert out.returncode == 0, out.stderr
    model = json.loads(out.stdout)["model"]
    assert (model["shape_basis"], model["vocab_basis"], model["embeddings_basis"]) == ("derived", "assumed", "assumed")
    assert (model["vocab"], model["embeddings"], model["input_embedding_params"]) == (32000, "tied", 0)


def test_estimate_table_says_the_shape_was_given() -> None:
    out = run_costopt("estimate", *JOB, *ON, *SHAPE, env={"COLUMNS": "120"})
    assert out.returncode == 0, out.stderr
    assert "shape: 16 x 2048 (given); embeddings: untied, 100,352 x 2048 left out of the FLOPs (given)" in out.stdout
    bare = run_costopt("estimate", *JOB, *ON, env={"COLUMNS": "120"})
    assert "shape:" not in bare.stdout


def test_plan_json_names_the_given_shape(tmp_path) -> None:
    env = {"COSTOPT_DATA_DIR": str(tmp_path), "COSTOPT_DB": ""}  # seeded from the bundled snapshot on first use
    out = run_costopt("plan", *JOB, *SHAPE, "--top", "1", "--format", "json", env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    job = json.loads(out.stdout)["job"]
    fields = ("layers", "hidden", "shape_basis", "vocab", "vocab_basis", "embeddings", "embeddings_basis")
    assert [job[k] for k in fields] == [16, 2048, "given", 100352, "given", "untied", "given"]


@pytest.mark.parametrize(
    ("command", "args", "says"),
    [
        (
            "estimate",
            ("--model", "llama3-8b", "--tokens", "20B", *ON, "--layers", "32", "--hidden", "4096"),
            "--layers, --hidden: llama3-8b is a preset and carries its published shape",
        ),
        ("plan", ("--model", "llama3-8b", "--tokens", "20B", "--vocab", "128256"), "--vocab: llama3-8b is a preset"),
        ("estimate", (*JOB, *ON, "--layers", "16"), "--layers and --hidden go together"),
        ("plan", (*JOB, "--hidden", "2048"), "--layers and --hidden go together"),
        ("estimate", (*JOB, *ON, "--layers", "0", "--hidden", "2048"), "--layers must be a positive whole number"),
        ("estimate", (*JOB, *ON, "--embeddings", "untied"), "--embeddings untied needs --vocab"),
        ("estimate", (*JOB, *ON, "--layers", "16", "--hidden", "8192"), "more than 2x off the model's 1.2B"),
    ],
)
def test_shape_options_are_refused_in_one_line(command: str, args: tuple[str, ...], says: str) -> None:
    out = run_costopt(command, *args)
    assert out.returncode == 2
    assert out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1
    assert says in out.stderr


def test_the_readme_shape_example_prints_what_the_tool_prints() -> None:
    """README's *Your model's shape* example (OLMo 2 1B typed with its config) is the tool's output at 100 columns."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    command = next(line for line in readme.splitlines() if line.startswith("$ costopt estimate --model 1.485B"))
    shown = readme.split(command + "\n", 1)[1].split("\n```", 1)[0].splitlines()
    out = run_costopt(*command.split()[2:], env={"COLUMNS": "100", "NO_COLOR": "1"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == shown
    assert "GPU-hours       24,936    34,412  71,692" in shown  # round 54 (51: 26,070-34,412-73,218)
