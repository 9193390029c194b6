"""``costopt history --plot``: the cheapest $/GPU-hour per provider over time, spot dashed.

matplotlib is an optional extra (``pip install 'costopt[plot]'``); without it the command says so.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from warehouse.errors import UsageError


def plot_history(daily: list[dict[str, Any]], gpu: str, target: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UsageError("--plot needs matplotlib: pip install 'costopt[plot]'") from None
    if not daily:
        raise UsageError(f"no price history for {gpu} in that period; nothing to plot")
    series: dict[tuple[str, str], list[tuple[Any, float]]] = {}
    for row in daily:
        series.setdefault((row["provider"], row["pricing"]), []).append((row["day"], row["min_usd_per_gpu_hour"]))
    fig, ax = plt.subplots(figsize=(10, 5.5), dpi=110)
    colors: dict[str, Any] = {}
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for (provider, pricing), points in sorted(series.items()):
        color = colors.setdefault(provider, palette[len(colors) % len(palette)])
        days, values = zip(*sorted(points), strict=True)
        dashed = pricing != "on_demand"
        ax.plot(
            days,
            values,
            color=color,
            linestyle="--" if dashed else "-",
            linewidth=1.8,
            marker="o" if len(days) < 3 else None,
            label=f"{provider} ({pricing.replace('_', '-')})",
        )
    ax.set_title(f"{gpu}: cheapest $/GPU-hour per provider (spot and interruptible dashed)")
    ax.set_ylabel("USD per GPU-hour")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, ncols=2)
    fig.autofmt_xdate()
    fig.tight_layout()
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
