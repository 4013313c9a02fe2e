"""The catalogue on a domain it has no words for: the library (``sandbox.domains.library``), built
through the internals. Every perturbation either changes what the agent sees or how tools answer, or says it
does not apply (and the catalogue says why); the oracle solves every applied solvable case and refuses the rest."""

from __future__ import annotations

import collections
import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox import OracleAgent
from sandbox.case import Case, run_cases
from sandbox.domain import Domain
from sandbox.domains import library
from sandbox.family import Draft, family
from sandbox.perturbations import POOLS, get, names
from sandbox.state import Write, verification_code
from sandbox.task import Call, Source
from sandbox.tools import Args, Tool, ToolFailure

ORACLE = OracleAgent()
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tasks():
    with library.registered() as domain:
        yield domain.tasks("test", 15)


def test_the_library_is_a_small_domain_of_its_own(tasks) -> None:
    domain = library.DOMAIN
    assert len(domain.tools) == 3 and sum(t.writes for t in domain.tools) == 1
    assert len(domain.families) == 5 and sum(f.unsolvable is not None for f in domain.families) == 1
    assert {t.family for t in tasks} == {f.name for f in domain.families}
    episodes = run_cases(ORACLE, [Case(t) for t in tasks])
    assert {(e.task.solvable, e.outcome) for e in episodes} == {(True, "success"), (False, "refused")}


def _seen(env, task) -> str:
    """What an agent meets: the query, the tools, solvability, and the gold calls' observations."""
    env.reset()
    calls = [env.observe(env.call(c.tool, c.args)) for c in task.plan]
    return json.dumps([env.query(), env.tool_specs(), env.solvable, calls], sort_keys=True, default=str)


def _specs(name: str):
    cls = get(name)
    return [cls(severity=s, pool=p, seed=7) for p in POOLS for s in cls.severities()]


@pytest.mark.parametrize("name", names())
def test_every_perturbation_changes_a_case_or_says_it_does_not_apply(name: str, tasks) -> None:
    cases = [Case(t, (spec,)) for spec in _specs(name) for t in tasks if spec.applies_to(t)]
    if not cases:
        assert get(name).limits, f"{name} applies to no library case: its catalogue entry must say where it does not"
        return
    unchanged = [c for c in cases if _seen(c.env(), c.task) == _seen(Case(c.task).env(), c.task)]
    assert not unchanged, f"{name} counted as applied but changes nothing: {unchanged[0]}"


@pytest.mark.parametrize("name", names())
def test_on_our_domains_too_an_applied_perturbation_changes_the_case(name: str) -> None:
    from sandbox.audits.strength import sample_tasks

    ours = sample_tasks(per_family=1)
    cases = [Case(t, (spec,)) for spec in _specs(name)[:3] for t in ours if spec.applies_to(t)]
    unchanged = [c for c in cases if _seen(c.env(), c.task) == _seen(Case(c.task).env(), c.task)]
    assert not unchanged, f"{name} counted as applied but changes nothing: {unchanged[0]}"


@pytest.mark.parametrize("name", names())
def test_the_oracle_solves_every_applied_solvable_case_and_refuses_the_rest(name: str, tasks) -> None:
    cases = [Case(t, (spec,)) for spec in _specs(name) for t in tasks if spec.applies_to(t)]
    episodes = run_cases(ORACLE, cases)
    wrong = [e for c, e in zip(cases, episodes, strict=True) if e.outcome != ("success" if c.solvable else "refused")]
    assert not wrong, "\n\n".join(e.explain() for e in wrong[:2])


def test_most_of_the_catalogue_applies_to_the_library(tasks) -> None:
    applied = collections.Counter(n for n in names() for s in _specs(n) for t in tasks if s.applies_to(t))
    missing = sorted(set(names()) - set(applied))
    # the library's tools take no enum, which enum_widened and tool_split change
    assert missing == ["domain_transfer", "enum_widened", "tool_split"], missing


def test_no_perturbation_or_oracle_names_a_domain_tool() -> None:
    pattern = re.compile(r"find_place|find_patient|search_places|\bpoi\b|\bmedical\b|(?-i:\bFINDERS?\b)", re.IGNORECASE)
    files = [*(ROOT / "sandbox/perturbations").rglob("*.py"), *(ROOT / "sandbox/agents/oracle").rglob("*.py")]
    hits = [f"{f.name}: {line.strip()}" for f in files
            for line in f.read_text().splitlines() if pattern.search(line) and "POI" not in line]  # fmt: skip
    assert not hits, hits


@pytest.mark.parametrize("name", ["semantic_renaming", "schema_noise", "description_rewrite", "format_shift"])
def test_train_and_eval_pools_stay_disjoint_on_a_domain_without_vocabulary(name: str, tasks) -> None:
    cls = get(name)
    task = next(t for t in tasks if t.solvable and len(t.plan) > 1)

    def words(env) -> set[str]:
        """The names an agent reads: of tools, parameters and result keys."""
        env.reset()  # the gold call in clean names reaches only a perturbation that leaves names alone
        first = env.observe(env.call(task.plan[0].tool, task.plan[0].args)) if name == "format_shift" else "{}"
        names = {s["function"]["name"] for s in env.tool_specs()}
        names |= {p for s in env.tool_specs() for p in s["function"]["parameters"]["properties"]}
        descriptions = {s["function"]["description"] for s in env.tool_specs()}
        return names | descriptions | set(re.findall(r'"(\w+)":', first))

    clean = words(Case(task).env())
    new = {p: words(Case(task, (cls(severity=min(2, cls.max_severity), pool=p, seed=1),)).env()) - clean for p in POOLS}
    assert new["train"] and new["eval"] and not new["train"] & new["eval"] - {"status", "ok"}, new


# A second domain, smaller and stranger: whole-number ids, a lookup that answers one record, no descriptions
# of parameters. What the library shows must not depend on its shapes.


class _Name(Args):
    name: str


class _Item(Args):
    item_id: int


class _Buy(Args):
    item_id: int
    qty: int


_ITEMS = {"anvil": (17, 12.5), "barrel": (23, 3.25), "candle": (31, 0.75), "drum": (47, 40.0)}


def _find(world, state, a):
    if a.name.casefold() not in _ITEMS:
        raise ToolFailure("not_found", f"no item {a.name!r}")
    return {"item_id": _ITEMS[a.name.casefold()][0], "name": a.name.casefold()}


def _price(world, state, a):
    price = next((p for i, p in _ITEMS.values() if i == a.item_id), None)
    if price is None:
        raise ToolFailure("not_found", f"no item {a.item_id}")
    return {"price_usd": price}


def _buy(world, state, a):
    code = verification_code("OR", 0, a.item_id, a.qty)
    state.writes.append(Write("buy_item", a.model_dump(), code))
    return {"order": state.next_id("O"), "code": code}


def _draft_price(world, r, split):
    name = r.choice(sorted(_ITEMS))
    price = Call(id="p", tool="get_price", args={"item_id": _ITEMS[name][0]}, after=("f",))
    sources = {"price": Source(call="p", path="price_usd")}
    return Draft({"name": name}, [Call(id="f", tool="find_item", args={"name": name}), price],
                 answer={"price": str(_ITEMS[name][1])}, sources=sources)  # fmt: skip


def _draft_buy(world, r, split):
    name, qty = r.choice(sorted(_ITEMS)), r.randrange(1, 9)
    buy = Call(id="b", tool="buy_item", args={"item_id": _ITEMS[name][0], "qty": qty}, after=("f",))
    return Draft({"name": name, "qty": str(qty)}, [Call(id="f", tool="find_item", args={"name": name}), buy],
                 sources={"code": Source(call="b", path="code")}, write=buy)  # fmt: skip


SHOP = Domain("shop", lambda seed: None, (
    Tool("find_item", "Look an item of the shop up by its name.", _Name, _find),
    Tool("get_price", "The price of an item in dollars.", _Item, _price),
    Tool("buy_item", "Order a quantity of an item; returns an order code.", _Buy, _buy, writes=True),
), (
    family("price", _draft_price, ["What does the {name} cost?", "Price of the {name}?", "How much is the {name}?"],
           ["What would I pay for the {name}?"], ["Tell me the cost of one {name}."]),
    family("buy", _draft_buy, ["Buy {qty} of the {name}.", "Order {qty} {name}.", "I want {qty} of {name}, please."],
           ["Get me {qty} units of {name}."], ["Place an order: {name}, {qty} pieces."]),
))  # fmt: skip


@pytest.fixture(scope="module")
def shop_tasks():
    from sandbox.domains import DOMAINS

    DOMAINS["shop"] = SHOP
    try:
        yield SHOP.tasks("test", 8)
    finally:
        DOMAINS.pop("shop", None)


@pytest.mark.parametrize("name", names())
def test_a_domain_with_whole_number_ids_is_solved_under_every_perturbation_that_applies(name: str, shop_tasks) -> None:
    cases = [Case(t, (spec,)) for spec in _specs(name) for t in shop_tasks if spec.applies_to(t)]
    unchanged = [c for c in cases if _seen(c.env(), c.task) == _seen(Case(c.task).env(), c.task)]
    assert not unchanged, f"{name} counted as applied but changes nothing: {unchanged[0]}"
    cases += [Case(t) for t in shop_tasks]
    episodes = run_cases(ORACLE, cases)
    wrong = [e for c, e in zip(cases, episodes, strict=True) if e.outcome != ("success" if c.solvable else "refused")]
    assert not wrong, "\n\n".join(e.explain() for e in wrong[:2])


@pytest.fixture(scope="module")
def bare_tasks():
    """The library with no tool descriptions at all: tools are known by their parameters (and names)."""
    import dataclasses

    from sandbox.domains import DOMAINS

    tools = tuple(dataclasses.replace(t, description="") for t in library.TOOLS)
    DOMAINS["library_bare"] = Domain("library_bare", library.build_world, tools, library.FAMILIES)
    try:
        yield DOMAINS["library_bare"].tasks("test", 10)
    finally:
        DOMAINS.pop("library_bare", None)


@pytest.mark.parametrize("name", names())
def test_a_domain_without_descriptions_is_solved_under_every_perturbation_that_applies(name: str, bare_tasks) -> None:
    cases = [Case(t, (spec,)) for spec in _specs(name) for t in bare_tasks if spec.applies_to(t)]
    cases += [Case(t) for t in bare_tasks]
    episodes = run_cases(ORACLE, cases)
    wrong = [e for c, e in zip(cases, episodes, strict=True) if e.outcome != ("success" if c.solvable else "refused")]
    assert not wrong, "\n\n".join(e.explain() for e in wrong[:2])


def test_a_domain_defined_through_the_public_api_is_solved_under_every_perturbation_that_applies() -> None:
    import sandbox
    from sandbox.domains import DOMAINS

    if not hasattr(sandbox, "define_domain"):
        pytest.skip("sandbox.define_domain is not there yet")
    rooms = {"r1": {"name": "Blue Room", "floor": 2, "seats": 8}, "r2": {"name": "Attic", "floor": 5, "seats": 4}}

    @sandbox.tool
    def find_room(state, name: str) -> dict:
        """Find a meeting room by its name; gives its room id.

        Args:
            name: the room's name
        """
        found = [{"room_id": i, "name": r["name"]} for i, r in rooms.items() if r["name"].casefold() == name.casefold()]
        if not found:
            raise sandbox.ToolFailure("not_found", f"no room named {name!r}")
        return found[0]

    @sandbox.tool
    def room_info(state, room_id: str) -> dict:
        """Floor and number of seats of a room.

        Args:
            room_id: a room id, like r1
        """
        if room_id not in rooms:
            raise sandbox.ToolFailure("not_found", f"no room {room_id!r}")
        return {"room_id": room_id, "floor": rooms[room_id]["floor"], "seats": rooms[room_id]["seats"]}

    find = {"id": "f", "tool": "find_room", "args": {"name": "Attic"}}
    info = {"id": "i", "tool": "room_info", "args": {"room_id": "r2"}, "after": ["f"]}
    domain = sandbox.define_domain("rooms", tools=[find_room, room_info], tasks=[
        sandbox.UserTask("On which floor is the Attic?", id="floor", plan=[find, info], sources={"floor": "i.floor"}),
        sandbox.UserTask("How many seats has the Attic?", id="seats", plan=[find, info], answer={"seats": 4}),
        sandbox.UserTask("Book the Attic for noon.", id="book", unsolvable="missing_capability"),
    ])  # fmt: skip
    DOMAINS["rooms"] = domain
    try:
        tasks = domain.tasks("test")
        cases = [Case(t, (s,)) for n in names() for s in _specs(n) for t in tasks if s.applies_to(t)]
        cases += [Case(t) for t in tasks]
        applied = {c.perturbations[0].name for c in cases if c.perturbations}
        assert len(cases) > 100 and applied >= {"dependency_merge", "logic_inversion", "nonexistent_entity"}, applied
        episodes = run_cases(ORACLE, cases)
        wrong = [
            e for c, e in zip(cases, episodes, strict=True) if e.outcome != ("success" if c.solvable else "refused")
        ]
        assert not wrong, "\n\n".join(e.explain() for e in wrong[:2])
    finally:
        DOMAINS.pop("rooms", None)


# query_paraphrase on a task of no family with held-out phrasings: the generic rewording rules.


def _paraphrases():
    cls = get("query_paraphrase")
    return [cls(severity=s, pool=p, seed=seed) for s in (1, 2, 3) for p in POOLS for seed in (0, 7)]


@pytest.fixture(scope="module")
def plain_tasks():
    """The library with no held-out phrasings in its families: its tasks are reworded by the generic rules."""
    import dataclasses

    from sandbox.domains import DOMAINS

    families = tuple(dataclasses.replace(f, paraphrases={}) for f in library.FAMILIES)
    DOMAINS["library_plain"] = Domain("library_plain", library.build_world, library.TOOLS, families)
    try:
        yield DOMAINS["library_plain"].tasks("test", 15)
    finally:
        DOMAINS.pop("library_plain", None)


@pytest.fixture(scope="module")
def notes_tasks():
    """A domain of the public API whose requests have shapes of every kind: quoted text, numbers, dates, a
    leading condition, several sentences, a question, a statement."""
    import sandbox
    from sandbox.domains import DOMAINS

    @sandbox.tool
    def find_note(state, title: str) -> dict:
        """Find a note by its title; gives its note id.

        Args:
            title: the note's title
        """
        found = [i for i, n in state["notes"].items() if n["title"].casefold() == title.casefold()]
        if not found:
            raise sandbox.ToolFailure("not_found", f"no note titled {title!r}")
        return {"note_id": found[0]}

    @sandbox.tool
    def read_note(state, note_id: str) -> dict:
        """The text and due date of a note.

        Args:
            note_id: a note id, like n-01
        """
        if note_id not in state["notes"]:
            raise sandbox.ToolFailure("not_found", f"no note {note_id!r}")
        return {"note_id": note_id, **state["notes"][note_id]}

    @sandbox.tool(role="write")
    def add_line(state, note_id: str, line: str, count: int = 1) -> dict:
        """Append a line to a note, a number of times.

        Args:
            note_id: a note id, like n-01
            line: the text to add
            count: how many times
        """
        state["notes"][note_id]["text"] += (" " + line) * count
        return {"note_id": note_id, "length": len(state["notes"][note_id]["text"])}

    def notes(seed: int) -> dict:
        return {"notes": {"n-01": {"title": "Groceries", "text": "milk", "due": "2026-07-14"},
                          "n-02": {"title": "Garden plan", "text": "roses", "due": "2026-08-01"}}}  # fmt: skip

    find = {"id": "f", "tool": "find_note", "args": {"title": "Garden plan"}}
    read = {"id": "r", "tool": "read_note", "args": {"note_id": "n-02"}, "after": ["f"]}
    alone = {"id": "r", "tool": "read_note", "args": {"note_id": "n-02"}}
    add = {"id": "a", "tool": "add_line", "args": {"note_id": "n-01", "line": "buy 2 lemons", "count": 3}}
    domain = sandbox.define_domain("notes", tools=[find_note, read_note, add_line], state=notes, tasks=[
        sandbox.UserTask("When is the Garden plan due?", id="due", plan=[find, read], sources={"due": "r.due"}),
        sandbox.UserTask("Could you show me the text of note n-02?", id="text", plan=[alone],
                         sources={"text": "r.text"}),
        sandbox.UserTask("If note n-01 is still open, add 'buy 2 lemons' to it 3 times.", id="add", plan=[add]),
        sandbox.UserTask("I keep a note called Garden plan. Tell me what it says.", id="says", plan=[find, read],
                         sources={"text": "r.text"}),
        sandbox.UserTask("My notes are a mess and the Garden plan needs its due date.", id="mess", plan=[find, read],
                         sources={"due": "r.due"}),
        sandbox.UserTask("Send the Groceries note to my phone.", id="send", unsolvable="missing_capability"),
        sandbox.UserTask("n-02", id="bare", plan=[alone], sources={"text": "r.text"}),
    ])  # fmt: skip
    DOMAINS["notes"] = domain
    try:
        yield domain.tasks("test")
    finally:
        DOMAINS.pop("notes", None)


def test_query_paraphrase_rewords_every_task_of_no_family_and_keeps_its_values(plain_tasks, notes_tasks) -> None:
    from sandbox.perturbations.perception.rewording import values_in

    for task in [*plain_tasks, *(t for t in notes_tasks if t.query != "n-02")]:
        for spec in _paraphrases():
            assert spec.applies_to(task), (task.query, spec)
            query = Case(task, (spec,)).env().query()
            assert query != task.query and query == spec.reworded(task, task.query), (task.query, spec)
            lost = [v for v in values_in(task, task.query) if query.count(v) < task.query.count(v)]
            assert not lost, (task.query, query, lost)


def test_a_request_of_nothing_but_a_value_is_not_reworded(notes_tasks) -> None:
    bare = next(t for t in notes_tasks if t.query == "n-02")
    assert not any(spec.applies_to(bare) for spec in _paraphrases())


def test_severity_adds_rules_and_the_seed_picks_the_frames(plain_tasks, notes_tasks) -> None:
    cls = get("query_paraphrase")
    tasks = [*plain_tasks, *notes_tasks]

    def text(s: int, t, seed: int) -> str:
        return cls(severity=s, seed=seed).reworded(t, t.query)

    for s in (2, 3):
        assert any(text(s, t, seed) != text(s - 1, t, seed) for t in tasks for seed in range(4)), s
    task = plain_tasks[0]
    assert len({cls(seed=seed).reworded(task, task.query) for seed in range(8)}) > 1
    assert cls(seed=3).reworded(task, task.query) == cls(seed=3).reworded(task, task.query)


def test_the_oracle_solves_every_paraphrased_case_of_no_family(plain_tasks, notes_tasks) -> None:
    tasks = [*plain_tasks, *notes_tasks]
    cases = [Case(t, (spec,)) for spec in _paraphrases() for t in tasks if spec.applies_to(t)]
    assert len(cases) > 250
    episodes = run_cases(ORACLE, cases)
    wrong = [e for c, e in zip(cases, episodes, strict=True) if e.outcome != ("success" if c.solvable else "refused")]
    assert not wrong, "\n\n".join(e.explain() for e in wrong[:2])


def _markers(pool: str) -> set[str]:
    """The words a pool's rules bring into a request: each frame's longest fixed part, each synonym."""
    from sandbox.perturbations import vocab
    from sandbox.perturbations.perception.rewording import VERBS

    frames = [*vocab.REQUEST_FRAMES[pool], *vocab.QUESTION_FRAMES[pool], *vocab.STATEMENT_FRAMES[pool]]
    fixed = {max(re.split(r"\{\w\}", f), key=len).strip(" ?.:") for f in frames}
    swaps = {v[pool][0] for v in vocab.REQUEST_SWAPS.values()} | {vocab.WORD_SYNONYMS[v][pool][0] for v in VERBS}
    return fixed | swaps


def test_train_and_eval_paraphrases_share_no_words_of_the_rules(plain_tasks, notes_tasks) -> None:
    cls = get("query_paraphrase")
    markers = {p: _markers(p) for p in POOLS}
    assert not markers["train"] & markers["eval"]
    for task in [*plain_tasks, *notes_tasks]:
        for pool, other in (("train", "eval"), ("eval", "train")):
            for s in (1, 2, 3):
                text = cls(severity=s, pool=pool, seed=s).reworded(task, task.query)
                leaked = [m for m in markers[other] if re.search(rf"\b{re.escape(m)}\b", text, re.IGNORECASE)
                          and not re.search(rf"\b{re.escape(m)}\b", task.query, re.IGNORECASE)]  # fmt: skip
                assert not leaked, (pool, text, leaked)


def test_on_our_domains_severity_1_is_a_held_out_phrasing_and_more_keeps_the_values() -> None:
    from sandbox.audits.strength import sample_tasks
    from sandbox.domains import get_domain

    cls = get("query_paraphrase")
    for task in sample_tasks(per_family=1):
        family = get_domain(task.domain).family(task.family)
        held_out = {p.format(**task.params) for p in family.paraphrases["eval"]}
        assert cls(seed=5).reworded(task, task.query) in held_out
        for s in (2, 3):
            stronger = cls(severity=s, seed=5).reworded(task, task.query)
            assert all(v.casefold() in stronger.casefold() for v in task.params.values()), (stronger, task.params)


_VALUES = st.one_of(
    st.from_regex(r"[A-Z][a-z]{3,8}( [A-Z][a-z]{3,8})?", fullmatch=True),  # a name
    st.from_regex(r"[a-z]{2,4}-\d{2,5}", fullmatch=True),  # an id
    st.integers(0, 10**6).map(str),
    st.dates().map(str),
    st.from_regex(r"'[a-z ]{4,20}'", fullmatch=True),  # quoted text
    st.sampled_from(["list", "details", "update", "check the log"]),  # words the rules would swap
)
_SHAPES = [
    "Could you show me {v} and update {w}?", "Please check {v}, then send it to {w}.", "Tell me the details of {v}.",
    "If {v} is late, cancel {w}.", "Who wrote {v}? I want the list of {w}.", "My list has {v} and {w} in it.",
    "Before you search {v}, reserve {w}.", "I'd appreciate it if you could retrieve {v} for {w}.",
]  # fmt: skip


@given(shape=st.sampled_from(_SHAPES), v=_VALUES, w=_VALUES, level=st.integers(1, 3), pool=st.sampled_from(POOLS),
       seed=st.integers(0, 999))  # fmt: skip
@settings(max_examples=300, deadline=None)
def test_values_the_plan_takes_from_the_request_survive_every_rewording(shape, v, w, level, pool, seed) -> None:
    import random

    from sandbox.perturbations.perception.rewording import protected, reword
    from sandbox.task import Task

    query = shape.format(v=v, w=w)
    plan = (Call(id="c", tool="t", args={"a": v.strip("'"), "b": [w], "n": {"deep": w}}),)
    task = Task(id="x", domain="x", family="x", split="test", seed=0, params={}, phrasing=0, query=query, plan=plan,
                answer={}, sources={})  # fmt: skip
    values, kept = protected(task, query)
    text = reword(query, values, kept, random.Random(seed), pool, level)
    for value in (v.strip("'"), w):
        assert text.count(value) >= query.count(value), (query, text, value)
    assert text != query
    assert text == reword(query, values, kept, random.Random(seed), pool, level)


@pytest.fixture(scope="module")
def bfcl_tasks():
    pytest.importorskip("bfcl_eval", reason="needs bfcl-eval (the bfcl extra)")
    pytest.importorskip("mpmath", reason="needs mpmath (the bfcl extra)")
    from sandbox.domains import get_domain

    tasks = get_domain("bfcl").tasks("test")
    return tasks[::40]


def test_every_user_turn_of_a_bfcl_task_is_reworded_and_the_oracle_still_passes_bfcls_checker(bfcl_tasks) -> None:
    from sandbox.domains import get_domain
    from sandbox.perturbations.perception.rewording import values_in

    bfcl = get_domain("bfcl")
    specs = [get("query_paraphrase")(severity=s, pool=p, seed=3) for s in (1, 3) for p in POOLS]
    cases = [Case(t, (spec,)) for spec in specs for t in bfcl_tasks]
    assert all(c.perturbations[0].applies_to(c.task) for c in cases)
    episodes = run_cases(ORACLE, cases)
    wrong = [e for e in episodes if e.outcome != "success"]
    assert not wrong, "\n\n".join(e.explain() for e in wrong[:2])
    changed = 0
    for case, episode in zip(cases, episodes, strict=True):
        turns = bfcl.entry(case.task.id).turns
        said = [m["content"] for m in episode.messages if m["role"] == "user"]
        assert len(said) == len(turns)
        changed += sum(a != b for a, b in zip(said, turns, strict=True))
        for given_turn, reworded in zip(turns, said, strict=True):
            lost = [v for v in values_in(case.task, given_turn) if reworded.count(v) < given_turn.count(v)]
            assert not lost, (given_turn, reworded, lost)
    assert changed > sum(len(bfcl.entry(c.task.id).turns) for c in cases) * 0.8


def test_no_detail_is_left_out_of_a_bfcl_request(bfcl_tasks) -> None:
    """Where the generic pattern fits a BFCL request, what it would leave out is an action's argument (the stock
    of an order, the origin of a flight): no request of several user turns loses one."""
    from sandbox.domains import get_domain
    from sandbox.perturbations.perception.query import detail

    tasks = get_domain("bfcl").tasks("test")
    assert any(detail(t) is not None for t in tasks)
    assert not any(get("underspecified_query")().applies_to(t) for t in tasks)
