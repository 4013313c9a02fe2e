"""Training data out: ``openagent data export`` and ``openagent data from-report`` write chat JSONL that
``datasets`` loads, TRL's ``SFTTrainer`` trains on and the chat template renders with ``tools=``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pytest_openagent.cli import main
from sandbox.case import Case
from sandbox.domains.poi.vocabulary import TOOL_SYNONYMS
from sandbox.evaluation.draw import task_pool
from sandbox.perturbations.registry import from_dict
from training.config import SFTConfig
from training.dataset import build_examples, encode
from training.from_report import failures

PAFT = ["--episodes", "12", "--alpha", "0.5", "--seed", "3"]


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def paft_jsonl(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("export") / "paft.jsonl"
    assert main(["data", "export", "paft", *PAFT, "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def brittle_report(tmp_path_factory) -> Path:
    """A report of the static baseline (which calls the clean names and never retries) under renames and errors."""
    out = tmp_path_factory.mktemp("report") / "report.json"
    argv = ["eval", "--agent", "static", "--names", "tool_name_noise,runtime_error", "--n", "6", "--no-cache"]
    assert main([*argv, "--json", str(out)]) == 0
    return out


def test_rows_are_chat_messages_with_tools_in_the_openai_form(paft_jsonl):
    data = rows(paft_jsonl)
    assert len(data) == 12 and any(r["meta"]["perturbations"] for r in data)
    for row in data:
        assert [m["role"] for m in row["messages"][:2]] == ["system", "user"]
        assert row["messages"][-1]["role"] == "assistant" and "tool_calls" not in row["messages"][-1]
        names = {t["function"]["name"] for t in row["tools"]}
        assert all(t["type"] == "function" and "parameters" in t["function"] for t in row["tools"])
        for message in row["messages"]:
            for call in message.get("tool_calls", []):
                assert call["type"] == "function" and call["function"]["name"] in names
                assert isinstance(call["function"]["arguments"], dict)
        called = [c["id"] for m in row["messages"] for c in m.get("tool_calls", [])]
        answered = [m["tool_call_id"] for m in row["messages"] if m["role"] == "tool"]
        assert called == answered
        assert {p["pool"] for p in row["meta"]["perturbations"]} <= {"train"}


def test_the_export_is_exactly_what_training_tokenizes(paft_jsonl, tiny):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny)
    cfg = SFTConfig(episodes=12, alpha=0.5, seed=3)
    examples, meta = build_examples(cfg, tokenizer)
    exported = [encode(tokenizer, r["messages"], r["tools"]) for r in rows(paft_jsonl)]
    kept = [(ids, mask) for ids, mask in exported if len(ids) <= cfg.max_length]  # training's own length cut
    assert meta["perturbed_examples"] > 0 and len(kept) == meta["examples"]
    assert [(e.ids, e.labels) for e in examples] == kept


def test_datasets_loads_the_rows_back_unchanged(paft_jsonl):
    datasets = pytest.importorskip("datasets")

    loaded = datasets.load_dataset("json", data_files=str(paft_jsonl), split="train")
    assert list(loaded) == rows(paft_jsonl)  # no key filled with null where rows differ in shape


def test_rows_render_through_the_chat_template_with_tools(paft_jsonl, tiny):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny)
    for row in rows(paft_jsonl):
        text = tokenizer.apply_chat_template(row["messages"], tools=row["tools"], tokenize=False)
        tool_block = text[text.index("<tools>\n") : text.index("\n</tools>")]
        assert all(f"\n{t['function']['name']}(" in tool_block for t in row["tools"])
        for message in row["messages"]:
            for call in message.get("tool_calls", []):
                arguments = json.dumps(call["function"]["arguments"])
                assert f'<tool_call>\n{{"name": "{call["function"]["name"]}", "arguments": {arguments}}}' in text
        assert text.count("<tool_response>") == sum(m["role"] == "tool" for m in row["messages"])


@pytest.mark.slow
def test_trl_sft_trainer_trains_a_tiny_model_on_the_export(paft_jsonl, tiny, tmp_path):
    datasets = pytest.importorskip("datasets")
    pytest.importorskip("trl")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig as TRLConfig
    from trl import SFTTrainer

    data = datasets.load_dataset("json", data_files=str(paft_jsonl), split="train")
    model = AutoModelForCausalLM.from_pretrained(tiny, dtype=torch.float32)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    args = TRLConfig(
        output_dir=str(tmp_path), max_steps=3, per_device_train_batch_size=2, learning_rate=1e-3,
        assistant_only_loss=True, max_length=None, logging_steps=1, save_strategy="no", report_to=[],
        use_cpu=True, bf16=False, dataloader_num_workers=0, seed=0,
    )  # fmt: skip
    tokenizer = AutoTokenizer.from_pretrained(tiny)
    trainer = SFTTrainer(model=model, args=args, train_dataset=data, processing_class=tokenizer)
    trainer.train()
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    assert trainer.state.global_step == 3 and len(losses) == 3 and all(0 < x < 100 for x in losses)
    assert any(not torch.equal(before[n], p) for n, p in model.named_parameters())
    # TRL's tokens and loss mask are ours: the same ids, the loss on the assistant's tokens only
    ours = [encode(tokenizer, r["messages"], r["tools"]) for r in rows(paft_jsonl)]
    assert trainer.train_dataset["labels"] == [[t if m else -100 for t, m in zip(*e, strict=True)] for e in ours]


def test_from_report_gives_train_pool_rows_for_the_reports_failures(brittle_report, tmp_path):
    report = json.loads(brittle_report.read_text())
    failing = [r for r in report["records"] if not r["success"]]
    assert failing, "the static baseline should fail under renames and runtime errors"
    out = tmp_path / "failures.jsonl"
    assert main(["data", "from-report", str(brittle_report), "--out", str(out), "--per-failure", "2"]) == 0
    data = rows(out)

    asked = {r["case"]: r for r in failing}
    assert {r["meta"]["failure"]["case"] for r in data} == set(asked)  # the oracle solved a twin of each
    by_id = {t.id: t for t in task_pool(("poi",), "train")}
    for row in data:
        record = asked[row["meta"]["failure"]["case"]]
        specs = row["meta"]["perturbations"]
        severities = dict(re.findall(r"(\w+)\(s=(\d+),eval\)", record["label"]))
        assert [(p["name"], str(p["severity"])) for p in specs] == [(n, severities[n]) for n in record["perturbations"]]
        assert {p["pool"] for p in specs} == {"train"}
        task = by_id[row["meta"]["task"]]  # a train-split task of the failing one's family
        assert task.family == record["family"]

        case = Case(task, tuple(from_dict(p) for p in specs))
        assert row["tools"] == case.env().tool_specs()
        eval_case = Case(task, tuple(from_dict({**p, "pool": "eval"}) for p in specs))
        if "tool_name_noise" in record["perturbations"]:
            assert row["tools"] != eval_case.env().tool_specs()
            eval_names = {n for pools in TOOL_SYNONYMS.values() for n in pools["eval"]}
            assert not eval_names & {t["function"]["name"] for t in row["tools"]}


def test_from_report_counts_what_it_cannot_convert(brittle_report, tmp_path, capsys):
    report = json.loads(brittle_report.read_text())
    failing = [r for r in report["records"] if not r["success"]]
    unknown_name = {**failing[0], "case": "x1", "perturbations": ["no_such_shift"],
                    "stack": [{"name": "no_such_shift", "severity": 1, "pool": "eval", "seed": 0}],
                    "label": failing[0]["label"].rpartition(" | ")[0] + " | no_such_shift(s=1,eval)"}  # fmt: skip
    unknown_domain = {**failing[0], "case": "x2", "task": "nowhere-test-phone-0", "domain": "nowhere"}
    report["records"] = [failing[1], unknown_name, unknown_domain]
    report["meta"].pop("domain")  # a search-only report names no domain: every registered one is tried
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(report))
    out = tmp_path / "rows.jsonl"
    assert main(["data", "from-report", str(edited), "--out", str(out), "--per-failure", "1"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["failures"] == 3 and summary["failures_with_rows"] == 1 and summary["rows"] == len(rows(out)) == 1
    assert summary["skipped"] == {"unknown_domain": 1, "unknown_perturbation": 1}


@pytest.fixture(scope="module")
def two_domain_report(brittle_report, tmp_path_factory) -> Path:
    """A session's report as a poi measurement with property tests on medical: the search's records are
    medical, the measurement's domain poi."""
    folder = tmp_path_factory.mktemp("two-domains")
    medical = folder / "medical.json"
    argv = ["eval", "--agent", "static", "--names", "tool_name_noise,runtime_error", "--n", "6", "--no-cache"]
    assert main([*argv, "--domain", "medical", "--json", str(medical)]) == 0
    report = json.loads(brittle_report.read_text())
    searched = json.loads(medical.read_text())
    report["search"] = {"meta": {**searched["meta"], "kind": "search"}, "records": searched["records"]}
    out = folder / "report.json"
    out.write_text(json.dumps(report))
    return out


def test_from_report_takes_each_failures_domain_from_its_record(two_domain_report, tmp_path, capsys):
    report = json.loads(two_domain_report.read_text())
    medical = [r for r in report["search"]["records"] if not r["success"]]
    assert report["meta"]["domain"] == "poi" and medical and {r["domain"] for r in medical} == {"medical"}
    out = tmp_path / "rows.jsonl"
    assert main(["data", "from-report", str(two_domain_report), "--out", str(out), "--per-failure", "1"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["skipped"] == {} and summary["domain_from_report"] == 0
    assert summary["failures_with_rows"] == summary["failures"]
    medical_train = {t.id for t in task_pool(("medical",), "train")}
    by_failure = {r["meta"]["failure"]["case"]: r["meta"]["task"] for r in rows(out)}
    assert all(by_failure[r["case"]] in medical_train for r in medical)


def test_a_report_whose_records_name_no_domain_uses_its_own_and_says_so(two_domain_report, tmp_path, capsys):
    report = json.loads(two_domain_report.read_text())
    for record in [*report["records"], *report["search"]["records"]]:
        del record["domain"]  # as a report written before records kept their domain
    report["schema_version"] = 2
    older = tmp_path / "older.json"
    older.write_text(json.dumps(report))
    out = tmp_path / "rows.jsonl"
    assert main(["data", "from-report", str(older), "--out", str(out), "--per-failure", "1"]) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    medical = len({r["case"] for r in report["search"]["records"] if not r["success"]})
    assert summary["domain_from_report"] == summary["failures"] and summary["skipped"] == {"unknown_domain": medical}
    assert f"{summary['failures']} failing records name no domain" in captured.err
    assert "the report's domain (poi) was used for them" in captured.err


EVIL = """
from pathlib import Path

Path("imported").write_text("evil.py ran")

from sandbox.domains import DOMAINS

X = DOMAINS["poi"]
"""


def test_a_report_never_chooses_a_module_to_import(brittle_report, tmp_path):
    from tests.commands import openagent

    report = json.loads(brittle_report.read_text())
    report["meta"]["domain"] = "evil:X"
    (tmp_path / "report.json").write_text(json.dumps(report))
    (tmp_path / "evil.py").write_text(EVIL)
    refused = openagent("data", "from-report", "report.json", "--out", "rows.jsonl", cwd=tmp_path)
    assert refused.returncode == 2, refused.stderr
    assert "the report names the domain 'evil:X', which would import the module 'evil'" in refused.stderr
    assert "pass --domain evil:X" in refused.stderr
    assert not (tmp_path / "imported").exists() and not (tmp_path / "rows.jsonl").exists()

    other = openagent("data", "from-report", "report.json", "--out", "rows.jsonl", "--domain", "poi", cwd=tmp_path)
    assert other.returncode == 2 and not (tmp_path / "imported").exists()  # only the same spec allows it

    allowed = openagent("data", "from-report", "report.json", "--out", "rows.jsonl", "--domain", "evil:X", cwd=tmp_path)
    assert allowed.returncode == 0, allowed.stderr
    assert (tmp_path / "imported").exists() and rows(tmp_path / "rows.jsonl")


def test_a_record_domain_is_a_name_never_a_module(brittle_report, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "evil.py").write_text(EVIL)
    report = json.loads(brittle_report.read_text())
    failing = next(r for r in report["records"] if not r["success"])
    report["records"] = [{**failing, "domain": "evil:X"}]
    (tmp_path / "report.json").write_text(json.dumps(report))
    assert main(["data", "from-report", "report.json", "--out", "rows.jsonl"]) == 0
    assert json.loads(capsys.readouterr().out)["skipped"] == {"unknown_domain": 1}
    assert not (tmp_path / "imported").exists()


def test_a_report_without_failures_writes_an_empty_file(brittle_report, tmp_path, capsys):
    report = json.loads(brittle_report.read_text())
    report["records"] = [r for r in report["records"] if r["success"]]
    passing = tmp_path / "passing.json"
    passing.write_text(json.dumps(report))
    out = tmp_path / "none.jsonl"
    assert main(["data", "from-report", str(passing), "--out", str(out)]) == 0
    assert out.read_text() == "" and json.loads(capsys.readouterr().out)["failures"] == 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["data", "from-report", "missing.json", "--out", "x.jsonl"], "cannot read report 'missing.json'"),
        (["data", "from-report", "{schema}", "--out", "x.jsonl"], "not a pytest-openagent report"),
        (["data", "from-report", "missing.json"], "the following arguments are required: --out"),
        (["data", "export", "paft", "--out", "x.jsonl", "--alpha", "1.5"], "--alpha must be in (0, 1]"),
        (["data", "export", "paft", "--out", "x.jsonl", "--perturbations", "runtime_eror"], "Did you mean"),
        (["data", "export", "sft", "--out", "x.jsonl", "--alpha", "0.3"], "unrecognized arguments: --alpha"),
        (["data", "export", "--out", "x.jsonl"], "invalid choice"),
        (["data", "export", "sft", "--out", "."], "is a folder"),
    ],
)
def test_misuse_exits_2_with_a_message(argv, message, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "schema.json").write_text(json.dumps({"schema": "something/else", "records": []}))
    argv = [a.replace("{schema}", "schema.json") for a in argv]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x.jsonl").exists()


def test_per_failure_below_one_is_misuse(brittle_report, tmp_path, capsys):
    out = tmp_path / "x.jsonl"
    with pytest.raises(SystemExit) as exit_info:
        main(["data", "from-report", str(brittle_report), "--out", str(out), "--per-failure", "0"])
    assert exit_info.value.code == 2 and "--per-failure must be at least 1" in capsys.readouterr().err
    assert not out.exists()


def test_the_reference_documents_the_data_commands_and_their_options():
    from pytest_openagent.cli import build_parser

    doc = (Path(__file__).resolve().parents[2] / "docs" / "reference.md").read_text()
    data = build_parser()._subparsers._group_actions[0].choices["data"]
    actions = data._subparsers._group_actions[0].choices
    export_methods = actions["export"]._subparsers._group_actions[0].choices
    assert "`openagent data export sft|paft" in doc and "`openagent data from-report" in doc
    for command, parser in [
        *((f"export {m}", p) for m, p in export_methods.items()),
        ("from-report", actions["from-report"]),
    ]:
        for action in parser._actions:
            for flag in action.option_strings:
                if flag.startswith("--") and flag != "--help":
                    assert f"`{flag}" in doc, f"openagent data {command} {flag}"


def test_a_domain_without_gold_plans_gives_no_rows_and_says_so(tmp_path, capsys):
    import sandbox
    from sandbox.agent import Reply
    from sandbox.domains import DOMAINS
    from sandbox.evaluation.evaluate import evaluate

    @sandbox.tool
    def get_price(shop: dict, item: str) -> dict:
        """The price of an item.

        Args:
            item: the item's name, e.g. mug
        """
        return {"item": item, "price": {"mug": "7"}.get(item, "0")}

    class Shrug:
        def fingerprint(self):
            return "shrug-v1"

        def act(self, turns):
            return [Reply(text="No idea.") for _ in turns]

    shop = sandbox.define_domain(
        "giftshop_export_test", tools=[get_price], state=lambda seed: {},
        tasks=[
            sandbox.UserTask("What does a mug cost?", id="price", family="price", sources={"price": "p.price"},
                             plan=[sandbox.Call(id="p", tool="get_price", args={"item": "mug"})]),
            sandbox.UserTask("Pick me a gift.", id="pick", family="pick", check=lambda episode, state: "wrong_answer"),
        ],
    )  # fmt: skip
    try:
        report = evaluate(Shrug(), "perception", n=6, domain=shop, names=["query_noise"], cache_dir=None)
        ids = {"price": "giftshop_export_test-price", "pick": "giftshop_export_test-pick"}
        assert {r.task for r in report.records if not r.success} == set(ids.values())
        path = tmp_path / "report.json"
        report.to_json(path)
        out = tmp_path / "rows.jsonl"
        assert main(["data", "from-report", str(path), "--out", str(out), "--per-failure", "1"]) == 0
    finally:
        DOMAINS.pop("giftshop_export_test", None)
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert summary["skipped"] == {"no_gold_plan": sum(r.task == ids["pick"] for r in failures(report))}
    assert {r["meta"]["task"] for r in rows(out)} == {ids["price"]} and summary["rows"] == len(rows(out))
    assert "skipped: its tasks are solvable but have no gold plan" in captured.err
