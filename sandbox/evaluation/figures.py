"""A report's figures as PNG bytes: success per tier, and the sensitivity curves (success against severity).

Needs the ``plot`` extra (matplotlib), imported on first use only; :func:`require_plot` says so before any
episode runs. Every point carries its 95% Wilson interval.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sandbox.errors import require_extra
from sandbox.evaluation.sensitivity import curves
from sandbox.files import write_atomically
from sandbox.perturbations.base import TIERS

if TYPE_CHECKING:
    from sandbox.evaluation.report import Report
    from sandbox.metrics import Rate

COLUMNS = 5
"""Panels per row of the sensitivity figure."""
DPI = 100


def require_plot() -> None:
    """A :class:`~sandbox.errors.MissingExtra` with the install line if matplotlib is not installed."""
    require_extra("plot", ["matplotlib"], "the sensitivity figure (--plot; an HTML page without it has no figures)")


def _pyplot() -> Any:
    require_plot()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _colour(tier: str | None) -> str:
    return f"C{TIERS.index(tier) + 1}" if tier in TIERS else "C0"


def _percent(rate: Rate) -> tuple[float, float, float]:
    """The value and the distances down and up to its interval's ends, in percent."""
    low, high = rate.interval
    return 100 * rate.value, 100 * (rate.value - low), 100 * (high - rate.value)


def _png(fig: Any, plt: Any) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, dpi=DPI, format="png", metadata={"Software": None})
    plt.close(fig)
    return buffer.getvalue()


def tier_figure(report: Report) -> bytes | None:
    """Success of the clean twins and under each tier, with intervals; ``None`` for a report with no records."""
    rows = [r for r in report.rows() if r.kind in ("clean", "tier")]
    if not rows:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(1.2 * len(rows) + 2, 3.6))
    values = [_percent(r.perturbed) for r in rows]
    ax.bar(
        range(len(rows)), [v for v, _, _ in values], yerr=[[d for _, d, _ in values], [u for _, _, u in values]],
        color=["C0" if r.kind == "clean" else _colour(r.scope) for r in rows], capsize=4,
    )  # fmt: skip
    ax.set_xticks(range(len(rows)), [f"{r.scope}\n(n={r.perturbed.n})" for r in rows], fontsize=8)
    ax.set_ylabel("success (%)")
    ax.set_ylim(0, 105)
    ax.set_title("success per tier, 95% intervals (clean: the same tasks unperturbed)", fontsize=9)
    fig.tight_layout()
    return _png(fig, plt)


def sensitivity_figure(report: Report) -> bytes | None:
    """One panel per perturbation: success against severity (0: the clean twins) with intervals; ``None`` for
    a report with no perturbed cases."""
    by_name = curves(report.sensitivity())
    if not by_name:
        return None
    plt = _pyplot()
    rows = -(-len(by_name) // COLUMNS)
    columns = min(COLUMNS, len(by_name))
    fig, axes = plt.subplots(rows, columns, figsize=(2.9 * columns, 2.3 * rows), squeeze=False, sharey=True)
    for ax, (name, points) in zip(axes.flat, by_name.items(), strict=False):
        values = [_percent(p.success) for p in points]
        ax.errorbar(
            [p.severity for p in points], [v for v, _, _ in values],
            yerr=[[d for _, d, _ in values], [u for _, _, u in values]],
            marker="o", capsize=3, color=_colour(points[0].tier),
        )  # fmt: skip
        for point, (value, _, _) in zip(points, values, strict=True):
            below = -10 if value > 80 else 4  # a label above a point near 100% would leave the panel
            ax.annotate(f"n={point.success.n}", (point.severity, value), textcoords="offset points",
                        xytext=(4, below), fontsize=6, color="#555")  # fmt: skip
        ax.set_title(f"{name}\n({points[0].tier or '-'})", fontsize=8)
        ax.set_xticks(range(max(p.severity for p in points) + 1))
        ax.set_xlim(-0.3, max(p.severity for p in points) + 0.6)
        ax.set_ylim(-5, 105)
        ax.tick_params(labelsize=7)
    for ax in axes.flat[len(by_name) :]:
        ax.axis("off")
    for ax in axes[:, 0]:
        ax.set_ylabel("success (%)", fontsize=8)
    for ax in axes[-1, :]:
        ax.set_xlabel("severity (0: clean)", fontsize=8)
    fig.suptitle("sensitivity: success against severity, 95% intervals", fontsize=10)
    height = 2.3 * rows  # margins in inches; tight_layout would take most of the drawing time on many panels
    fig.subplots_adjust(left=0.6 / (2.9 * columns), right=0.99, bottom=0.45 / height, top=1 - 0.9 / height,
                        wspace=0.12, hspace=0.65)  # fmt: skip
    return _png(fig, plt)


def write_plot(report: Report, path: str | Path) -> Path | None:
    """The sensitivity figure as a PNG at ``path`` (atomically); ``None``, writing nothing, if the report has
    no perturbed case to draw."""
    png = sensitivity_figure(report)
    if png is None:
        return None
    write_atomically(Path(path), png)
    return Path(path)
