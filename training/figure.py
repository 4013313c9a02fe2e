"""The demo's table as a figure: success per tier for each agent, and robustness against SFT steps.

Needs the ``plot`` extra (matplotlib), imported only here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sandbox.errors import UsageError

SCOPES = (("clean", "clean"), ("perception", "tier 1"), ("interaction", "tier 2"), ("reasoning", "tier 3"),
          ("internalization", "tier 4"))  # fmt: skip
"""What the figure draws and the paired comparison reads: the clean twins, then each tier's perturbed cases."""


def draw(rows: dict[str, dict[str, Any]], path: str | Path) -> Path:
    """Write ``rows`` (the demo's, by agent label) as a PNG at ``path``: on the left, each agent's success on
    the clean tasks and under each tier; on the right, each tier's success against the SFT step count (the
    paper's robustness plot), the other trained agents as stars at their step count (a row's ``steps``)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UsageError("the figure needs matplotlib: pip install 'pytest-openagent[plot]'") from None

    # The curve against steps needs two step counts at least: five points at one x show nothing.
    steps = {row["steps"] for row in rows.values() if "steps" in row}
    if len(steps) >= 2:
        fig, (bars, curve) = plt.subplots(1, 2, figsize=(13, 4.8), gridspec_kw={"width_ratios": [3, 2]})
    else:
        fig, bars = plt.subplots(1, 1, figsize=(8, 4.8))
        curve = None
    labels = list(rows)
    scopes = measured(rows)
    width = 0.8 / len(scopes)
    for k, (scope, name) in enumerate(scopes):
        values = [100 * (rows[a].get(f"success_{scope}") or 0.0) for a in labels]
        bars.bar([i + (k - (len(scopes) - 1) / 2) * width for i in range(len(labels))], values, width, label=name)
    bars.set_xticks(range(len(labels)), labels, rotation=20, ha="right", fontsize=8)
    bars.set_ylabel("success (%)")
    bars.set_ylim(0, 100)
    bars.set_title("success per tier (tier 4: refusing an unsolvable task is success)")
    bars.legend(fontsize=7, ncols=len(scopes), loc="upper center", bbox_to_anchor=(0.5, -0.25))

    if curve is not None:
        _draw_curve(curve, rows)
    fig.tight_layout()

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fig.savefig(tmp, dpi=110, format="png")
    plt.close(fig)
    tmp.replace(path)
    return path


def measured(rows: dict[str, dict[str, Any]]) -> list[tuple[str, str]]:
    """The scopes some row measured (a demo that tests two tiers draws two, not four with empty bars)."""
    return [(s, name) for s, name in SCOPES if any(r.get(f"success_{s}") is not None for r in rows.values())]


def _draw_curve(curve: Any, rows: dict[str, dict[str, Any]]) -> None:
    sft = sorted((row["steps"], label) for label, row in rows.items() if label.startswith("SFT-") and "steps" in row)
    others = [(row["steps"], label) for label, row in rows.items() if "steps" in row and not label.startswith("SFT-")]
    for k, (scope, name) in enumerate(measured(rows)):
        colour = f"C{k}"
        if sft:
            curve.plot([s for s, _ in sft], [100 * (rows[a].get(f"success_{scope}") or 0.0) for _, a in sft],
                       marker="o", color=colour, label=name)  # fmt: skip
        for steps, label in others:
            curve.scatter([steps], [100 * (rows[label].get(f"success_{scope}") or 0.0)], marker="*", s=120,
                          color=colour, edgecolors="black", linewidths=0.5)  # fmt: skip
    if others:
        stars = ", ".join(label for _, label in others)
        curve.scatter([], [], marker="*", s=120, color="white", edgecolors="black", label=stars)
    curve.set_xlabel("SFT steps")
    curve.set_ylabel("success (%)")
    curve.set_ylim(0, 100)
    curve.set_title("robustness against SFT steps")
    curve.legend(fontsize=7)
