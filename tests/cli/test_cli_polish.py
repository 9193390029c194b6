"""The CLI as a new user meets it (issue 15): tables that read at 100 columns, nothing cut silently, one rule
for names and durations, contradictory flags refused, --version, completion, status, rounded JSON."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from importlib.metadata import version
from pathlib import Path

import pytest

from optimizer.mfu import DEFAULT_STACK, FITTED, software_spread
from tests.conftest import REPO
from warehouse.gpus import catalog
from warehouse.migrations import LATEST

WIDTH = 100


def run(*args: str, env: dict[str, str], columns: int | None = WIDTH) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in env.items() if k != "COLUMNS"}
    if columns is not None:
        environ["COLUMNS"] = str(columns)
    return subprocess.run(
        [sys.executable, "-m", "cli.app", *args], capture_output=True, text=True, cwd=REPO, env=environ, timeout=180
    )


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A data dir whose default warehouse holds the bundled snapshot and history (seeded once)."""
    data = tmp_path_factory.mktemp("polish-data")
    environ = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "COSTOPT_DB"}
    environ["COSTOPT_DATA_DIR"] = str(data)
    seeded = run("sql", "SELECT 1", env=environ)
    assert seeded.returncode == 0 and "bundled price snapshot" in seeded.stderr
    return environ


def lines(text: str) -> list[str]:
    return text.splitlines()


def widest(text: str) -> int:
    return max((len(line) for line in lines(text)), default=0)


def header_cells(out: str, first: str) -> list[str]:
    """The cells of a table's header line (the line starting with ``first``), split on the column gaps."""
    line = next(line for line in lines(out) if line.startswith(first))
    return re.split(r" {2,}", line.strip())


# --- width ------------------------------------------------------------------------------------------


def test_the_plan_table_fits_100_columns_and_shows_whole_values(env):
    out = run("plan", "--model", "8B", "--tokens", "100B", env=env)
    assert out.returncode == 0, out.stderr
    assert widest(out.stdout) <= WIDTH and "\u2026" not in out.stdout
    assert header_cells(out.stdout, "*  provider") == [
        "*",
        "provider",
        "GPU x n x inst",
        "region",
        "pricing",
        "$/GPU-h",
        "time",  # "wall time": a header wraps between its words rather than take two columns of width
        "cost",
        "spot saves",
    ]
    text = lines(out.stdout)
    assert text[text.index(next(x for x in text if x.startswith("*  provider"))) - 1].strip() == "wall"
    assert "hidden to fit 100 columns: instance, age, wall range, cost range, notes (--wide" in out.stdout
    options = json.loads(run("plan", "--model", "8B", "--tokens", "100B", "-f", "json", "--top", "15", env=env).stdout)
    table = [line for line in lines(out.stdout) if re.match(r"^[* ]  [a-z]+ ", line) and "provider" not in line]
    assert len(table) == 15
    for line, o in zip(table, options["options"], strict=True):
        cells = re.split(r" {2,}", line[3:].strip())
        assert cells[0] == o["provider"]
        assert cells[1] == f"{o['gpu']} x{o['gpus_per_instance']} x{o['instances']}"
        assert f"${o['cost_usd']['expected']:,.0f}" in cells  # a price whole, never split across lines
    # the range of every row is said once, under the table: the calibrated band of the default stack (refitted with
    # the data) and, on the MI300X rows shown, that band widened by the ROCm factor's range (software_spread)
    low, high = FITTED.band(DEFAULT_STACK)
    amd_low, amd_high = software_spread(catalog().resolve("MI300X"))
    assert any(o["gpu"] == "MI300X" for o in options["options"])
    expected = (
        f"range: wall time and cost run from x{1 / (high * amd_high):.2f}-{1 / high:.2f} (fastest plausible) to "
        f"x{1 / low:.2f}-{1 / (low * amd_low):.2f} (slowest"
    )
    assert expected in " ".join(out.stdout.split())


def test_the_range_line_says_where_the_mfu_ceiling_sets_the_fastest_plausible_time(env):
    """On A100 rows an 8B job's high MFU is the ceiling (0.65, not 48.3 % x 1.55): the footer's "x0.73-0.74 (fastest
    plausible)" was read as the band's x0.65 (estimator audit, N1); it says the ceiling set it, and the JSON says on
    which rows (mfu_ceiling_binds)."""
    a100 = ("plan", "--model", "8B", "--tokens", "100B", "--gpu", "A100", "--top", "3")
    options = json.loads(run(*a100, "-f", "json", env=env).stdout)["options"]
    assert [o["mfu_ceiling_binds"] for o in options] == [["high"]] * 3
    fastest = {round(o["wall_hours"]["low"] / o["wall_hours"]["expected"], 2) for o in options}
    assert fastest <= {0.73, 0.74}  # 0.483 / 0.65, the spot overhead aside
    text = " ".join(run(*a100, env=env).stdout.split())
    assert "(fastest plausible: the MFU ceiling sets it on every row) to x3.23 (slowest plausible)" in text  # 1 / 0.31
    h100 = " ".join(run("plan", "--model", "8B", "--tokens", "100B", "--gpu", "H100", env=env).stdout.split())
    assert "x0.56 (fastest plausible) to x3.23" in h100 and "MFU ceiling" not in h100  # 1 / 1.79 and 1 / 0.31 (r54)


def test_a_wall_time_resting_on_a_datasheet_is_marked_at_100_columns(env):
    """At 100 columns the notes, where "speed extrapolated" is said, are hidden, and such rows top the plan: the wall
    time itself carries the mark, explained under the table, on exactly the rows whose speed_basis says so."""
    out = run("plan", "--model", "8B", "--tokens", "100B", env=env)
    options = json.loads(run("plan", "--model", "8B", "--tokens", "100B", "-f", "json", "--top", "15", env=env).stdout)
    table = [line for line in lines(out.stdout) if re.match(r"^[* ]  [a-z]+ ", line) and "provider" not in line]
    marked = [re.split(r" {2,}", line[3:].strip())[5].endswith("\u00a7") for line in table]
    assert marked == [o["speed_basis"] == "extrapolated" for o in options["options"]]
    assert True in marked and False in marked
    guessed = sorted({o["gpu"] for o in options["options"] if o["speed_basis"] == "extrapolated"})
    assert f"\u00a7 speed extrapolated ({', '.join(guessed)}): no published whole training run" in out.stdout
    calibrated = run("plan", "--model", "8B", "--tokens", "100B", "--gpu", "H100", env=env)
    assert calibrated.returncode == 0 and "\u00a7" not in calibrated.stdout


def test_a_plan_outside_the_calibration_marks_every_row_and_says_why(env):
    """A QLoRA plan quoted "a range that held 30 of 33 typical runs" with no mark, though no calibration run is a
    fine-tune (estimator audit, BUG 2): every row is marked, the footer says why and that the range is not held."""
    base = ("plan", "--model", "llama3-8b", "--tokens", "2B", "--method", "qlora", "--gpu", "H100", "--top", "5")
    options = json.loads(run(*base, "-f", "json", env=env).stdout)["options"]
    assert {o["speed_basis"] for o in options} == {"extrapolated"}
    assert all(o["extrapolated_because"][0].startswith("qlora fine-tuning: every calibration run") for o in options)
    assert all("speed extrapolated" in o["notes"] for o in options)
    out = run(*base, env=env)
    assert out.returncode == 0, out.stderr
    table = [line for line in lines(out.stdout) if re.match(r"^[* ]  [a-z]+ ", line) and "provider" not in line]
    assert len(table) == 5 and all(re.split(r" {2,}", line[3:].strip())[5].endswith("\u00a7") for line in table)
    text = " ".join(out.stdout.split())
    assert "(on every row, marked \u00a7, outside the calibration: carried over, not held; inside it, a range" in text
    assert (
        "\u00a7 speed extrapolated, outside what the calibration covers: every row: qlora fine-tuning: every "
        "calibration run is full training from random weights; QLoRA's x0.7 for dequantization is a stated guess"
    ) in text


def test_a_plan_warns_of_options_with_fewer_steps_than_any_calibration_run(env):
    """125M on 1B tokens over 256 H100s is at most 1,907 optimizer steps of 2,048 x 256 tokens, fewer than any
    calibration run took (3,320): such options are marked, as estimate marks the same job (estimator audit, Issue 6)."""
    from optimizer.estimate import Job, estimate
    from optimizer.models import resolve_model
    from warehouse.gpus import catalog

    base = ("plan", "--model", "125M", "--tokens", "1B", "--gpu", "H100", "--max-gpus", "1024", "--all-counts")
    data = json.loads(run(*base, "-f", "json", env=env).stdout)
    options = data["options"]
    for o in options:
        gpus = o["gpus_per_instance"] * o["instances"]
        assert (o["speed_basis"] == "extrapolated") == (1e9 / (gpus * 2048) < 3320), (gpus, o["extrapolated_because"])
        est = estimate(Job(resolve_model("125M"), 1e9), catalog().resolve("H100"), gpus,
                       gpus_per_node=o["gpus_per_instance"], fabric=o["fabric"])  # fmt: skip
        assert o["extrapolated_because"] == est.scope.because
    assert any(o["speed_basis"] == "extrapolated" for o in options)
    assert [w for w in data["warnings"] if "on more tokens per optimizer step, or takes fewer optimizer steps" in w]


def test_a_plan_on_a_given_mfu_says_so_and_claims_no_range_or_extrapolation(env):
    """With --mfu every GPU runs at that share of its datasheet peak: the plan used to mark MI300X rows "speed
    extrapolated ... a guessed ROCm factor" (a factor --mfu does not apply), print "x1.00 to x1.00 (the calibrated
    MFU band)", list the model's fitted factors under --explain and put "stack": "typical" in its JSON."""
    base = ("plan", "--model", "8B", "--tokens", "100B", "--mfu", "0.4")
    data = json.loads(run(*base, "-f", "json", "--top", "15", env=env).stdout)
    assert (data["job"]["mfu"], data["job"]["stack"]) == (0.4, None)
    assert {o["speed_basis"] for o in data["options"]} == {"given"}
    assert "MI300X" in {o["gpu"] for o in data["options"]}  # the GPU the mark used to be wrong on
    out = run(*base, "--explain", env=env)
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert "speed: 40.0% MFU as given (--mfu) on every GPU, of its datasheet peak" in text
    assert "\u00a7" not in out.stdout and "range: wall time" not in text and "MFU band" not in text
    assert "0.4 on every GPU, of its" in text and "given: --mfu (no range)" in text
    assert "x bandwidth per FLOP" not in text
    plain = " ".join(run("plan", "--model", "8B", "--tokens", "100B", "--explain", env=env).stdout.split())
    assert "MFU band" in plain and "x bandwidth per FLOP" in plain and "given: --mfu" not in plain


def test_wide_shows_every_column_whatever_the_width(env):
    out = run("plan", "--model", "8B", "--tokens", "100B", "--top", "3", "--wide", env=env)
    assert out.returncode == 0, out.stderr
    header = header_cells(out.stdout, "*  provider")
    assert header[:3] == ["*", "provider", "instance"] and header[-1] == "notes"
    assert {"age", "wall range", "cost range"} <= set(header)
    first = json.loads(run("plan", "--model", "8B", "--tokens", "100B", "--top", "3", "-f", "json", env=env).stdout)
    assert first["options"][0]["instance_type"] in out.stdout and "hidden to fit" not in out.stdout
    assert widest(out.stdout) > WIDTH  # full width: lines are as long as the rows need


def test_the_layout_follows_the_width_and_a_pipe_gets_100(env):
    wide = run("plan", "--model", "8B", "--tokens", "100B", "--top", "3", env=env, columns=180)
    header = header_cells(wide.stdout, "*  provider")
    assert "instance" in header and "age" in header
    piped = run("prices", "--gpu", "H100", env=env, columns=None)  # a pipe, no $COLUMNS: 100 columns
    assert piped.returncode == 0 and 60 < widest(piped.stdout) <= WIDTH


@pytest.mark.parametrize(
    "args",
    [
        ("prices",),
        ("prices", "--gpu", "A100", "--wide"),
        ("history", "--gpu", "H100", "--since", "all"),
        ("runs",),
        ("sql", "SELECT * FROM current_prices LIMIT 5"),
        ("status",),
        ("estimate", "--model", "65B", "--tokens", "1.4T", "--gpu", "A100-80GB", "--gpus", "2048"),
        ("breakeven", "--gpu", "H100", "--count", "8"),
        ("plan", "--model", "8B", "--tokens", "100B", "--top", "3", "--explain"),
    ],
)
def test_every_table_fits_100_columns_without_cut_values(env, args):
    out = run(*args, env=env)
    assert out.returncode == 0, out.stderr
    table_lines = lines(out.stdout) if "--wide" not in args else []
    assert all(len(line) <= WIDTH for line in table_lines), max(table_lines, key=len)
    assert "\u2026" not in out.stdout and "Traceback" not in out.stderr


def test_sql_hides_the_rightmost_columns_and_names_them(env):
    out = run("sql", "SELECT * FROM current_prices WHERE provider = 'aws' LIMIT 3", env=env)
    assert header_cells(out.stdout, "provider")[:3] == ["provider", "region", "instance_type"]
    note = " ".join(out.stdout.split("hidden to fit 100 columns: ")[1].split())
    assert note == (
        "observed_at, price_since, age_hours, source, offer_id, source_time, source_basis, source_age_hours, "
        "effective_since, data_origin (--wide shows every column)"
    )


# --- numbers ----------------------------------------------------------------------------------------


def test_numbers_are_formatted_per_column(env):
    values = "(0.57, 2.0, 8), (1.09, 8.0, 16), (11.06, 1.0, 2), (1.5, 4.0, 1)"
    out = run("sql", f"SELECT * FROM (VALUES {values}) t(usd, n, k)", env=env)
    rows = [re.split(r" {2,}", line.strip()) for line in lines(out.stdout)[2:6]]
    assert rows == [["0.57", "2", "8"], ["1.09", "8", "16"], ["11.06", "1", "2"], ["1.50", "4", "1"]]
    prices = run("prices", "--provider", "aws", "--gpu", "H100", "--on-demand", env=env)
    gpus = [re.split(r" {2,}", line.strip())[4] for line in lines(prices.stdout) if line.startswith("aws")]
    assert gpus and set(gpus) <= {"1", "8"}  # GPU counts are integers, never 8.000


def test_empty_results_say_none(env):
    assert run("runs", "--flags", env=env).stdout.strip() == (
        "Flagged price moves (> 60 % against the last observation): none"
    )
    assert run("runs", "--alerts", "--provider", "gcp", env=env).stdout.strip() == "Alerts, newest first: none"
    assert json.loads(run("runs", "--flags", "-f", "json", env=env).stdout) == []


def test_json_is_rounded_to_what_each_figure_means(env):
    from cli.output import rounded

    assert rounded(
        {"cost_usd": {"low": 1657.4142321195147}, "wall_hours": 1234.5678, "mfu": {"expected": 0.359123},
         "usd_per_gpu_hour": 0.0859875, "usd_per_hour": 0.0859875, "gpus": 8, "hosting_usd_per_month": 1260.004}
    ) == {"cost_usd": {"low": 1657.41}, "wall_hours": 1235.0, "mfu": {"expected": 0.3591},
          "usd_per_gpu_hour": 0.086, "usd_per_hour": 0.0859875, "gpus": 8, "hosting_usd_per_month": 1260.0}  # fmt: skip
    est = json.loads(run("estimate", "--model", "65B", "--tokens", "1.4T", "--gpu", "A100-80GB", "--gpus", "2048",
                         "-f", "json", env=env).stdout)  # fmt: skip
    assert est["mfu"]["expected"] == float(f"{est['mfu']['expected']:.4g}")
    assert est["gpu_hours"]["expected"] == float(f"{est['gpu_hours']['expected']:.4g}")
    exact = json.loads(run("estimate", "--model", "65B", "--tokens", "1.4T", "--gpu", "A100-80GB", "--gpus", "2048",
                           "-f", "json", "--exact", env=env).stdout)  # fmt: skip
    assert est["gpu_hours"]["expected"] == float(f"{exact['gpu_hours']['expected']:.4g}")


# --- nothing cut silently ---------------------------------------------------------------------------


def test_machine_formats_are_never_cut_by_a_default_limit(env):
    total = json.loads(run("sql", "SELECT count(*) AS n FROM current_prices", "-f", "json", env=env).stdout)[0]["n"]
    assert total > 50
    csv_out = run("prices", "--format", "csv", env=env)
    assert len(lines(csv_out.stdout)) == total + 1 and csv_out.stderr == ""
    cut = run("prices", "--format", "csv", "--limit", "5", env=env)
    assert len(lines(cut.stdout)) == 6
    assert cut.stderr == f"costopt: 5 of {total} rows (--limit 5); leave out --limit for all\n"
    table = run("prices", env=env)
    assert f"showing 50 of {total}; --limit to change" in table.stdout
    runs = json.loads(run("runs", "-f", "json", env=env).stdout)
    assert (
        len(runs)
        == json.loads(run("sql", "SELECT count(*) AS n FROM scrape_runs", "-f", "json", env=env).stdout)[0]["n"]
    )
    assert "showing 3 of" in run("runs", "--limit", "3", env=env).stdout


def test_plan_json_holds_every_option_of_the_view_unless_top_says_otherwise(env):
    full = run("plan", "--model", "8B", "--tokens", "100B", "-f", "json", env=env)
    assert full.returncode == 0 and full.stderr == ""
    count = len(json.loads(full.stdout)["options"])
    assert count > 15
    top = run("plan", "--model", "8B", "--tokens", "100B", "-f", "json", "--top", "5", env=env)
    assert len(json.loads(top.stdout)["options"]) == 5
    assert top.stderr == f"costopt: 5 of {count} options (--top 5); leave out --top for all\n"


# --- one rule for names, durations and flags ---------------------------------------------------------

UNKNOWN_PROVIDER = (
    "costopt: error: unknown provider 'awss' (--provider); known providers: aws, azure, coreweave, gcp, lambda, "
    "vastai (did you mean aws?)\n"
)


@pytest.mark.parametrize(
    "args",
    [
        ("plan", "--model", "8B", "--tokens", "100B", "--provider", "awss"),
        ("prices", "--provider", "awss"),
        ("history", "--gpu", "H100", "--provider", "awss"),
        ("runs", "--provider", "awss"),
        ("refresh", "--provider", "awss"),
        ("reparse", "--provider", "awss"),
        ("schedule", "--provider", "awss"),
    ],
)
def test_an_unknown_provider_is_the_same_error_everywhere(env, args):
    out = run(*args, env=env)
    assert (out.returncode, out.stderr, out.stdout) == (2, UNKNOWN_PROVIDER, "")


@pytest.mark.parametrize(
    "args", [("plan", "--model", "8B", "--tokens", "100B", "--region", "mars-1"), ("prices", "--region", "mars-1")]
)
def test_an_unknown_region_lists_the_known_ones(env, args):
    out = run(*args, "--provider", "aws", env=env)
    assert out.returncode == 2
    assert out.stderr == (
        "costopt: error: unknown region 'mars-1' (--region); known regions: ap-northeast-1, ap-south-1, "
        "ap-southeast-2, eu-central-1, eu-west-1, us-east-1, us-east-2, us-west-2\n"
    )


@pytest.mark.parametrize(
    "args",
    [
        ("plan", "--model", "8B", "--tokens", "100B", "--gpu", "H1000"),
        ("prices", "--gpu", "H1000"),
        ("history", "--gpu", "H1000"),
        ("estimate", "--model", "8B", "--tokens", "1B", "--gpu", "H1000", "--gpus", "8"),
        ("breakeven", "--gpu", "H1000", "--rent-price", "2"),
    ],
)
def test_an_unknown_gpu_lists_the_known_ones(env, args):
    out = run(*args, env=env)
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    known = "V100-16GB, V100-32GB, V100-PCIe-16GB, V100-PCIe-32GB, T4,"
    assert out.stderr.startswith(f"costopt: error: unknown GPU 'H1000'; known GPUs: {known}")


def test_names_match_without_regard_to_case(env):
    rows = json.loads(run("prices", "--provider", "AWS", "--region", "US-EAST-1", "-f", "json", env=env).stdout)
    assert rows and {(r["provider"], r["region"]) for r in rows} == {("aws", "us-east-1")}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("history", "--gpu", "H100", "--since", "6m"), "--since '6m' is ambiguous: write 6min for minutes or 6mo"),
        (("plan", "--model", "8B", "--tokens", "1B", "--deadline", "6m"), "--deadline '6m' is ambiguous"),
        (("plan", "--model", "8B", "--tokens", "1B", "--deadline", "12"), "--deadline '12' needs a unit: 12h, 12d"),
        (("plan", "--model", "8B", "--tokens", "1B", "--checkpoint-every", "30m"), "--checkpoint-every '30m' is"),
        (("schedule", "--every", "30m"), "--every '30m' is ambiguous: write 30min for minutes or 30mo for months"),
    ],
)
def test_one_duration_grammar_refuses_an_ambiguous_m(env, args, message):
    out = run(*args, env=env)
    assert out.returncode == 2 and out.stderr.startswith("costopt: error: ") and message in out.stderr


def test_months_and_years_read_the_same_everywhere():
    from optimizer.units import parse_duration_hours
    from scraper.schedule import parse_every
    from warehouse.history import parse_since

    now = datetime(2026, 11, 20, tzinfo=UTC)
    assert parse_since("6mo", now) == now - timedelta(days=180)
    assert parse_since("1y", now) == now - timedelta(days=365)
    assert parse_since("36 h", now) == now - timedelta(hours=36)
    assert parse_duration_hours("3mo") == 3 * 30 * 24 and parse_duration_hours("90min") == 1.5
    assert parse_every("90s") == timedelta(seconds=90)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("plan", "--model", "8B", "--tokens", "1B", "--spot", "--no-spot"), "--spot and --no-spot contradict"),
        (("prices", "--spot", "--on-demand"), "--spot and --on-demand contradict each other"),
        (("runs", "--flags", "--alerts"), "--flags and --alerts exclude each other"),
        (
            (
                "estimate",
                "--model",
                "8B",
                "--tokens",
                "1B",
                "--gpu",
                "H100",
                "--gpus",
                "8",
                "--checkpointing",
                "--no-checkpointing",
            ),
            "--checkpointing and --no-checkpointing contradict",
        ),
        (("schedule", "--cron", "0 3 * * *", "--every", "6h"), "--cron and --every exclude each other"),
        (("import", "--bundled", "--daily"), "--daily only apply to a clone, not to --bundled"),
    ],
)
def test_contradictory_flags_are_refused(env, args, message):
    out = run(*args, env=env)
    assert out.returncode == 2 and message in out.stderr and out.stderr.count("\n") == 1


# --- version, completion ----------------------------------------------------------------------------


def test_version(env):
    out = run("--version", env=env)
    assert (out.returncode, out.stdout) == (0, f"costopt {version('costopt')}\n")


def complete(env: dict[str, str], words: str, *, shell: str = "bash") -> list[str]:
    environ = dict(env, _COSTOPT_COMPLETE=f"complete_{shell}")
    if shell == "bash":
        environ.update(COMP_WORDS=words, COMP_CWORD=str(len(words.split()) - (0 if words.endswith(" ") else 1)))
    else:
        environ["_TYPER_COMPLETE_ARGS"] = words
    out = subprocess.run(
        [sys.executable, "-m", "cli.app"], capture_output=True, text=True, cwd=REPO, env=environ, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_completion_scripts_and_answers(env):
    script = run("completion", "bash", env=env)
    assert script.returncode == 0
    assert "_COSTOPT_COMPLETE=complete_bash" in script.stdout
    assert script.stdout.rstrip().endswith("complete -o default -F _costopt_completion costopt")
    for shell in ("zsh", "fish", "powershell"):
        assert run("completion", shell, env=env).returncode == 0
    assert run("completion", "tcsh", env=env).returncode == 2
    assert complete(env, "costopt pl") == ["plan"]
    assert complete(env, "costopt st") == ["status"]
    assert complete(env, "costopt plan --provider a") == ["aws", "azure"]
    assert complete(env, "costopt prices --gpu H1") == ["H100-SXM", "H100-PCIe", "H100-NVL"]
    assert complete(env, "costopt runs --format ") == ["table", "json", "csv"]
    zsh = complete(env, "costopt plan --provider v", shell="zsh")
    assert zsh == ["_arguments", "'*:", ':(("vastai"))\'']


# --- status -----------------------------------------------------------------------------------------


def test_status_without_a_warehouse_creates_nothing(tmp_path, env):
    path = tmp_path / "none.duckdb"
    out = run("status", "--db", str(path), "-f", "json", env=env)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["warehouse"]["exists"] is False and not path.exists()
    assert data["next_steps"][0].startswith(f"no warehouse at {path} yet")
    assert {p["name"]: p["state"] for p in data["providers"]}["gcp"] == "no key"


def test_status_on_the_bundled_snapshot(env):
    out = run("status", "-f", "json", env=dict(env, LAMBDA_API_KEY="sekrit-lambda-0042"))
    assert out.returncode == 0, out.stderr
    assert "sekrit-lambda-0042" not in out.stdout
    data = json.loads(out.stdout)
    wh = data["warehouse"]
    assert wh["exists"] and wh["schema_version"] == wh["schema_latest"] == LATEST and wh["bytes"] > 1_000_000
    providers = {p["name"]: p for p in data["providers"]}
    assert list(providers) == ["aws", "azure", "coreweave", "gcp", "lambda", "vastai"]
    assert providers["gcp"]["state"] == "no key" and providers["gcp"]["credential"] == "COSTOPT_GCP_API_KEY"
    assert providers["lambda"]["credential_set"] is True and providers["vastai"]["credential_set"] is False
    assert providers["aws"]["state"] == "snapshot" and providers["aws"]["regions"][:2] == ["us-east-1", "us-east-2"]
    assert providers["coreweave"]["regions"] is None and providers["aws"]["last_success"]["mode"] == "snapshot"
    assert providers["aws"]["prices"]["current"] == 381
    assert providers["aws"]["prices"]["observed_at"].startswith("2026-11-20T03:00:00")
    assert data["history"]["imported_intervals"] > 20000
    assert data["next_steps"][0] == (
        "gcp: set COSTOPT_GCP_API_KEY to scrape it (skipped: the Cloud Billing Catalog API needs a key)"
    )
    table = run("status", env=dict(env, LAMBDA_API_KEY="sekrit-lambda-0042"))
    assert "sekrit-lambda-0042" not in table.stdout and widest(table.stdout) <= WIDTH
    rows = {line.split()[0]: line.split() for line in lines(table.stdout) if line.split()[:1] == ["lambda"]}
    assert rows["lambda"][1:3] == ["snapshot", "set"]


def test_status_names_a_failing_provider_its_reason_and_what_to_do(db_path, make_record):
    from warehouse.db import open_warehouse
    from warehouse.load import RunRecord, load_run, record_failure

    recently = datetime.now(UTC) - timedelta(hours=2)
    con = open_warehouse(db_path)
    lam = make_record("gpu_1x_h100", 2.99, provider="lambda", at=recently)
    load_run(con, RunRecord("lambda", "live", recently, recently, prices=[lam]))
    before = recently - timedelta(days=4)
    load_run(con, RunRecord("aws", "live", before, before, prices=[make_record(at=before)]))
    reason = "aws: suspect: spot/us-east-1: 0 offers, last good run (run 2) had 24 -- previous prices kept"
    record_failure(con, provider="aws", mode="live", started_at=recently, error=reason)
    con.close()
    environ = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    out = run("status", "--db", str(db_path), "-f", "json", env=environ)
    data = json.loads(out.stdout)
    providers = {p["name"]: p for p in data["providers"]}
    assert providers["aws"]["state"] == "failing" and providers["aws"]["last_failure"]["error"] == reason
    assert providers["aws"]["failures_since_success"] == 1
    assert providers["lambda"]["state"] == "ok" and providers["azure"]["state"] == "never run"
    assert f"aws is failing (1 run(s) since its last success): {reason}" in data["next_steps"]
    assert (
        "if aws's drop in offers is real, confirm it once: `costopt refresh --provider aws --accept-drop aws`"
        in (data["next_steps"])
    )
    table = run("status", "--db", str(db_path), env=environ, columns=200)
    assert f"last failure, aws (failed {recently:%Y-%m-%d %H:%M}): {reason}" in table.stdout
    stale = run("status", "--db", str(db_path), "-f", "json", env=dict(environ, COSTOPT_AWS_REGIONS="not a region"))
    aws = {p["name"]: p for p in json.loads(stale.stdout)["providers"]}["aws"]
    assert aws["regions"] is None and aws["config_error"].startswith("COSTOPT_AWS_REGIONS:")


# --- output polish ----------------------------------------------------------------------------------


def test_explain_is_a_readable_table(env):
    out = run("plan", "--model", "8B", "--tokens", "100B", "--top", "1", "--explain", env=env, columns=160)
    explain = out.stdout.split("Assumptions (every one is a flag or a constant in optimizer/)")[1]
    assert header_cells(explain, "assumption") == ["assumption", "value", "source"]
    assert "{" not in explain and "}" not in explain  # no Python reprs
    assert re.search(r"^  x node scaling +rdma 0\.01, ethernet 0\.15 per doubling of nodes", explain, re.M)
    assert re.search(r"^spot hazard, vastai +0\.02 per instance-hour", explain, re.M)


def test_estimate_says_how_its_gpus_sit(env):
    base = ("estimate", "--model", "1B", "--tokens", "10B", "--gpu", "H100")
    one = run(*base, "--gpus", "1", env=env, columns=200).stdout
    assert "ZeRO-3/FSDP sharding, one GPU, a typical stack" in one and "GPUs per node" not in one
    assert "4 GPUs in one node," in run(*base, "--gpus", "4", env=env, columns=200).stdout
    assumed = run(*base, "--gpus", "16", env=env, columns=250).stdout
    assert (
        "8 GPUs per node (assumed: --gpus-per-node), rdma between 2 nodes (assumed for H100-SXM servers: --fabric "
        "ethernet if yours differ)," in " ".join(assumed.split())
    )
    given = run(*base, "--gpus", "16", "--gpus-per-node", "8", "--fabric", "rdma", env=env, columns=200).stdout
    assert "8 GPUs per node, rdma between 2 nodes," in given


def test_a_bf16_job_on_a_gpu_without_bf16_runs_in_fp16(env):
    base = ("estimate", "--model", "1B", "--tokens", "10B", "--gpus", "8", "-f", "json", "--exact")
    v100 = json.loads(run(*base, "--gpu", "V100", env=env).stdout)
    a = v100["assumptions"]
    assert (a["precision"], a["precision_used"], a["peak_tflops_per_gpu"]) == ("bf16", "fp16", 125.0)
    assert a["precision_note"].startswith("V100-16GB has no bf16 tensor cores: the job runs in fp16 mixed precision")
    fp16 = json.loads(run(*base, "--gpu", "V100", "--precision", "fp16", env=env).stdout)
    assert fp16["gpu_hours"] == v100["gpu_hours"] and fp16["assumptions"]["precision_note"] is None
    a100 = json.loads(run(*base, "--gpu", "A100", "--precision", "fp16", env=env).stdout)["assumptions"]
    assert (a100["precision_used"], a100["peak_tflops_per_gpu"]) == ("fp16", 312.0)
    h100 = json.loads(run(*base, "--gpu", "H100", env=env).stdout)["assumptions"]
    assert (h100["precision_used"], h100["precision_note"]) == ("bf16", None)
    table = run(*base[:-3], "--gpu", "T4", env=env, columns=200).stdout
    assert "assumes: full training, fp16 mixed precision," in table
    plan = json.loads(run("plan", "--model", "1B", "--tokens", "10B", "--gpu", "V100", "-f", "json", env=env).stdout)
    assert plan["options"] and {o["precision"] for o in plan["options"]} == {"fp16"}
    assert all("fp16 (no bf16)" in o["notes"] for o in plan["options"])


def test_reparse_shows_notes_under_note_not_error(tmp_path, env):
    db = tmp_path / "wh.duckdb"
    assert run("refresh", "--replay", str(REPO / "fixtures"), "--db", str(db), env=env).returncode == 0
    out = run("reparse", "--dry-run", "--db", str(db), env=env)
    assert out.returncode == 0, out.stderr
    assert header_cells(out.stdout, "provider") == ["provider", "status", "offers", "changed", "closed",
                                                    "skipped items", "note"]  # fmt: skip
    rows = json.loads(run("reparse", "--dry-run", "--db", str(db), "-f", "json", env=env).stdout)
    assert (rows[0]["provider"], rows[0]["error"], rows[0]["notes"]) == ("aws", None, ["dry run of run 1"])


def test_a_reader_that_leaves_the_pipe_gets_no_error(env):
    out = subprocess.run(
        f"{sys.executable} -m cli.app prices --format csv | head -1",
        shell=True,
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
    )
    assert out.stdout.startswith("provider,region,instance_type") and out.stderr == ""


def test_export_writes_the_joinable_price_history(env, tmp_path):
    target = tmp_path / "parquet"
    out = run("export", "--parquet", str(target), env=env)
    assert out.returncode == 0, out.stderr
    import duckdb

    con = duckdb.connect()
    glob = f"{target}/price_history/**/*.parquet"
    unmatched = con.execute(
        f"""SELECT count(*) FROM read_parquet('{glob}', hive_partitioning = true) h
            LEFT JOIN '{target}/scrape_runs.parquet' r ON r.run_id = h.first_run WHERE r.run_id IS NULL"""
    ).fetchone()[0]
    assert unmatched == 0
    assert Path(target / "gpus.parquet").is_file()
    assert con.execute(
        f"SELECT bf16_tflops, fp16_tflops FROM '{target}/gpus.parquet' WHERE name = 'T4'"
    ).fetchall() == [(None, 65.0)]


def test_plan_and_estimate_say_when_the_sequence_length_is_assumed(env):
    """A bare count's attention FLOPs rest on an assumed length: both commands name it, and neither does when the
    length is the user's or the preset's."""
    note = "sequences of 2,048 tokens (assumed for a bare parameter count: --seq-len sets yours)"
    bare = run("plan", "--model", "8B", "--tokens", "100B", "--top", "1", env=env)
    assert bare.returncode == 0, bare.stderr
    assert lines(bare.stdout)[1] == note
    for given in (("--model", "8B", "--seq-len", "4096"), ("--model", "llama3-8b")):
        out = run("plan", *given, "--tokens", "100B", "--top", "1", env=env)
        assert out.returncode == 0 and "assumed for a bare" not in out.stdout
    est = run("estimate", "--model", "8B", "--tokens", "100B", "--gpu", "A100", "--gpus", "8", env=env)
    flat = re.sub(r"\s+", " ", est.stdout)  # the assumes: line wraps at 100 columns
    assert "sequences of 2,048 tokens (assumed for a bare parameter count: --seq-len sets yours)" in flat
    preset = run("estimate", "--model", "llama3-8b", "--tokens", "100B", "--gpu", "A100", "--gpus", "8", env=env)
    assert "sequences of 8,192 tokens (the preset's training length)" in re.sub(r"\s+", " ", preset.stdout)
