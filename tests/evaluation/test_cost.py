"""What a verdict cost: tokens from the engine, the tokenizer or an estimate; episodes run and cached; money at the
user's prices; misuse of a price table is one line."""

from __future__ import annotations

import json

import pytest

from sandbox.agent import Reply
from sandbox.agents import OracleAgent
from sandbox.agents.openai_format import read_reply
from sandbox.errors import UsageError
from sandbox.evaluation import evaluate
from sandbox.evaluation.cost import check_prices, cost_rows, cost_table, model_of, parse_prices
from sandbox.evaluation.report import Report
from sandbox.usage import estimated, reported


class Metered(OracleAgent):
    """The oracle, as a server would bill it: 100 prompt and 7 completion tokens a turn."""

    def act(self, turns):
        return [Reply(r.text, r.tool_calls, {"usage": {"prompt_tokens": 100, "completion_tokens": 7}})
                for r in super().act(turns)]  # fmt: skip


def test_the_engines_usage_reaches_the_reply_and_a_missing_one_does_not():
    data = {"choices": [{"message": {"content": "hi"}}], "usage": {"prompt_tokens": 12, "completion_tokens": 3}}
    assert read_reply(data).meta == {"usage": {"prompt_tokens": 12, "completion_tokens": 3}}
    assert read_reply({"choices": [{"message": {"content": "hi"}}]}).meta == {}


def test_sources_in_order_engine_then_tokenizer_then_an_estimate():
    engine = [{"usage": {"prompt_tokens": 10, "completion_tokens": 2}}] * 3
    assert reported(engine) == {"prompt": 30, "completion": 6, "source": "engine"}
    ids = [{"prompt_ids": [1, 2, 3], "completion_ids": [4]}] * 2
    assert reported(ids) == {"prompt": 6, "completion": 2, "source": "tokenizer"}
    assert reported([engine[0], {}]) is None  # a turn without a count: the episode's count would be short
    messages = [{"role": "user", "content": "x" * 40}, {"role": "assistant", "content": "y" * 8},
                {"role": "user", "content": "z" * 4}, {"role": "assistant", "content": "w" * 4}]  # fmt: skip
    assert estimated(messages) == {"prompt": (40 + 52) // 4, "completion": 3, "source": "estimated"}


def test_a_report_counts_the_engines_tokens_per_tier_and_the_cache_pays_for_nothing(tmp_path):
    first = evaluate(Metered(), tiers=["perception", "interaction"], n=6, cache_dir=tmp_path)
    assert {r.tokens_source for r in first.records} == {"engine"}
    rows = {r.scope: r for r in cost_rows(first)}
    assert rows["perception"].prompt == sum(r.prompt_tokens for r in first.records if r.tier == "perception")
    assert rows["perception"].prompt % 100 == 0 and rows["perception"].completion % 7 == 0
    assert rows["total"].run == first.meta["episodes_run"] and rows["total"].cached == 0
    again = evaluate(Metered(), tiers=["perception", "interaction"], n=6, cache_dir=tmp_path)
    rows = {r.scope: r for r in cost_rows(again)}
    assert rows["total"].run == 0 and rows["total"].cached == first.meta["episodes_run"]
    assert rows["total"].prompt == 0  # tokens are what this run paid
    assert {r.tokens_source for r in again.records} == {"engine"}  # the cached episode still knows its count


def test_money_at_the_users_prices_and_where_the_report_shows_it(tmp_path):
    report = evaluate("oracle", tiers=["perception"], n=4, cache_dir=None)
    report.meta["prices"] = {"oracle": [2.0, 10.0]}
    total = {r.scope: r for r in cost_rows(report)}["total"]
    assert total.money == pytest.approx((total.prompt * 2 + total.completion * 10) / 1e6)
    assert "money" in cost_table(report) and "estimated" in cost_table(report)
    data = json.loads(report.to_json())
    assert data["cost"]["rows"][-1]["money"] == pytest.approx(total.money)
    assert Report.from_dict(data).records == report.records


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("gpt-4o-mini=0.15", "write MODEL=PROMPT/COMPLETION"),
        ("gpt-4o-mini=-1/2", "'-1' is not a price"),
        ("gpt-4o-mini=nan/2", "'nan' is not a price"),
        ({"m": [1]}, "give two numbers"),
        ("", "the price table is empty"),
    ],
)
def test_a_bad_price_is_misuse(value, message):
    with pytest.raises(UsageError, match=message):
        parse_prices(value)


def test_a_price_table_must_name_the_agents_model():
    assert model_of("openai:qwen3-8b@http://h:8000/v1") == "qwen3-8b" and model_of("hf:runs/sft") == "runs/sft"
    assert check_prices(parse_prices({"qwen3-8b": {"prompt": 0.1, "completion": 0.4}}), "openai:qwen3-8b@http://h")
    with pytest.raises(UsageError, match="the price table names 'gpt-4o', not the model of the agent under test"):
        check_prices(parse_prices("gpt-4o=2.5/10"), "openai:qwen3-8b@http://h")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--price", "gpt-4o=2.5/10"], "the price table names 'gpt-4o', not the model of the agent under test"),
        (["--price", "oracle=-1/1"], "price of 'oracle': '-1' is not a price"),
    ],
)
def test_the_command_refuses_a_bad_price_table_in_one_line(tmp_path, argv, message):
    from tests.commands import openagent

    result = openagent("eval", "--agent", "oracle", "--n", "2", "--no-cache", *argv, cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert message in result.stderr.strip().splitlines()[-1]


def test_the_command_prints_the_cost_and_gate_prices_a_report_on_disk(tmp_path):
    from tests.commands import openagent

    ran = openagent("eval", "--agent", "oracle", "--tiers", "1", "--n", "3", "--no-cache", "--price",
                    "oracle=1/2", "--json", "r.json", cwd=tmp_path)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert "what it cost" in ran.stdout and "money" in ran.stdout
    gate = openagent("gate", "r.json", "--gate", "clean.success>=0.1", "--price", "oracle=3/4", cwd=tmp_path)
    assert gate.returncode == 0 and "money" in gate.stdout


def test_an_openai_agent_reports_what_the_engine_counted():
    from tests.loopback import LoopbackServer

    def respond(method, path, body):
        if method != "POST":
            return 404, {}, {"error": "no such route"}
        reply = {"choices": [{"message": {"content": "I cannot help with that."}}]}
        return 200, {}, {**reply, "usage": {"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55}}

    server = LoopbackServer(respond)
    try:
        report = evaluate(f"openai:m@{server.url}", tiers=["perception"], n=3, cache_dir=None)
    finally:
        server.close()
    assert {r.tokens_source for r in report.records} == {"engine"}
    assert {(r.prompt_tokens, r.completion_tokens) for r in report.records} == {(50, 5)}  # one turn each: a refusal
    total = {r.scope: r for r in cost_rows(report)}["total"]
    assert (total.prompt, total.completion) == (50 * total.run, 5 * total.run)
