"""Entity renaming: gold trajectories whose city is swapped for one the sandbox does not have.

The POI train split has eight cities, so a model fine-tuned on it sees each of them hundreds of
times and learns to write those names rather than to copy the one in the request. A city's tokens
also differ between the request (``" Turin"``) and a tool call's JSON (``'"Turin"'``: ``Tur`` + ``in``),
so a held-out city's name is easy to misspell in a call (docs/experiments.md). Renaming a share of the
training episodes to cities outside the sandbox (none of its train, dev or test cities) teaches
copying a name from the request to the call, the way entity substitution does for semantic parsers.
The renamed conversation stays consistent: the city is replaced in every message, tool calls and
results included, so the tools' answers are the same facts under another name.
"""

from __future__ import annotations

import random
import re
from typing import Any

from sandbox.errors import UsageError
from sandbox.seeds import child_seed

OTHER_CITIES = (
    "Aarhus", "Antwerp", "Athens", "Barcelona", "Basel", "Belgrade", "Bergen", "Bilbao", "Bologna", "Bordeaux",
    "Bratislava", "Bremen", "Brno", "Bruges", "Brussels", "Bucharest", "Budapest", "Cadiz", "Cardiff", "Cologne",
    "Copenhagen", "Cork", "Dijon", "Dresden", "Dublin", "Dubrovnik", "Edinburgh", "Florence", "Frankfurt", "Galway",
    "Geneva", "Genoa", "Glasgow", "Gothenburg", "Granada", "Graz", "Hamburg", "Helsinki", "Innsbruck", "Leeds",
    "Leipzig", "Lille", "Ljubljana", "Lucerne", "Malaga", "Milan", "Montpellier", "Nantes", "Nice", "Nuremberg",
    "Oslo", "Oxford", "Padua", "Palermo", "Prague", "Riga", "Rotterdam", "Salzburg", "Sofia", "Split",
    "Stockholm", "Strasbourg", "Tallinn", "Toulouse", "Trieste", "Utrecht", "Valencia", "Verona", "Vilnius",
    "Warsaw", "Wroclaw", "Zagreb", "Zurich", "Bari", "Aveiro", "Braga", "Coimbra", "Cordoba", "Lugano", "Metz",
)  # fmt: skip


def rename_cities(messages: list[dict], cities: tuple[str, ...], r: random.Random) -> list[dict]:
    """``messages`` with each of ``cities`` that occurs in them (whole words) replaced by a distinct
    city from :data:`OTHER_CITIES`, everywhere; unchanged if none occurs."""
    text = repr(messages)
    present = [c for c in cities if re.search(rf"\b{re.escape(c)}\b", text)]
    if not present:
        return messages
    new = dict(zip(present, r.sample([c for c in OTHER_CITIES if c not in cities], len(present)), strict=True))
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, present)) + r")\b")
    return _replace(messages, lambda s: pattern.sub(lambda m: new[m.group(1)], s))


def _replace(value: Any, sub: Any) -> Any:
    if isinstance(value, str):
        return sub(value)
    if isinstance(value, dict):
        return {k: _replace(v, sub) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_replace(v, sub) for v in value)
    return value


def rename_share(trajectories: list, domain: str, share: float, seed: int) -> int:
    """Rename the city of a share of ``trajectories`` in place (POI only); returns how many changed."""
    if not 0 <= share <= 1:
        raise UsageError(f"rename_cities must be in [0, 1], got {share}")
    if domain != "poi" or not share:
        return 0
    from sandbox.domains.poi.world import CITY_SPLIT  # the POI domain's own cities

    r = random.Random(child_seed(seed, "rename"))
    changed = 0
    for t in trajectories:
        if r.random() < share:
            messages = rename_cities(t.messages, CITY_SPLIT["train"], r)
            changed += messages is not t.messages
            t.messages = messages
    return changed
