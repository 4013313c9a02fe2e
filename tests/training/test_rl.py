"""GRPO on a tiny random model: the reward rises, the log-probs it trains on are the sampler's, resume works."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

from training.grpo import Row, episode_rows, group_advantages, row_logprobs, scored_rows, token_weights  # noqa: E402
from training.inference.model_dir import CheckpointError  # noqa: E402
from training.rewards import completion, get_reward, refusal_aware, reward_name  # noqa: E402
from training.rl import RLConfig, train  # noqa: E402
from training.rollouts import rollout  # noqa: E402


def digit_share(episode) -> float:
    """A trivially rewardable task for a random model: write digits."""
    text = episode.steps[0].reply if episode.steps else ""
    return sum(c.isdigit() for c in text) / max(1, len(text))


def _cfg(tiny, out, **kw) -> RLConfig:
    defaults = dict(
        out=str(out), init=str(tiny), tasks=16, steps=12, group=8, tasks_per_step=2, max_new_tokens=8, lr=1e-2,
        lora=False, warmup=1, progress=False, save_every=0, threads=1,
    )  # fmt: skip
    return RLConfig(**{**defaults, **kw})


def _history(out) -> list[dict]:
    return json.loads((out / "openagent-train.json").read_text())["history"]


def test_group_advantages_are_normalised_within_each_group():
    adv = group_advantages([1, 0, 0, 0, 1, 1, 1, 1], group=4)
    assert adv[4:] == [0.0] * 4  # a group whose episodes all scored the same teaches nothing
    assert sum(adv[:4]) == pytest.approx(0, abs=1e-6)
    assert adv[0] == pytest.approx(3**0.5, rel=1e-3) and adv[1] == pytest.approx(-(3**-0.5), rel=1e-3)


@pytest.mark.parametrize(
    ("outcome", "solvable", "by_completion", "by_refusal_aware"),
    [("success", True, 1, 1), ("refused", False, 0, 1), ("hallucinated_success", False, 0, 0),
     ("wrong_refusal", True, 0, 0), ("parse_error", True, 0, 0)],
)  # fmt: skip
def test_completion_reward_ignores_refusals_and_refusal_aware_credits_them(
    outcome, solvable, by_completion, by_refusal_aware
):
    episode = SimpleNamespace(outcome=outcome, solvable=solvable)
    assert completion(episode) == by_completion
    assert refusal_aware(episode) == by_refusal_aware


def test_rewards_by_name_by_path_and_as_callables():
    assert get_reward("completion") is completion and get_reward("refusal-aware") is refusal_aware
    assert get_reward("training.rewards:refusal_aware") is refusal_aware
    assert get_reward(digit_share) is digit_share
    assert reward_name(refusal_aware) == "refusal-aware" and reward_name(digit_share).endswith("digit_share")
    with pytest.raises(ValueError, match="unknown reward 'completeion'"):
        get_reward("completeion")


def test_turns_that_extend_the_conversation_merge_into_one_row():
    meta = [
        {"prompt_ids": [1, 2, 3], "completion_ids": [4, 5], "logprobs": [-0.1, -0.2]},
        {"prompt_ids": [1, 2, 3, 4, 5, 6], "completion_ids": [7], "logprobs": [-0.3]},
        {"prompt_ids": [1, 2, 9], "completion_ids": [8], "logprobs": [-0.4]},  # re-rendered differently
    ]
    rows = episode_rows(SimpleNamespace(meta=meta), advantage=0.5)
    assert [r.ids for r in rows] == [[1, 2, 3, 4, 5, 6, 7], [1, 2, 9, 8]]
    assert [r.spans for r in rows] == [[(3, 5), (6, 7)], [(3, 4)]]
    assert [r.old_logprobs for r in rows] == [[-0.1, -0.2, -0.3], [-0.4]]


def test_the_loss_averages_over_tokens_or_over_rows():
    long, short = Row([], [], [-0.1] * 6, 1.0), Row([], [], [-0.2] * 2, -1.0)
    rows = [long, short]
    assert token_weights(rows, rows, "token") == pytest.approx([1 / 8] * 8)
    by_row = token_weights(rows, rows, "sequence")
    assert by_row == pytest.approx([1 / 12] * 6 + [1 / 4] * 2)  # each row weighs 1/2 in all, however long
    assert token_weights(rows, [short], "sequence") == pytest.approx([1 / 4] * 2)  # a micro-batch keeps the step's mean


def test_episodes_without_signal_are_scored_only_for_the_kl_term():
    def episode(token: int) -> SimpleNamespace:
        return SimpleNamespace(meta=[{"prompt_ids": [1], "completion_ids": [token], "logprobs": [-0.5]}])

    episodes = [episode(2), episode(3), episode(4)]
    advantages = [1.0, -1.0, 0.0]  # the last one's group had equal rewards
    assert [r.ids for r in scored_rows(episodes, advantages, kl=0.0)] == [[1, 2], [1, 3]]
    rows = scored_rows(episodes, advantages, kl=0.1)
    assert [r.ids for r in rows] == [[1, 2], [1, 3], [1, 4]] and rows[2].advantage == 0.0


def _turn_meta(tokenizer, messages, tools) -> list[dict]:
    """What the model agent records for each assistant turn of a conversation (prompt, completion)."""
    meta = []
    for k, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        prompt = tokenizer.apply_chat_template(messages[:k], tools=tools, add_generation_prompt=True, tokenize=False)
        full = tokenizer.apply_chat_template(messages[: k + 1], tools=tools, tokenize=False)
        prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        full_ids = tokenizer(full, add_special_tokens=False)["input_ids"]
        end = full_ids.index(tokenizer.convert_tokens_to_ids("<|im_end|>"), len(prompt_ids)) + 1
        assert full_ids[: len(prompt_ids)] == prompt_ids
        meta.append({"prompt_ids": prompt_ids, "completion_ids": full_ids[len(prompt_ids) : end],
                     "logprobs": [0.0] * (end - len(prompt_ids))})  # fmt: skip
    return meta


def test_merged_rows_with_a_shared_prefix_score_each_turn_as_a_plain_forward_would(tiny):
    """A multi-turn, multi-episode batch: one row per episode, the group's opening run once, exact log-probs."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    import sandbox
    from sandbox import OracleAgent, make_env, run_episodes

    tokenizer = AutoTokenizer.from_pretrained(tiny)
    model = AutoModelForCausalLM.from_pretrained(tiny, dtype=torch.float32).eval()
    tasks = [t for t in sandbox.tasks("poi", "train", 40) if t.n_calls >= 2][:2]
    envs = [make_env("poi", t) for t in tasks]
    episodes = run_episodes(OracleAgent(), envs)
    rows = []
    for env, episode in zip(envs, episodes, strict=True):
        meta = _turn_meta(tokenizer, episode.messages, env.tool_specs())
        assert len(meta) >= 2
        episode_rows_ = episode_rows(SimpleNamespace(meta=meta), 1.0)
        assert len(episode_rows_) == 1  # the template re-renders each reply as it was written
        rows.extend(episode_rows_)
    with torch.no_grad():
        got = row_logprobs(model, rows, tokenizer.pad_token_id, temperature=0.7)
        want = []
        for row in rows:
            logprobs = torch.log_softmax(model(input_ids=torch.tensor([row.ids])).logits[0].float() / 0.7, -1)
            for start, end in row.spans:
                want.extend(logprobs[t - 1, row.ids[t]].item() for t in range(start, end))
    assert got.tolist() == pytest.approx(want, abs=1e-4)


@pytest.mark.parametrize("lora", [False, True])
def test_the_update_scores_tokens_with_the_log_probs_they_were_sampled_with(tiny, tmp_path, lora):
    from training.rl import load_policy
    from training.rollouts import run_cases, step_indices

    cfg = _cfg(tiny, tmp_path, temperature=0.8, max_new_tokens=12, lora=lora)
    model, tokenizer, _ = load_policy(cfg)
    model.eval()
    if lora:  # trained adapters, which the rollout merges into the weights and then takes out again
        with torch.no_grad():
            for name, p in model.named_parameters():
                if "lora_B" in name:
                    p.normal_(0, 0.05)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    pool = run_cases(cfg, [])
    cases = [pool[i] for i in step_indices(cfg, len(pool), 0)]
    episodes, stats = rollout(model, tokenizer, cases, cfg, step=0)
    assert len(episodes) == cfg.tasks_per_step * cfg.group and stats["generated"] > 0
    rows = [row for ep in episodes for row in episode_rows(ep, 1.0)]
    with torch.no_grad():
        new = row_logprobs(model, rows, tokenizer.pad_token_id, cfg.temperature)
    old = torch.tensor([lp for r in rows for lp in r.old_logprobs])
    assert (new - old).abs().max().item() < 1e-3  # so the PPO ratio starts at 1
    for name, p in model.named_parameters():
        torch.testing.assert_close(p, before[name], rtol=0, atol=1e-6)


def test_each_epoch_visits_every_case_of_the_run_once_and_a_resumed_run_sees_the_same_ones():
    from training.dataset import train_perturbations
    from training.rollouts import epoch_of, run_cases, step_indices

    cfg = RLConfig(tasks=12, tasks_per_step=4, perturbed=0.5, seed=3)
    cases = run_cases(cfg, train_perturbations())
    assert sum(bool(c.perturbations) for c in cases) == 6
    assert all(p.pool == "train" for c in cases for p in c.perturbations)
    epochs = [[i for step in range(3 * e, 3 * e + 3) for i in step_indices(cfg, 12, step)] for e in range(3)]
    for visited in epochs:
        assert sorted(visited) == list(range(12))
    assert epochs[0] != epochs[1]  # each epoch has its own order
    assert [epoch_of(cfg, len(cases), s) for s in range(7)] == [0, 0, 0, 1, 1, 1, 2]
    again = run_cases(cfg, train_perturbations())  # a resumed run draws the same cases
    assert [c.key() for c in again] == [c.key() for c in cases]


def test_grpo_raises_the_reward_of_a_tiny_model_within_seconds(tiny, tmp_path):
    out = train(_cfg(tiny, tmp_path / "rl", steps=16, lr=2e-2), reward=digit_share)
    rewards = [h["reward"] for h in _history(out)]
    assert sum(rewards[-3:]) / 3 > sum(rewards[:3]) / 3 + 0.2, rewards
    meta = json.loads((out / "openagent-train.json").read_text())
    assert meta["kind"] == "rl" and meta["reward"].endswith("digit_share") and meta["steps"] == 16
    assert (out / "config.json").is_file() and not (out / "checkpoints").exists()


def test_iterations_take_more_optimizer_steps_on_each_steps_rollouts_and_the_clip_then_acts(tiny, tmp_path):
    from training.rollouts import step_indices

    histories = {}
    for mu in (1, 3):
        cfg = _cfg(tiny, tmp_path / f"mu{mu}", steps=2, tasks=4, lr=2e-2, iterations=mu)
        histories[mu] = _history(train(cfg, reward=digit_share))
        assert [h["cases"] for h in histories[mu]] == [step_indices(cfg, 4, s) for s in range(2)]
    # one pass scores the tokens with the log-probs they were sampled with; later ones have moved the policy
    assert all(h["clip_frac"] == 0 for h in histories[1]), histories[1]
    assert all(h["clip_frac"] > 0 for h in histories[3] if h["rows"]), histories[3]


def test_the_supervised_term_trains_on_the_sft_data_of_the_init_checkpoint(tiny, tmp_path):
    import shutil

    from training.config import SFTConfig

    init = shutil.copytree(tiny, tmp_path / "sft")
    (init / "openagent-train.json").write_text(json.dumps({"kind": "sft", "config": SFTConfig(episodes=8).to_dict()}))
    cfg = _cfg(init, tmp_path / "rl", steps=6, tasks_per_step=1, group=2, sft_coef=1.0, sft_batch=4)
    history = _history(train(cfg, reward=lambda episode: 0.0))
    assert all(h["rows"] == 0 for h in history)  # a constant reward gives GRPO nothing: only the supervised term trains
    losses = [h["sft_loss"] for h in history]  # each two steps are one pass over the 8 gold episodes
    assert sum(losses[-2:]) < 0.8 * sum(losses[:2]), losses

    from sandbox.errors import UsageError

    with pytest.raises(UsageError, match=r"sft_coef=1.0: the supervised term trains on the SFT data of --init.*"
                                         r"no such file.*or set sft_coef to 0"):  # fmt: skip
        train(_cfg(tiny, tmp_path / "rl-plain", steps=1, sft_coef=1.0))


class _Interrupt(Exception):
    pass


def test_lora_with_kl_resumes_after_an_interruption(tiny, tmp_path):
    calls = {"n": 0, "armed": True}

    def dies_in_step_4(episode) -> float:  # one reward for both runs: a resume must use the run's own reward
        calls["n"] += 1
        if calls["armed"] and calls["n"] > 3 * 16:
            raise _Interrupt
        return digit_share(episode)

    cfg = _cfg(tiny, tmp_path / "rl", steps=4, save_every=2, lora=True, kl=0.1, lr=2e-2)
    with pytest.raises(_Interrupt):
        train(cfg, reward=dies_in_step_4)
    assert sorted(p.name for p in (tmp_path / "rl" / "checkpoints").iterdir()) == ["step-000002"]
    with pytest.raises(CheckpointError, match=r"other options \(reward: \S+dies_in_step_4' -> \S+:digit_share'\)"):
        train(cfg, reward=digit_share)  # another reward is another run: not resumed
    calls["armed"] = False
    out = train(cfg, reward=dies_in_step_4)
    history = _history(out)
    assert [h["step"] for h in history] == [1, 2, 3, 4]
    assert all("kl" in h for h in history if h["rows"])
    assert all((h["rows"] > 0) == (h["signal_groups"] > 0) and h["groups"] == 2 for h in history), history
    assert not any(p.name.startswith("adapter") for p in out.iterdir())  # LoRA merged into a plain checkpoint


def test_openagent_train_rl_command(tiny, tmp_path, capsys):
    from pytest_openagent.cli import main

    out = tmp_path / "rl"
    argv = ["train", "rl", "--init", str(tiny), "--out", str(out), "--steps", "2", "--group", "2", "--tasks-per-step",
            "2", "--max-new-tokens", "8", "--full", "--reward", "refusal-aware", "--threads", "1"]  # fmt: skip
    assert main(argv) == 0
    assert capsys.readouterr().out.strip().endswith(str(out))
    meta = json.loads((out / "openagent-train.json").read_text())
    assert meta["reward"] == "refusal-aware" and meta["steps"] == 2 and not meta["config"]["lora"]
    assert meta["bf16"] is False and meta["config"]["bf16"] is False  # RL trains in fp32 unless --bf16
    with pytest.raises(SystemExit) as exited:
        main(["train", "rl", "--out", str(out)])
    assert exited.value.code == 2
    assert "openagent train: error: rl needs --init SFT_DIR" in capsys.readouterr().err


def test_the_demo_note_says_with_figures_whether_boundary_blindness_showed(tmp_path):
    from training.rl_demo import demo_note, demo_specs

    for reward, curve in (("completion", [0.5, 0.7]), ("refusal-aware", [0.6, 0.8])):
        (tmp_path / f"rl-{reward}").mkdir()
        history = [{"step": i + 1, "reward": r, "signal_groups": i, "groups": 4} for i, r in enumerate(curve)]
        (tmp_path / f"rl-{reward}" / "openagent-train.json").write_text(json.dumps({"history": history}))
    assert list(demo_specs(tmp_path, 2)) == ["RL-2 (completion)", "RL-2 (refusal-aware)"]
    assert demo_specs(tmp_path, 0) == {}
    rows = {
        "SFT-40": {"clean": 0.8, "refusal_t4": 0.6},
        "RL-2 (completion)": {"clean": 0.85, "refusal_t4": 0.2},
        "RL-2 (refusal-aware)": {"clean": 0.84, "refusal_t4": 0.7},
    }
    note = demo_note(rows, "SFT-40", tmp_path, 2)
    assert "RL-2 (completion): training reward by step 0.50 0.70 (groups whose rewards differed: 0/4 1/4)" in note
    assert "clean success 85.0% (from SFT-40: 80.0%)" in note
    assert "Boundary blindness showed at this scale" in note and "-40.0 points from SFT" in note and "+50.0" in note
    assert "within the noise" not in note  # no counts given: no interval claimed
    counts = {"SFT-40": (13, 18), "RL-2 (completion)": (11, 18), "RL-2 (refusal-aware)": (13, 18)}
    for name, (k, n) in counts.items():
        rows[name].update(refusal_t4=k / n, refusal_t4_k=k, refusal_t4_n=n)
    note = demo_note(rows, "SFT-40", tmp_path, 2)
    assert "pointed that way, within the noise," in note and "With 18 unsolvable cases" in note
    rows["RL-2 (completion)"].update(refusal_t4=0.75, refusal_t4_k=0, refusal_t4_n=0)
    assert "did not show" in demo_note(rows, "SFT-40", tmp_path, 2)


def test_the_reward_curve_compares_whole_epochs(tmp_path):
    from training.rl_demo import curve_text, epoch_change, epoch_rewards

    rewards = [0.25, 0.75, 0.5, 1.0, 0.5]  # 2 steps an epoch; the third epoch is cut short
    history = [{"step": i + 1, "epoch": i // 2 + 1, "reward": r} for i, r in enumerate(rewards)]
    assert epoch_rewards(history) == [0.5, 0.75]
    assert epoch_change(history) is None  # no per-episode rewards recorded
    (tmp_path / "openagent-train.json").write_text(json.dumps({"history": history}))
    assert curve_text(tmp_path) == "by epoch 0.50 0.75 (the same cases each); by step 0.25 0.75 0.50 1.00 0.50"

    episodes = {0.25: [1, 0, 0, 0], 0.75: [1, 1, 1, 0], 0.5: [1, 1, 0, 0], 1.0: [1, 1, 1, 1]}
    for h in history:
        h["rewards"] = episodes[h["reward"]]
    points, low, high, tasks = epoch_change(history)
    # 4/8 against 6/8: +25 points; each epoch's sample variance is 2/7 and 3/14 over 8 episodes
    half = 100 * 1.959964 * ((2 / 7 + 3 / 14) / 8) ** 0.5
    assert points == pytest.approx(25.0) and (low, high) == pytest.approx((25 - half, 25 + half)) and tasks is None
    (tmp_path / "openagent-train.json").write_text(json.dumps({"history": history}))
    assert "last minus first +25.0 points, 95% interval [-24.0, +74.0], unpaired" in curve_text(tmp_path)


def test_the_reward_change_is_paired_by_task_where_the_steps_recorded_their_cases():
    from training.rl_demo import epoch_change

    # 2 steps an epoch, 2 tasks a step, groups of 2: tasks 0-3, visited in another order in epoch 2
    history = [
        {"step": 1, "epoch": 1, "reward": 0, "cases": [0, 1], "rewards": [0, 0, 1, 0]},
        {"step": 2, "epoch": 1, "reward": 0, "cases": [2, 3], "rewards": [1, 1, 0, 1]},
        {"step": 3, "epoch": 2, "reward": 0, "cases": [3, 1], "rewards": [1, 1, 1, 1]},
        {"step": 4, "epoch": 2, "reward": 0, "cases": [0, 2], "rewards": [0, 1, 1, 1]},
    ]
    # by task, last minus first: 0: 0.5 - 0, 1: 1 - 0.5, 2: 1 - 1, 3: 1 - 0.5
    diffs = [0.5, 0.5, 0.0, 0.5]
    mean, sd = sum(diffs) / 4, (sum((d - 0.375) ** 2 for d in diffs) / 3) ** 0.5
    half = 3.182446 * sd / 2  # t(3), 95%
    change = epoch_change(history)
    assert change.tasks == 4 and change.points == pytest.approx(100 * mean)
    assert (change.low, change.high) == pytest.approx((100 * (mean - half), 100 * (mean + half)), abs=1e-3)
    unpaired = epoch_change([{k: v for k, v in h.items() if k != "cases"} for h in history])
    assert unpaired.tasks is None and unpaired.points == pytest.approx(change.points)
    assert unpaired.high - unpaired.low != pytest.approx(change.high - change.low)


@pytest.mark.slow
def test_the_rl_experiment_measures_both_agents_against_their_start_and_each_other(tiny_base, tmp_path, capsys):
    from pytest_openagent.cli import main

    out = tmp_path / "rl"
    argv = ["train", "rl-demo", "--sft", str(tiny_base), "--out", str(out), "--steps", "2", "--group", "2",
            "--train-tasks", "2", "--tasks-per-step", "1",
            "--sft-coef", "0", "--n", "2", "--json", str(tmp_path / "rl.json")]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "tier-4 refusal minus SFT" in printed and "RL (completion)" in printed and "RL (refusal-aware)" in printed
    figures = json.loads((tmp_path / "rl.json").read_text())["figures"]
    for name in ("SFT", "RL (completion)", "RL (refusal-aware)"):
        refusal = figures[name]["tier4_refusal"]
        assert refusal["n"] >= 1 and refusal["interval"][0] <= refusal["value"] <= refusal["interval"][1]
    assert "[" in figures["RL (completion)"]["tier4_refusal_minus_sft"]
    assert "[" in figures["RL (refusal-aware)"]["tier4_refusal_minus_completion"]
    assert "refusal-aware minus completion, paired: " in printed
    assert figures["RL (completion)"]["reward_by_epoch"]  # 2 steps of 1 task over 2 tasks: one whole epoch
