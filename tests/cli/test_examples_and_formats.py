"""What --help and README show works as shown, errors say what was wrong, and every format carries what it promises:
the examples the parsers refused, the errors that misled, and the formats that dropped fields (a new-user audit)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from tests.conftest import REPO
from warehouse.errors import UsageError


def test_every_example_of_schedule_every_help_parses():
    """``schedule --help`` offered ``30m``, which the duration grammar refuses as ambiguous."""
    import typing

    from cli.commands.schedule import schedule_command
    from scraper.schedule import parse_every

    option = typing.get_type_hints(schedule_command, include_extras=True)["every"].__metadata__[0]
    examples = re.split(r",\s*", option.help.split(":", 1)[1].strip().rstrip("."))
    assert len(examples) >= 2
    for example in examples:
        assert parse_every(example) > timedelta(0), example


def test_every_since_form_the_readme_lists_parses():
    """README's history section listed ``6m``, which ``--since`` refuses (``m``: minutes or months?)."""
    from warehouse.history import parse_since

    readme = (REPO / "README.md").read_text()
    sentence = re.search(r"`--since` takes (.*?)\.\n?\n", readme, re.DOTALL)
    assert sentence is not None
    forms = re.findall(r"`([^`]+)`", sentence.group(1))
    assert "90d" in forms and "all" in forms
    now = datetime(2026, 11, 20, tzinfo=UTC)
    for form in forms:
        assert parse_since(form, now) < now, form


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("2026-02-30", "--since '2026-02-30' is not a real date: day is out of range for month"),
        ("2026-13-01", "--since '2026-13-01' is not a real date: month must be in 1..12"),
        ("2026-1-1", "--since '2026-1-1' is not a date: write a date as YYYY-MM-DD, e.g. 2026-01-31"),
        ("2026-01-01T00:00", "--since '2026-01-01T00:00' is not a date: write a date as YYYY-MM-DD, e.g. 2026-01-31"),
    ],
)
def test_an_impossible_or_malformed_since_date_is_called_a_date_error(text, message):
    from warehouse.history import parse_since

    with pytest.raises(UsageError) as error:
        parse_since(text)
    assert str(error.value) == message


def test_readme_estimate_json_example_is_the_tools_output():
    """README's JSON example for the 65B run had gone stale (mfu.low 0.1151, gpu_hours.high 4386000, wall_hours.high
    2141.0 where the tool says 0.1195, 4223000, 2062.0): its figures are checked against the command it shows."""
    import json

    from tests.conftest import run_costopt

    readme = (REPO / "README.md").read_text()
    block = re.search(r'```json\n\{"model": \{"name": "65B".*?```', readme, re.DOTALL)
    assert block is not None
    shown = {
        key: json.loads(value) for key, value in re.findall(r'"(mfu|gpu_hours|wall_hours)": (\{[^}]*\})', block[0])
    }
    out = run_costopt(
        "estimate", "--model", "65B", "--tokens", "1.4T", "--gpu", "A100-80GB", "--gpus", "2048", "--format", "json"
    )
    assert out.returncode == 0, out.stderr
    answer = json.loads(out.stdout)
    assert set(shown) == {"mfu", "gpu_hours", "wall_hours"}
    assert shown == {key: answer[key] for key in shown}
    # the memory verdict too: it went stale when activations followed the recomputation the job runs (session 60)
    memory = re.search(r'"memory": \{"total_gb": ([\d.]+), "per_gpu_gb": ([\d.]+), "activations_gb": ([\d.]+), '
                       r'"min_gpus": (\d+), "fits": true', block[0])  # fmt: skip
    assert memory is not None
    figures = ("total_gb", "per_gpu_gb", "activations_gb", "min_gpus")
    assert [float(v) for v in memory.groups()] == [answer["memory"][k] for k in figures]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("plan", "--model", "8B", "--tokens", "1B", "--top", "0"), "Invalid value for '--top': 0 is not in the range"),
        (("plan", "--model", "8B", "--tokens", "1B", "--top", "-1"), "Invalid value for '--top': -1 is not in the"),
        (("plan", "--model", "8B", "--tokens", "1B", "--format", "xml"), "'xml' is not one of 'table', 'json', 'csv'"),
        (("prices", "--limit", "0"), "Invalid value for '--limit': 0 is not in the range x>=1"),
        (("refresh", "--keep-raw-days", "-1"), "Invalid value for '--keep-raw-days': -1 is not in the range x>=0"),
        (("schedule", "--jitter", "-5"), "Invalid value for '--jitter': -5 is not in the range x>=0"),
        (("plan", "--tokens", "1B"), "Missing option '--model' / '-m' (see costopt plan --help)"),
        (("completion",), "Missing argument 'shell' (see costopt completion --help)"),
        (("estimate", "--db", "x"), "No such option: --db"),
        (("nosuchcommand",), "No such command 'nosuchcommand' (see costopt --help)"),
        (("history", "--gpu", "H100", "--since"), "Option '--since' requires an argument (see costopt history --help)"),
    ],
)
def test_click_usage_errors_are_one_line(tmp_path, args, message):
    """click's own checks (ranges, choices, missing or unknown options) printed its 4-line usage text, while every
    check of costopt's printed one line: now both are ``costopt: error: ...``, exit 2."""
    from tests.conftest import run_costopt

    out = run_costopt(*args, env={"COSTOPT_DATA_DIR": str(tmp_path), "COSTOPT_DB": ""})
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr.startswith("costopt: error: ") and out.stderr.count("\n") == 1, out.stderr
    assert message in out.stderr and "Usage:" not in out.stderr
    assert not list(tmp_path.iterdir())  # refused before anything was opened


@pytest.mark.parametrize("args", [("--help",), ("plan", "--help"), ()])
def test_help_is_still_clicks_usage_text(tmp_path, args):
    """--help, and the help a bare ``costopt`` prints, keep click's usage text."""
    from tests.conftest import run_costopt

    out = run_costopt(*args, env={"COSTOPT_DATA_DIR": str(tmp_path), "COSTOPT_DB": ""})
    text = out.stdout if args else out.stderr  # a bare ``costopt`` prints its help on stderr, exit 2 (click's way)
    assert out.returncode == (0 if args else 2) and text.startswith("Usage: costopt") and "Options:" in text
    assert "costopt: error" not in out.stderr


@pytest.mark.parametrize(("model", "tokens"), [("1e30", "1B"), ("8B", "1e30")])
@pytest.mark.parametrize("fmt", ["table", "json", "csv"])
def test_estimate_refuses_a_job_of_more_than_a_century_as_plan_does(model, tokens, fmt):
    """estimate answered these with exit 0 and a garbled table (a model named ``1e+18T``, 1.7e19 days) where plan
    refuses any job whose fastest option takes more than a century (README: "Absurd inputs are refused")."""
    from tests.conftest import run_costopt

    out = run_costopt("estimate", "--model", model, "--tokens", tokens, "--gpu", "H100", "--gpus", "8", "-f", fmt)
    assert (out.returncode, out.stdout) == (2, ""), out.stdout
    refused = re.fullmatch(
        r"costopt: error: the job would take (\S+) years on 8 x H100-SXM, more than 100 years: "
        r"check --tokens and --model \(or give more --gpus\)\n",
        out.stderr,
    )
    assert refused is not None, out.stderr
    assert float(refused[1]) > 1e12  # about 1e17 years: the expected wall time, in years


def test_estimate_still_answers_a_long_job_under_a_century():
    from tests.conftest import run_costopt

    out = run_costopt("estimate", "--model", "8B", "--tokens", "1e14", "--gpu", "H100", "--gpus", "8", "-f", "json")
    assert out.returncode == 0, out.stderr
    assert 50 < json.loads(out.stdout)["wall_hours"]["expected"] / 8760 < 100


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A data dir whose default warehouse holds the bundled snapshot and history (seeded once)."""
    from tests.conftest import run_costopt

    environ = {"COSTOPT_DATA_DIR": str(tmp_path_factory.mktemp("audit-b-data")), "COSTOPT_DB": "", "COLUMNS": "100"}
    first = run_costopt("sql", "SELECT 1", env=environ)
    assert first.returncode == 0 and "bundled price snapshot" in first.stderr
    return environ


# plan's JSON keys whose CSV column has another name: the price's fields drop their ``price_`` prefix (as the CSV's
# first price columns always have), and the ranges are flattened to _low, _expected, _high
CSV_NAME = {
    "price_age_hours": "source_age_hours",
    "price_source_time": "source_time",
    "price_source_basis": "source_basis",
    "price_observed_at": "observed_at",
    "price_effective_since": "effective_since",
    "price_source": "source",
    "listing_countries": "listing_countries",
}
COMPARED = (
    "price_source", "price_source_time", "price_observed_at", "price_effective_since", "data_origin", "precision",
    "hazard_source", "spot_overhead", "added_hours", "listing_countries", "regions",
)  # fmt: skip


def test_plan_csv_carries_every_figure_of_the_json(seeded):
    """plan's CSV dropped the price's source URL and seven other fields of the JSON, though README says it gives
    "the same figures flattened"."""
    import csv
    import io

    from tests.conftest import run_costopt

    args = ("plan", "--model", "8B", "--tokens", "100B", "--provider", "vastai", "--provider", "lambda")
    options = json.loads(run_costopt(*args, "-f", "json", env=seeded).stdout)["options"]
    out = run_costopt(*args, "-f", "csv", env=seeded)
    assert out.returncode == 0, out.stderr
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    assert len(rows) == len(options) > 0
    expected_columns = set()
    for key in options[0]:
        if key == "wall_hours":
            expected_columns |= {"wall_low", "wall_expected", "wall_high"}
        elif key == "cost_usd":
            expected_columns |= {"cost_low", "cost_expected", "cost_high"}
        else:
            expected_columns.add(CSV_NAME.get(key, key))
    assert expected_columns <= set(rows[0]), expected_columns - set(rows[0])

    def spaced(values: list) -> str:  # plan's CSV writes its lists (regions, countries) space-separated
        return " ".join(str(v) for v in values)

    for option, row in zip(options, rows, strict=True):
        for key in COMPARED:
            assert row[CSV_NAME.get(key, key)] == _csv_cell(option[key], spaced), (key, row, option)
    assert {row["source"] for row in rows} >= {"https://console.vast.ai/api/v0/bundles/"}
    assert any(row["listing_countries"] for row in rows)


def _flat(data: dict, prefix: str = "") -> dict:
    out: dict = {}
    for key, value in data.items():
        if isinstance(value, dict):
            out |= _flat(value, f"{prefix}{key}.")
        else:
            out[f"{prefix}{key}"] = value
    return out


def _csv_cell(value: object, lists: Callable[[list], str] = json.dumps) -> str:
    """A JSON value as costopt's CSV writes it: null empty, booleans lower case, a list by ``lists``."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return lists(value)
    return str(value)


@pytest.mark.parametrize(
    "args",
    [
        ("--gpu", "H100", "--count", "8"),  # the rent and its trend from the warehouse: nested objects all filled
        ("--gpu", "H100", "--rent-price", "1.09", "--rent-trend", "0"),  # no warehouse read: null objects
    ],
)
def test_breakeven_csv_is_the_json_flattened(seeded, args):
    """``breakeven --format csv`` printed the JSON document (exit 0) though --help offers csv."""
    import csv
    import io

    from tests.conftest import run_costopt

    data = json.loads(run_costopt("breakeven", *args, "-f", "json", env=seeded).stdout)
    out = run_costopt("breakeven", *args, "-f", "csv", env=seeded)
    assert out.returncode == 0, out.stderr
    rows = list(csv.reader(io.StringIO(out.stdout)))
    assert len(rows) == 2  # a header and one row, as the JSON is one object
    flat = _flat(data)
    assert rows[0] == list(flat)  # dotted paths, in the JSON's order
    assert rows[1] == [_csv_cell(v) for v in flat.values()]
    got = dict(zip(*rows, strict=True))
    assert got["assumptions.gpu"] == "H100-SXM" and got["capex_usd"] == "312000.0"
    if "--rent-price" in args:
        assert got["rent.source"] == "--rent-price" and got["rent.cloud_on_demand"] == ""
        assert got["months_needed"] == "125.7" and got["rent_trend.basis"] == "override"
    else:
        assert got["rent.cloud_on_demand.from"].startswith("cheapest cloud on-demand: lambda")
        assert json.loads(got["rent_trend.providers"]) == data["rent_trend"]["providers"]


ESTIMATE_70B_ON_ONE = ("estimate", "--model", "llama3-70b", "--tokens", "1T", "--gpu", "H100", "--gpus", "1")


@pytest.mark.parametrize(
    "extra",
    [(), ("--mfu", "0.4"), ("--measured", "250@8xA100-80GB")],  # three MFU sources: three sets of mfu_factors keys
)
def test_estimate_csv_is_the_json_flattened_with_the_memory_verdict(extra):
    """``estimate --format csv`` printed three rows (mfu, gpu_hours, wall_hours): a 70B full fine-tune on one H100,
    which cannot hold it, looked like a valid 47-year plan, with no fits, min_gpus, reason, FLOPs, GPU or basis."""
    import csv
    import io

    from tests.conftest import run_costopt

    data = json.loads(run_costopt(*ESTIMATE_70B_ON_ONE, *extra, "-f", "json").stdout)
    out = run_costopt(*ESTIMATE_70B_ON_ONE, *extra, "-f", "csv")
    assert out.returncode == 0, out.stderr
    rows = list(csv.reader(io.StringIO(out.stdout)))
    assert len(rows) == 2  # a header and one row, as the JSON is one object
    factors = data["assumptions"].pop("mfu_factors")  # one cell of JSON text: its keys differ by MFU source
    flat = _flat(data)
    got = dict(zip(*rows, strict=True))
    assert json.loads(got.pop("assumptions.mfu_factors")) == factors
    assert got == {key: _csv_cell(value) for key, value in flat.items()}
    assert (got["memory.fits"], got["memory.min_gpus"], got["gpu"], got["flops"]) == (
        "false",
        "18",  # full recomputation on 80 GiB cards (21 before the one recomputation choice, 20 on 80e9-byte cards)
        "H100-SXM",
        "4.817e+23",
    )
    assert got["memory.reason"] == (
        "needs 1146.8 GB per GPU on 1 GPU, 77 GB usable: at least 18 GPUs with 80 GB, with full recomputation"
    )


def test_estimate_csv_has_the_same_columns_whatever_sets_the_mfu():
    """A pipeline appending estimates to one file needs one header: the factors' names stay inside one cell."""
    from tests.conftest import run_costopt

    headers = {
        run_costopt(*ESTIMATE_70B_ON_ONE, *extra, "-f", "csv").stdout.splitlines()[0]
        for extra in [(), ("--mfu", "0.4"), ("--measured", "250@8xA100-80GB"), ("--method", "qlora")]
    }
    assert len(headers) == 1
    assert "memory.fits" in next(iter(headers)).split(",")


def test_active_params_on_a_dense_preset_is_one_line_exit_2():
    """The audit's command answered exit 0 with ``"moe": true`` and the MoE factor 0.7 on a dense Llama 3 8B."""
    from tests.conftest import run_costopt

    out = run_costopt(
        "estimate", "--model", "llama3-8b", "--active-params", "2B", "--tokens", "100B", "--gpu", "H100", "--gpus", "8",
        "--format", "json",
    )  # fmt: skip
    assert (out.returncode, out.stdout, out.stderr.count("\n")) == (2, "", 1), out.stdout
    assert out.stderr.startswith("costopt: error: --active-params is for mixture-of-experts models: llama3-8b is dense")


@pytest.mark.parametrize(
    ("tokens", "message"),
    [
        ("0.5", "--tokens 0.5 is less than one sequence of 2,048 tokens"),
        ("1e-3", "--tokens 0.001 is less than one sequence of 2,048 tokens"),
        ("10K", "--tokens 10000 is less than one optimizer step on 8 GPUs (8 x 1 sequence x 2,048 tokens = 16,384)"),
    ],
)
def test_estimate_refuses_fractional_and_sub_step_token_counts(tokens, message):
    from tests.conftest import run_costopt

    out = run_costopt("estimate", "--model", "8B", "--tokens", tokens, "--gpu", "H100", "--gpus", "8", "-f", "json")
    assert (out.returncode, out.stdout, out.stderr.count("\n")) == (2, "", 1)
    assert out.stderr.startswith(f"costopt: error: {message}"), out.stderr


@pytest.mark.parametrize("stack", ["basic", "typical"])
def test_estimate_refuses_mfu_with_stack_as_with_measured(stack):
    """``--mfu 0.4 --stack basic`` dropped --stack without a word (while --mfu with --measured was refused)."""
    from tests.conftest import run_costopt

    base = ("estimate", "--model", "8B", "--tokens", "100B", "--gpu", "H100", "--gpus", "8", "--mfu", "0.4")
    out = run_costopt(*base, "--stack", stack)
    assert (out.returncode, out.stdout, out.stderr.count("\n")) == (2, "", 1)
    assert out.stderr.startswith("costopt: error: --mfu and --stack both set the MFU: give one of them")


def test_estimate_says_how_it_reads_mfu():
    """--mfu also dropped QLoRA's x0.7 and --recompute full's x0.75 unstated: it is read as the whole run's MFU in
    model FLOPs, and the answer says so; the FLOPs and hours are those of that MFU, nothing applied on top."""
    from tests.conftest import run_costopt

    base = ("estimate", "--model", "8B", "--tokens", "100B", "--gpu", "H100", "--gpus", "8", "--mfu", "0.4")
    plain = json.loads(run_costopt(*base, "-f", "json").stdout)
    qlora = json.loads(run_costopt(*base, "--method", "qlora", "--recompute", "full", "-f", "json").stdout)
    assert qlora["mfu"] == plain["mfu"] == {"low": 0.4, "expected": 0.4, "high": 0.4}
    assert qlora["assumptions"]["mfu_factors"] == {"override": 0.4}
    assert qlora["assumptions"]["mfu_basis"] == (
        "given: --mfu 0.4, not the calibrated model; the whole run's MFU in model FLOPs (the job's FLOPs as costopt "
        "counts them, of the GPU's datasheet peak): recomputation, QLoRA's dequantization and the stack class are "
        "inside it, none is applied on top"
    )
    table = " ".join(run_costopt(*base, "--method", "qlora").stdout.split())
    assert "read as the whole run's MFU in model FLOPs: recomputation, QLoRA and a stack class are not applied" in table


def test_no_offer_with_a_cluster_network_holds_a_pcie_card(seeded):
    """estimate's default network rests on this (optimizer/layout.py): PCIe cards' servers are rented on Ethernet,
    SXM/OAM modules' with RDMA. Checked against every offer of the bundled snapshot, as plan sees them."""
    import csv
    import io

    from optimizer.fabric import fabric_of
    from optimizer.layout import PCIE_SERVERS
    from tests.conftest import run_costopt
    from warehouse.gpus import catalog

    out = run_costopt(
        "sql", "SELECT DISTINCT provider, instance_type, gpu FROM current_prices", "-f", "csv", env=seeded
    )
    assert out.returncode == 0, out.stderr
    offers = list(csv.DictReader(io.StringIO(out.stdout)))
    rdma = [o for o in offers if fabric_of(o["provider"], o["instance_type"]) == "rdma"]
    assert len(rdma) >= 20  # p4d/p5/ND/A3/HGX...: the check has offers to look at
    assert [o for o in rdma if catalog().resolve(o["gpu"]).intra_node in PCIE_SERVERS] == []
    assert any(catalog().resolve(o["gpu"]).intra_node in PCIE_SERVERS for o in offers)  # and PCIe cards are offered


def test_readme_lists_every_precision_estimate_takes():
    """README's estimate section listed ``--precision bf16|fp8``; the CLI also takes fp16 (its --help says so)."""
    from optimizer.estimate import PRECISIONS

    readme = (REPO / "README.md").read_text()
    section = readme.split("### `costopt estimate`")[1].split("\n### ")[0]
    assert f"`--precision {'|'.join(PRECISIONS)}`" in section
    assert PRECISIONS == ("bf16", "fp16", "fp8")


def test_plan_refuses_mfu_with_stack_as_estimate_does(tmp_path):
    """plan had the same hole: ``--mfu 0.4 --stack basic`` planned at 40 % and dropped --stack without a word."""
    from tests.conftest import run_costopt

    env = {"COSTOPT_DATA_DIR": str(tmp_path), "COSTOPT_DB": ""}
    out = run_costopt("plan", "--model", "8B", "--tokens", "100B", "--mfu", "0.4", "--stack", "basic", env=env)
    assert (out.returncode, out.stdout, out.stderr.count("\n")) == (2, "", 1)
    assert out.stderr.startswith("costopt: error: --mfu and --stack both set the MFU: give one of them")
