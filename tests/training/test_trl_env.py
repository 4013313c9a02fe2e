"""The perturbed world as a TRL environment: train-pool cases only, the perturbed tools reach the model, the judge
is the reward, and a real GRPOTrainer trains on it (slow)."""

from __future__ import annotations

import json
import os
import re
from types import SimpleNamespace

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("trl")

import sandbox
from sandbox.case import Case
from sandbox.errors import UsageError
from sandbox.perturbations import get
from training.rewards import completion, refusal_aware
from training.trl_env import SandboxRollouts, case_environments, dataset_rows, episode_sequence, judge_reward
from training.trl_tools import NotExpressible, environment_class, finish


def _task(**kw):
    return next(t for t in sandbox.tasks("poi", "train", 40, 0) if all(getattr(t, k) == v for k, v in kw.items()))


def _renamed(pool: str = "train") -> Case:
    task = next(t for t in sandbox.tasks("poi", "train", 40, 0) if t.solvable and len(t.plan) >= 2)
    return Case(task, (get("semantic_renaming")(severity=2, pool=pool, seed=1),))


def _names(specs) -> set[str]:
    return {s["function"]["name"] for s in specs}


def _tokenizer(path):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.padding_side = "left"
    return tokenizer


def test_only_train_split_tasks_with_train_pool_perturbations_are_trained_on():
    test_task = sandbox.tasks("poi", "test", 1, 0)[0]
    with pytest.raises(UsageError, match="test split"):
        dataset_rows([Case(test_task)])
    with pytest.raises(UsageError, match="not drawn from the train pool"):
        dataset_rows([_renamed(pool="eval")])
    with pytest.raises(UsageError, match="not drawn from the train pool"):
        SandboxRollouts([_renamed(pool="eval")])
    with pytest.raises(UsageError, match="not drawn from the train pool"):
        case_environments([_renamed(pool="eval")])


def test_what_the_trl_environment_shows_shares_no_name_with_the_eval_pool():
    clean = _names(Case(_renamed().task).env().tool_specs())
    shown = set(vars(environment_class(_renamed())))
    evaluated = _names(_renamed(pool="eval").env().tool_specs())
    assert shown - clean and not (shown - clean) & (evaluated - clean)


def test_no_gold_reaches_the_model(tiny):
    case = _renamed()
    [row] = dataset_rows([case])
    text = repr(row)
    for value in case.task.answer.values():
        assert str(value) not in text
    assert case.task.id not in text and case.task.family not in text


def test_a_renamed_tool_reaches_the_model_under_its_new_name_in_both_modes(tiny):
    case = _renamed()
    old = _names(Case(case.task).env().tool_specs())
    new = _names(case.env().tool_specs())
    renamed, gone = sorted(new - old), sorted(old - new)
    assert renamed and gone
    tokenizer = _tokenizer(tiny)

    # rollout_func: the chat template renders the case's own specs
    from transformers import AutoModelForCausalLM

    rollouts = SandboxRollouts([case], max_new_tokens=4, temperature=1.0)
    [episode], _ = rollouts.episodes(AutoModelForCausalLM.from_pretrained(tiny), tokenizer, [case])
    seen = tokenizer.decode(episode.meta[0]["prompt_ids"])
    assert all(f"\n{name}(" in seen for name in renamed) and not any(f"{name}(" in seen for name in gone)

    # environment_factory: the class's methods are the tools TRL lists, under the new names
    cls = case_environments([case])["0"]
    methods = [getattr(cls(), n) for n in sorted(vars(cls)) if not n.startswith("_") and n != "reset"]
    listed = tokenizer.apply_chat_template(dataset_rows([case])[0]["prompt"], tools=methods, tokenize=False)
    assert all(f"\n{name}(" in listed for name in renamed) and not any(f"{name}(" in listed for name in gone)


def test_a_case_whose_tools_drift_is_left_to_the_rollout_function():
    task = _task(family="outing")
    drifting = Case(task, (get("semantic_renaming")(severity=1, pool="train", seed=1, after=1),))
    with pytest.raises(NotExpressible, match=r"drift.*rollout_func"):
        environment_class(drifting)


def test_the_environments_reward_is_the_judges_outcome():
    """Played through the environment's methods with the gold calls, then answered: each reward is what the reward
    function gives the judged episode, and that episode's outcome is the judge's (the oracle's own run of the case)."""
    solvable = _renamed()
    unsolvable = Case(_task(family="unknown_place"))
    envs, completions, episodes = [], [], []
    for case, text in ((solvable, None), (solvable, "I could not find it."), (unsolvable, None)):
        env = environment_class(case)()
        env.reset()
        oracle = case.run(sandbox.OracleAgent())
        for step in oracle.steps:
            for call in step.calls:
                getattr(env, call.name)(**call.arguments)
        envs.append(env)
        completions.append([{"role": "assistant", "content": text if text is not None else oracle.answer}])
        episodes.append(oracle)
    by_completion = judge_reward("completion")(completions, environments=envs)
    judged = [finish(env, "") for env in envs]  # already ended: the episode stays as judged
    assert [e.outcome for e in judged] == [episodes[0].outcome, "wrong_refusal", episodes[2].outcome]
    assert [e.outcome for e in episodes] == ["success", "success", "refused"]
    assert by_completion == [completion(e) for e in judged] == [1.0, 0.0, 0.0]
    assert [refusal_aware(e) for e in judged] == [1.0, 0.0, 1.0]


def test_rollouts_are_one_sequence_with_the_tool_results_masked_out():
    meta = [
        {"prompt_ids": [1, 2], "completion_ids": [3, 4], "logprobs": [-0.1, -0.2]},
        {"prompt_ids": [1, 2, 3, 4, 5, 6], "completion_ids": [7], "logprobs": [-0.3]},
        {"prompt_ids": [1, 9], "completion_ids": [8], "logprobs": [-0.4]},  # re-rendered differently: cut here
    ]
    tokenizer = SimpleNamespace(eos_token_id=0)
    prompt, ids, logprobs, mask, cut = episode_sequence(SimpleNamespace(meta=meta), tokenizer)
    assert (prompt, ids, mask, cut) == ([1, 2], [3, 4, 5, 6, 7], [1, 1, 0, 0, 1], True)
    assert logprobs == [-0.1, -0.2, 0.0, 0.0, -0.3]


def test_the_rollout_rewards_are_the_judges(tiny):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny)
    cases = [_renamed(), Case(_task(family="unknown_place"))]
    rollouts = SandboxRollouts(cases, max_new_tokens=6, temperature=1.0)
    trainer = SimpleNamespace(model=model, processing_class=_tokenizer(tiny),
                              accelerator=SimpleNamespace(unwrap_model=lambda m: m))  # fmt: skip
    prompts = [row["prompt"] for row in dataset_rows(cases) for _ in range(2)]
    out = rollouts(prompts, trainer)
    assert [e.task.id for e in out["episode"]] == [c.task.id for c in cases for _ in range(2)]
    lengths = zip(out["env_mask"], out["completion_ids"], out["logprobs"], strict=True)
    assert all(len(m) == len(i) == len(lp) for m, i, lp in lengths)
    for name, fn in (("completion", completion), ("refusal-aware", refusal_aware)):
        assert judge_reward(name)([None] * 4, episode=out["episode"]) == [fn(e) for e in out["episode"]]


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["rollout", "environment"])
def test_a_short_grpo_trainer_run_on_the_perturbed_world(tiny, tmp_path, mode):
    from transformers import AutoModelForCausalLM
    from trl import GRPOConfig

    from sandbox.evaluation.draw import draw_cases
    from training.trl_env import grpo_trainer

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    cases = draw_cases("perception", 4, 0, "poi", split="train", pool="train", names=["semantic_renaming"])
    args = GRPOConfig(output_dir=str(tmp_path), max_steps=2, per_device_train_batch_size=4, num_generations=2,
                      max_completion_length=16, logging_steps=1, report_to=[], save_strategy="no", use_cpu=True,
                      bf16=False, learning_rate=1e-3)  # fmt: skip
    extra = {"max_new_tokens": 16} if mode == "rollout" else {}
    trainer = grpo_trainer(AutoModelForCausalLM.from_pretrained(tiny), cases, args, mode=mode,
                           tokenizer=_tokenizer(tiny), **extra)  # fmt: skip
    trainer.train()
    logged = [h for h in trainer.state.log_history if "rewards/judge_completion/mean" in h]
    assert trainer.state.global_step == 2 and len(logged) == 2
    if mode == "rollout":
        assert trainer.rollout_func.stats["episodes"] == 2 * 4
    else:
        assert all(re.fullmatch(r"\d+", name) for name in trainer.environment_factories)


def test_a_call_the_model_writes_under_the_new_name_reaches_the_world_through_trls_parser(tiny):
    """environment_factory: TRL parses the reply with the tools the prompt was rendered with and calls the method of
    that name; under the renamed tool, the sandbox answers as the world does."""
    from trl.chat_template_utils import parse_response

    from training.trl_tools import with_response_template

    case = _renamed()
    cls = case_environments([case])["0"]
    env = cls()
    env.reset()
    methods = [getattr(env, n) for n in sorted(vars(cls)) if not n.startswith("_") and n != "reset"]
    tokenizer = with_response_template(_tokenizer(tiny))
    prompt = tokenizer.apply_chat_template(dataset_rows([case])[0]["prompt"], tools=methods,
                                           add_generation_prompt=True, tokenize=True, return_dict=True)  # fmt: skip
    find = case.task.plan[0]
    renamed = next(s["function"]["name"] for s in case.env().tool_specs() if "venue" in s["function"]["name"]
                   and set(s["function"]["parameters"]["properties"]) == set(find.args))  # fmt: skip
    reply = f"<tool_call>\n{json.dumps({'name': renamed, 'arguments': find.args})}\n</tool_call><|im_end|>"
    parsed = parse_response(tokenizer, tokenizer(reply, add_special_tokens=False)["input_ids"],
                            prefix=prompt["input_ids"], tools=methods)  # fmt: skip
    call = parsed["tool_calls"][0]["function"]
    assert call["name"] == renamed and call["name"] != find.tool
    observed = json.loads(getattr(env, call["name"])(**call["arguments"]))
    assert observed == json.loads(Case(case.task).env().observe(Case(case.task).env().call(find.tool, find.args)))
