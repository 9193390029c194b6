"""``costopt history --plot``: the cheapest $/GPU-hour per provider over time, spot dashed.

Drawn as steps (a price holds until it changes, so a price cut is a vertical drop, and cuts of 10 % or
more are marked), broken where a series has no data (an archive that ended, months before the first
scrape) instead of a straight line across the gap, on an axis fitted to the data. Days whose price
came from an imported archive are labelled as such in the footer.

matplotlib is an optional extra (``pip install 'costopt[plot]'``); without it the command says so.
"""

from __future__ import annotations

import contextlib
import itertools
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from warehouse.errors import UsageError

CUT = 0.10  # a day-on-day drop at least this large is marked as a price cut


def segments(points: list[tuple[date, float]]) -> list[list[tuple[date, float]]]:
    """Consecutive-day runs of a daily series: a missing day starts a new run (a gap, not a line)."""
    runs: list[list[tuple[date, float]]] = []
    for day, value in sorted(points):
        if runs and day - runs[-1][-1][0] == timedelta(days=1):
            runs[-1].append((day, value))
        else:
            runs.append([(day, value)])
    return runs


def cuts(points: list[tuple[date, float]]) -> list[tuple[date, float]]:
    """Days on which the series fell by ``CUT`` or more against the day before."""
    out = []
    ordered = sorted(points)
    for (before_day, before), (day, value) in itertools.pairwise(ordered):
        if day - before_day == timedelta(days=1) and value <= (1 - CUT) * before:
            out.append((day, value))
    return out


def plot_history(daily: list[dict[str, Any]], gpu: str, target: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.dates as mdates
        import matplotlib.pyplot as plt
    except ImportError:
        raise UsageError("--plot needs matplotlib: pip install 'costopt[plot]'") from None
    if not daily:
        raise UsageError(f"no price history for {gpu} in that period; nothing to plot")
    series: dict[tuple[str, str], list[tuple[date, float]]] = {}
    for row in daily:
        series.setdefault((row["provider"], row["pricing"]), []).append((row["day"], row["min_usd_per_gpu_hour"]))
    fig, ax = plt.subplots(figsize=(10, 5.2), dpi=100)
    colors: dict[str, Any] = {}
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    marked_cut = False
    for (provider, pricing), points in sorted(series.items()):
        color = colors.setdefault(provider, palette[len(colors) % len(palette)])
        dashed = pricing != "on_demand"
        label = f"{provider} ({pricing.replace('_', '-')})"
        for n, run in enumerate(segments(points)):
            days = [d for d, _ in run]
            values = [v for _, v in run]
            if len(run) == 1:  # one day: a dot, with a day's width so it reads as a step too
                days, values = [days[0], days[0] + timedelta(days=1)], values * 2
            ax.plot(
                mdates.date2num(days),
                values,
                color=color,
                linestyle=(0, (4, 2)) if dashed else "-",
                linewidth=1.6,
                drawstyle="steps-post",
                marker="o" if len(run) == 1 else None,
                markevery=[0],
                markersize=4,
                label=label if n == 0 else None,
            )
        drops = cuts(points)
        if drops:
            ax.scatter(
                mdates.date2num([d for d, _ in drops]),
                [v for _, v in drops],
                marker="v",
                s=28,
                color=color,
                zorder=3,
                edgecolors="black",
                linewidths=0.5,
            )
            marked_cut = True
    first = min(row["day"] for row in daily)
    last = max(row["day"] for row in daily) + timedelta(days=1)
    margin = max(timedelta(days=2), (last - first) / 50)
    ax.set_xlim(float(mdates.date2num(first - margin)), float(mdates.date2num(last + margin)))
    locator = mdates.AutoDateLocator(minticks=4, maxticks=10)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    top = max(row["min_usd_per_gpu_hour"] for row in daily)
    ax.set_ylim(0, top * 1.08)
    ax.set_title(f"{gpu}: cheapest $/GPU-hour per provider and day (spot and interruptible dashed)")
    ax.set_ylabel("USD per GPU-hour")
    ax.grid(alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    if marked_cut:
        from matplotlib.lines import Line2D

        handles.append(Line2D([], [], marker="v", color="gray", markeredgecolor="black", linestyle="None"))
        labels.append(f"price cut of {CUT:.0%} or more")
    ax.legend(handles, labels, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    imported = [row["day"] for row in daily if row.get("imported")]
    scraped = [row["day"] for row in daily if not row.get("imported")]
    footer = []
    if imported:
        footer.append(f"imported from public price archives: {min(imported):%Y-%m-%d}..{max(imported):%Y-%m-%d}")
    if scraped:
        footer.append(f"scraped by costopt: {min(scraped):%Y-%m-%d}..{max(scraped):%Y-%m-%d}")
    fig.text(0.01, 0.01, "; ".join(footer) + "; UTC days", fontsize=7.5, color="dimgray")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    part = target.with_name(target.name + ".part.png")
    try:
        if target.is_dir():
            raise UsageError(f"--plot {target} is a directory; give a file name such as h100.png")
        blocking = next((d for d in [target.parent, *target.parent.parents] if d.exists() and not d.is_dir()), None)
        if blocking is not None:
            raise UsageError(f"cannot write the chart to {target}: {blocking} is a file, not a directory")
        target.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(part, format="png")
        part.replace(target)
    except OSError as exc:
        raise UsageError(f"cannot write the chart to {target}: {exc.strerror or exc}") from None
    finally:
        plt.close(fig)
        with contextlib.suppress(OSError):  # after an error or Ctrl-C, no half-written chart is left
            part.unlink(missing_ok=True)
