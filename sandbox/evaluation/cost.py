"""What a verdict cost: per scope of a report, the episodes run and those the cache gave back, the tokens of the
episodes run, and money at the user's prices; the wall time of the whole run. Which episodes the cache gave back is
the run's, not the records' (``meta["cache_hits"]``: a record is the same whether its episode ran or was read back).

Prices are per million tokens, prompt and completion apart, in whatever currency the user writes them in, and name
the model they are for: ``gpt-4o-mini=0.15/0.60``. The model of an agent is the ``MODEL`` of ``openai:MODEL@URL``, the
``PATH`` of ``hf:PATH``, else the agent's spec itself (``oracle``).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sandbox.errors import UsageError

Report = Any
Record = Any
"""A report and its records (:mod:`sandbox.evaluation.report`, which builds its JSON from here, so not imported)."""

Prices = dict[str, tuple[float, float]]
"""A model's price of a million prompt tokens and of a million completion tokens."""
EXAMPLE = "gpt-4o-mini=0.15/0.60"


def peak_rss_bytes(children: bool = False) -> int:
    """This process's peak resident memory in bytes, or with ``children`` its largest finished child's; 0 where the
    system does not say (no ``resource`` module: Windows)."""
    try:
        import resource
    except ImportError:
        return 0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF)
    return usage.ru_maxrss * (1 if sys.platform == "darwin" else 1024)  # bytes on macOS, KiB on Linux


def model_of(agent: str) -> str:
    """The model an agent spec names, as a price table names it."""
    if agent.startswith("openai:"):
        return agent.removeprefix("openai:").split("@", 1)[0]
    return agent.removeprefix("hf:")


def parse_prices(value: Any) -> Prices:
    """``"MODEL=PROMPT/COMPLETION"`` (several joined by commas, or a list of them), or a table ``{MODEL: [PROMPT,
    COMPLETION]}`` (or ``{MODEL: {prompt = P, completion = C}}``) as ``[tool.openagent] prices`` gives it."""
    if isinstance(value, Mapping):
        return {str(model): _pair(model, price) for model, price in value.items()}
    parts = [value] if isinstance(value, str) else list(value) if isinstance(value, Iterable) else [value]
    out: Prices = {}
    for part in (p.strip() for item in parts for p in str(item).split(",") if p.strip()):
        model, eq, price = part.rpartition("=")
        prompt, slash, completion = price.partition("/")
        if not eq or not model.strip() or not slash:
            raise UsageError(f"price {part!r}: write MODEL=PROMPT/COMPLETION, the price of a million prompt and of a "
                             f"million completion tokens (e.g. {EXAMPLE!r})")  # fmt: skip
        out[model.strip()] = _pair(model.strip(), [prompt, completion])
    if not out:
        raise UsageError(f"the price table is empty; write MODEL=PROMPT/COMPLETION (e.g. {EXAMPLE!r})")
    return out


def _pair(model: Any, price: Any) -> tuple[float, float]:
    if isinstance(price, Mapping):
        price = [price.get("prompt"), price.get("completion")]
    if isinstance(price, str) or not isinstance(price, Iterable) or len(list(price)) != 2:
        raise UsageError(
            f"price of {model!r}: give two numbers, per million prompt and completion tokens, got {price!r}"
        )
    numbers = []
    for x in price:
        try:
            number = float(x) if not isinstance(x, bool) else math.nan
        except (TypeError, ValueError):
            number = math.nan
        if not math.isfinite(number) or number < 0:
            raise UsageError(f"price of {model!r}: {x!r} is not a price; give a number of at least 0")
        numbers.append(number)
    return (numbers[0], numbers[1])


def check_prices(prices: Prices, agent: str) -> Prices:
    """``prices`` if it names only the model of ``agent`` (a spec); a usage error naming the others otherwise."""
    model = model_of(agent)
    unknown = sorted(m for m in prices if m != model)
    if unknown:
        raise UsageError(f"the price table names {', '.join(map(repr, unknown))}, not the model of the agent under "
                         f"test: {model!r} (from {agent!r}); price that model")  # fmt: skip
    return prices


@dataclass(frozen=True)
class CostRow:
    scope: str
    run: int
    cached: int
    prompt: int
    completion: int
    """Tokens of the episodes run (those the cache gave back cost nothing this time)."""
    money: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"scope": self.scope, "episodes_run": self.run, "episodes_cached": self.cached,
                "prompt_tokens": self.prompt, "completion_tokens": self.completion, "money": self.money}  # fmt: skip


def _row(scope: str, episodes: list[tuple[bool, int, int]], price: tuple[float, float] | None) -> CostRow:
    ran = [e for e in episodes if not e[0]]
    prompt, completion = sum(e[1] for e in ran), sum(e[2] for e in ran)
    money = None if price is None else (prompt * price[0] + completion * price[1]) / 1e6
    return CostRow(scope, len(ran), len(episodes) - len(ran), prompt, completion, money)


def cost_rows(report: Report) -> list[CostRow]:
    """``clean`` (each task's twin once), each tier (and its drift cases), ``all`` and ``total``."""
    price = report_price(report)
    hits = report.meta.get("cache_hits")
    hits = hits if isinstance(hits, dict) else {}
    cases, tasks = set(hits.get("cases", ())), set(hits.get("twins", ()))
    twins = {r.task: (r.task in tasks, r.clean_prompt_tokens, r.clean_completion_tokens) for r in report.records}
    rows = [_row("clean", list(twins.values()), price)]
    perturbed = [r for r in report.records if r.perturbations]

    def own(r: Record) -> tuple[bool, int, int]:
        return (r.case in cases, r.prompt_tokens, r.completion_tokens)

    for scope in sorted(dict.fromkeys(map(_group, perturbed)), key=_tier_order):
        rows.append(_row(scope, [own(r) for r in perturbed if _group(r) == scope], price))
    if perturbed:
        rows.append(_row("all", [own(r) for r in perturbed], price))
    rows.append(_row("total", list(twins.values()) + [own(r) for r in perturbed], price))
    return rows


def _group(r: Record) -> str:
    return f"{r.tier}{'-drift' if r.drift else ''}"


def _tier_order(scope: str) -> tuple[int, str]:
    from sandbox.perturbations.base import TIERS

    tier = scope.removesuffix("-drift")
    return (TIERS.index(tier) if tier in TIERS else len(TIERS), scope)


def report_price(report: Report) -> tuple[float, float] | None:
    """The price of the report's agent's model, where the report holds a price table for it."""
    prices = report.meta.get("prices")
    agent = report.meta.get("agent")
    if not isinstance(prices, Mapping) or not isinstance(agent, str):
        return None
    price = prices.get(model_of(agent))
    return (float(price[0]), float(price[1])) if isinstance(price, list | tuple) and len(price) == 2 else None


def sources(report: Report) -> dict[str, int]:
    """How many records' tokens came from each source (``engine``, ``tokenizer``, ``estimated``)."""
    counts: dict[str, int] = {}
    for r in report.records:
        counts[r.tokens_source or "unknown"] = counts.get(r.tokens_source or "unknown", 0) + 1
    return counts


def cost_summary(report: Report) -> dict[str, Any]:
    """What the JSON report holds under ``"cost"``."""
    return {"rows": [r.to_dict() for r in cost_rows(report)], "wall_s": report.meta.get("wall_s"),
            "tokens_from": sources(report), "price": report_price(report)}  # fmt: skip


def cost_table(report: Report) -> str:
    from tabulate import tabulate

    rows = cost_rows(report)
    priced = any(r.money is not None for r in rows)
    body = [[r.scope, r.run, r.cached, f"{r.prompt:,}", f"{r.completion:,}"] + ([f"{r.money:.4f}"] if priced else [])
            for r in rows]  # fmt: skip
    headers = ["cost", "episodes run", "cached", "prompt tokens", "completion tokens"] + (["money"] * priced)
    wall = report.meta.get("wall_s")
    froms = ", ".join(f"{k} {v}" for k, v in sources(report).items())
    note = f"tokens from: {froms} cases (estimated: 4 characters a token)"
    if isinstance(wall, int | float):
        note = f"wall time {wall:.1f} s; " + note
    return tabulate(body, headers=headers, disable_numparse=True) + "\n" + note
