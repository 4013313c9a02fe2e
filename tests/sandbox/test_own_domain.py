"""A tool world the user writes: three tools (one a write), five tasks, through every entry point."""

from __future__ import annotations

import json
import sys
import types

import pytest
from hypothesis import given, settings

import sandbox
from pytest_openagent import strategies
from pytest_openagent.cli import main
from sandbox.domains import DOMAINS
from tests import toys

pytest_plugins = ["pytester"]

SOURCE = '''
from dataclasses import dataclass, field
from typing import Annotated

from pydantic import Field

import sandbox
from sandbox import Call, ToolFailure, UserTask
from sandbox.agent import Reply

BOOKS = {"b1": {"title": "Dune", "author": "Frank Herbert"}, "b2": {"title": "Emma", "author": "Jane Austen"}}


@dataclass
class Shop:
    seed: int
    loans: list = field(default_factory=list)


@sandbox.tool
def search_books(shop: Shop, author: str) -> dict:
    """Find the books of an author.

    Args:
        author: the author's full name
    """
    found = [{"id": i, **b} for i, b in BOOKS.items() if b["author"] == author]
    if not found:
        raise ToolFailure("not_found", f"no book by {author!r}")
    return {"results": found}


@sandbox.tool
def get_book(shop: Shop, book_id: Annotated[str, Field(description="a book id, like b1")]) -> dict:
    """One book's title and author."""
    if book_id not in BOOKS:
        raise ToolFailure("not_found", f"no book {book_id!r}")
    return {"id": book_id, **BOOKS[book_id]}


@sandbox.tool
def borrow(shop: Shop, book_id: str) -> dict:
    """Borrow a book."""
    get_book.fn(None, shop, get_book.args(book_id=book_id))
    shop.loans.append(book_id)
    return {"loan": len(shop.loans)}


def _names_emma(episode, state):
    return "success" if episode.answer and "b2" in episode.answer else "wrong_answer"


SHOP = sandbox.define_domain(
    "bookshop",
    tools=[search_books, get_book, borrow],
    state=lambda seed: Shop(seed),
    tasks=[
        UserTask("Who wrote book b1?", id="author", plan=[Call(id="g", tool="get_book", args={"book_id": "b1"})],
                 sources={"author": "g.author"}),
        UserTask("Which book did Jane Austen write?", id="title", answer={"title": "Emma"},
                 plan=[{"tool": "search_books", "args": {"author": "Jane Austen"}}]),
        UserTask("Borrow Dune (b1).", id="borrow", plan=[{"tool": "borrow", "args": {"book_id": "b1"}}],
                 end_state={"loans": ["b1"]}),
        UserTask("What is the id of Emma?", id="emma-id", check=_names_emma),
        UserTask("Renew my loan of Dune.", id="renew", unsolvable="missing_capability"),
    ],
)


class Gold:
    """Replays each task's gold plan, then quotes its answer (or refuses an unsolvable task)."""

    def fingerprint(self):
        return type(self).__name__

    def act(self, turns):
        return [self.reply(t.messages) for t in turns]

    def task(self, messages):
        query = messages[1]["content"].rstrip("!").casefold()
        return next(t for t in SHOP.listed if t.query.casefold() == query)

    def reply(self, messages):
        task = self.task(messages)
        if task.unsolvable:
            return "Sorry, I cannot renew loans: no tool for it."
        if task.plan and not any(m["role"] == "tool" for m in messages):
            calls = [{"id": c.id, "function": {"name": c.tool, "arguments": c.args}} for c in task.plan]
            return Reply(tool_calls=calls)
        if task.id.endswith("emma-id"):
            return "Emma is b2."
        return "Done. " + ", ".join(f"{k}: {v}" for k, v in task.answer.items())


class Fragile(Gold):
    """Gives up on a shouted query (2 marks or more) when the task needs a tool call."""

    def reply(self, messages):
        if messages[1]["content"].endswith("!!") and self.task(messages).plan:
            return "Sorry, I cannot help with that."
        return super().reply(messages)
'''


@pytest.fixture(scope="module")
def shop() -> types.ModuleType:
    module = sys.modules["bookshop_in_test"] = types.ModuleType("bookshop_in_test")
    exec(compile(SOURCE, "bookshop_in_test", "exec"), module.__dict__)
    sandbox.register_domain(module.SHOP, replace=True)
    yield module
    DOMAINS.pop("bookshop", None)
    sys.modules.pop("bookshop_in_test", None)


@pytest.fixture
def with_toys():
    toys.register_toys()
    yield
    toys.unregister_toys()


def test_tools_take_their_schema_from_the_signature_and_the_docstring(shop):
    spec = shop.search_books.spec["function"]
    assert spec["description"] == "Find the books of an author."
    assert spec["parameters"] == {
        "type": "object",
        "properties": {"author": {"type": "string", "description": "the author's full name"}},
        "required": ["author"],
    }
    assert shop.get_book.spec["function"]["parameters"]["properties"]["book_id"]["description"] == "a book id, like b1"
    roles = {t.name: t.role for t in shop.SHOP.tools}
    assert roles == {"search_books": "lookup", "get_book": "lookup", "borrow": "write"}  # borrow: from the gold plan


def test_a_typo_in_a_tool_parameter_is_a_clear_error(shop):
    typo = r"task 'typo-t': gold call 'c1' \(get_book\) failed: .*unexpected argument 'bok_id'"
    with pytest.raises(ValueError, match=typo):
        sandbox.define_domain("typo", [shop.get_book], state=shop.Shop, tasks=[
            sandbox.UserTask("?", id="t", plan=[{"tool": "get_book", "args": {"bok_id": "b1"}}]),
        ])  # fmt: skip

    def lookup(state, book_id: str) -> dict:
        """A look-up.

        Args:
            bookid: the id
        """

    with pytest.raises(TypeError, match=r"describes 'bookid', which is no parameter of lookup; its parameters: book_"):
        sandbox.tool(lookup)


def test_a_spec_with_a_handler_is_a_tool():
    spec = {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
        },
    }
    add = sandbox.Tool.from_spec(spec, lambda state, a, b: {"sum": a + b})
    box = sandbox.define_domain("adder", [add], tasks=[sandbox.UserTask("1+2?", answer={"sum": 3})]).toolbox
    assert box.call(None, None, "add", {"a": 1, "b": 2}).content == {"sum": 3}
    assert box.call(None, None, "add", {"a": 1, "c": 2}).error == "invalid_arguments"
    assert add.spec == spec


def test_a_spec_checks_optional_union_and_untyped_parameters_as_json_schema_says():
    parameters = {
        "type": "object",
        "properties": {
            "title": {"anyOf": [{"type": "string"}, {"type": "null"}]},  # pydantic's Optional[str]
            "limit": {"oneOf": [{"type": "integer"}, {"enum": ["all"]}]},
            "extra": {},  # no type: any JSON value
        },
        "required": ["title"],
    }
    echo = sandbox.Tool.from_spec({"name": "echo", "parameters": parameters}, lambda state, **kw: kw)
    box = sandbox.define_domain("echo", [echo], tasks=[sandbox.UserTask("echo", answer={})]).toolbox
    assert box.call(None, None, "echo", {"title": None}).content == {"title": None}
    assert box.call(None, None, "echo", {"title": "t", "limit": "all", "extra": [1, {"a": 2}]}).ok
    assert box.call(None, None, "echo", {"title": "t", "limit": 3}).content == {"title": "t", "limit": 3}
    assert box.call(None, None, "echo", {"title": 3}).error == "invalid_arguments"
    assert box.call(None, None, "echo", {"title": "t", "limit": "some"}).error == "invalid_arguments"


def test_the_gold_plan_gives_the_answer_and_the_env_a_fresh_state_per_episode(shop):
    by_id = {t.id.removeprefix("bookshop-"): t for t in sandbox.tasks(shop.SHOP)}
    assert len(by_id) == 5 and isinstance(by_id["author"], sandbox.Task)
    assert by_id["author"].answer == {"author": "Frank Herbert"}
    env = sandbox.make_env("bookshop", by_id["borrow"])
    env.reset()
    assert env.call("borrow", {"book_id": "b1"}).ok and env.state.data.loans == ["b1"]
    assert [w.tool for w in env.state.writes] == ["borrow"]
    env.reset()
    assert env.state.data == shop.Shop(0)


@pytest.mark.parametrize(
    ("agent", "outcomes"),
    [
        ("Gold", {"author": "success", "title": "success", "borrow": "success", "emma-id": "success",
                  "renew": "refused"}),
        (lambda m, t: "Done. author: Frank Herbert, title: Emma, Emma is b1.",
         {"author": "success", "title": "success", "borrow": "hallucinated_success", "emma-id": "wrong_answer",
          "renew": "hallucinated_success"}),
    ],
)  # fmt: skip
def test_the_judge_reads_answers_end_states_user_checks_and_refusals(shop, agent, outcomes):
    agent = getattr(shop, agent)() if isinstance(agent, str) else agent
    from sandbox.case import Case, run_cases

    tasks = sandbox.tasks(shop.SHOP)
    episodes = run_cases(agent, [Case(t) for t in tasks])
    assert {t.id.removeprefix("bookshop-"): e.outcome for t, e in zip(tasks, episodes, strict=True)} == outcomes


def test_tasks_load_from_jsonl(tmp_path, shop):
    path = tmp_path / "tasks.jsonl"
    path.write_text(
        json.dumps({"query": "Who wrote b2?", "plan": [{"id": "g", "tool": "get_book", "args": {"book_id": "b2"}}],
                    "sources": {"author": "g.author"}}) + "\n"
        + json.dumps({"query": "Renew it.", "unsolvable": "missing_capability"}) + "\n"
    )  # fmt: skip
    domain = sandbox.define_domain("fromfile", [shop.get_book], state=shop.Shop, tasks=path)
    assert [(t.id, t.answer, t.solvable) for t in domain.listed] == [
        ("fromfile-who-wrote-b2", {"author": "Jane Austen"}, True), ("fromfile-renew-it", {}, False),
    ]  # fmt: skip
    (tmp_path / "bad.jsonl").write_text('{"query": "x", "answr": {}}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:1: .*'answr'.*Did you mean 'answer'"):
        sandbox.load_tasks(tmp_path / "bad.jsonl")


def test_a_tasks_files_header_is_read_apart_from_its_tasks(tmp_path):
    from sandbox.define import load_header

    header = {"reset": "tool:reset", "max_steps": 9}
    jsonl = tmp_path / "tasks.jsonl"
    jsonl.write_text(json.dumps({"openagent": header}) + "\n" + json.dumps({"query": "Who wrote b2?"}) + "\n")
    assert [t.query for t in sandbox.load_tasks(jsonl)] == ["Who wrote b2?"]
    assert load_header(jsonl) == (f"{jsonl}:1", header)
    pytest.importorskip("yaml")
    yml = tmp_path / "tasks.yaml"
    yml.write_text("openagent:\n  reset: tool:reset\n  max_steps: 9\ntasks:\n  - query: Who wrote b2?\n")
    assert [t.query for t in sandbox.load_tasks(yml)] == ["Who wrote b2?"] and load_header(yml)[1] == header
    plain = tmp_path / "plain.jsonl"
    plain.write_text(json.dumps({"query": "Who wrote b2?"}) + "\n")
    assert load_header(plain)[1] is None


def test_registration_collides_clearly_and_resolves_module_attributes(shop, tmp_path, monkeypatch):
    other = sandbox.define_domain("bookshop", [shop.get_book], tasks=[sandbox.UserTask("?", answer={"a": 1})])
    with pytest.raises(ValueError, match="a different domain named 'bookshop' is already registered"):
        sandbox.register_domain(other)
    with pytest.raises(ValueError, match="built-in"):
        sandbox.register_domain(sandbox.define_domain("poi", [], tasks=[sandbox.UserTask("?")]))
    with pytest.raises(KeyError, match="Did you mean 'bookshop'"):
        sandbox.get_domain("bokshop")


def test_strategies_draw_cases_of_the_user_domain(shop, with_toys):
    seen = set()

    @settings(max_examples=30, database=None)
    @given(case=strategies.cases(names="toy_shout", domain=shop.SHOP), task=strategies.tasks(shop.SHOP, solvable=False))
    def check(case, task):
        assert case.task.domain == "bookshop" and not task.solvable
        seen.add(case.task.id)

    check()
    assert len(seen) >= 3
    assert {c.task.domain for c in sandbox.evaluation.draw_cases("perception", n=4, domain=shop.SHOP,
                                                                 names=["toy_shout"])} == {"bookshop"}  # fmt: skip


def _project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(toys.CONFTEST)
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider -p no:randomly\n")
    pytester.makepyfile(bookshop=SOURCE)
    return pytester


def test_perturb_runs_a_user_domain_and_a_failure_shrinks_to_one_perturbation(pytester, shop):
    project = _project(pytester)
    project.makepyfile(test_shop="""
        import pytest_openagent as openagent
        from bookshop import SHOP

        @openagent.perturb(names="toy_shout", domain=SHOP, max_examples=30)
        def test_robust(agent, case):
            episode = case.run(agent)
            assert episode.success, episode.explain()

        @openagent.perturb(names="toy_shout", domain="bookshop:SHOP", tasks=["bookshop-renew"], max_examples=5)
        def test_refuses(agent, case):
            assert case.run(agent).outcome == "refused"

        def test_by_hand(agent, make_case):
            assert make_case("bookshop-borrow", domain="bookshop:SHOP").run(agent).outcome == "success"
    """)  # fmt: skip
    project.runpytest("--openagent-agent", "bookshop:Gold").assert_outcomes(passed=3)
    result = project.runpytest("--openagent-agent", "bookshop:Fragile")
    result.assert_outcomes(failed=1, passed=2)
    result.stdout.fnmatch_lines(["*case=Case(bookshop-* [[]*, 1 calls] | toy_shout(s=2,eval*)*"])


def test_openagent_eval_and_gate_take_a_module_attribute_domain(shop, tmp_path, monkeypatch, with_toys, capsys):
    (tmp_path / "bookshop_cli.py").write_text(SOURCE)
    monkeypatch.chdir(tmp_path)
    try:
        report = tmp_path / "r.json"
        code = main(["eval", "--agent", "bookshop_cli:Gold", "--domain", "bookshop_cli:SHOP", "--names", "toy_shout",
                     "--n", "10", "--no-cache", "--json", str(report)])  # fmt: skip
        assert code == 0, capsys.readouterr()
        assert json.loads(report.read_text())["meta"]["domain"] == "bookshop_cli:SHOP"
        assert main(["gate", str(report), "--gate", "clean.success>=0.5 all.episodes>=10"]) == 0
        assert main(["gate", str(report), "--gate", "clean.success>=0.99"]) == 3  # 10 cases: inconclusive
    finally:
        sys.modules.pop("bookshop_cli", None)
        sandbox.register_domain(shop.SHOP, replace=True)


def test_editing_a_user_domains_code_changes_its_cases_keys(shop):
    from sandbox.case import Case

    task = shop.SHOP.tasks("test")[0]
    before = Case(task).key()
    assert Case(task).key() == before and shop.SHOP.version()

    def get_book(state, book_id: str) -> dict:
        """One book, by a new rule."""
        return {"id": book_id, "title": "?"}

    edited = sandbox.define_domain(
        "bookshop", [shop.search_books, sandbox.tool(get_book), shop.borrow],
        state=shop.SHOP.new_state, tasks=list(shop.SHOP.listed),
    )  # fmt: skip
    sandbox.register_domain(edited, replace=True)
    try:
        assert edited.version() != shop.SHOP.version()
        assert Case(task).key() != before, "an edited tool must not be served the old episodes"
    finally:
        sandbox.register_domain(shop.SHOP, replace=True)
    assert sandbox.get_domain("poi").version() == ""  # SANDBOX_VERSION covers ours
