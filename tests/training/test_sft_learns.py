"""The real base learns: a short LoRA fine-tune on one simple family, then success on held-out entities.

Slow (a few minutes on 2 CPU cores): the episodes show only the one tool the family needs, so each
is about 300 tokens instead of 1,450, and the test cities are the test split's, never trained on.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("peft")

from sandbox import OracleAgent, run_episodes, tasks
from sandbox.domains import make_env
from sandbox.env import Wrapper

FAMILY, TOOL = "weather", "get_weather"


class OnlyTool(Wrapper):
    label = f"only {TOOL}"

    def tool_specs(self):
        return [s for s in self.env.tool_specs() if s["function"]["name"] == TOOL]


def _envs(split: str, n: int) -> list:
    chosen = [t for t in tasks("poi", split, 400, seed=0) if t.family == FAMILY][:n]
    return [OnlyTool(make_env("poi", t)) for t in chosen]


@pytest.mark.slow
def test_a_short_fine_tune_succeeds_on_held_out_entities(tmp_path):
    from transformers import AutoTokenizer

    from training.config import SFTConfig
    from training.dataset import Trajectory, encode_all
    from training.inference.base import prepare_default_base
    from training.inference.model_agent import HFAgent
    from training.sft import train

    base = prepare_default_base()
    train_envs = _envs("train", 24)
    gold = run_episodes(OracleAgent(), train_envs)
    assert all(e.success for e in gold)
    cfg = SFTConfig(
        out=str(tmp_path / "sft"), base=str(base), steps=6, batch_size=4, lr=2e-3, warmup=1, save_every=0,
        progress=False,
    )  # fmt: skip
    tokenizer = AutoTokenizer.from_pretrained(base)
    trajectories = [
        Trajectory(e.messages, env.tool_specs(), FAMILY, ()) for e, env in zip(gold, train_envs, strict=True)
    ]
    out = train(cfg, encode_all(tokenizer, trajectories, 1024), {"family": FAMILY})

    test_envs = _envs("test", 8)
    assert not {e.task.params["city"] for e in test_envs} & {e.task.params["city"] for e in train_envs}
    untrained = run_episodes(HFAgent(base, max_new_tokens=64), _envs("test", 8))
    trained = run_episodes(HFAgent(out, max_new_tokens=64), test_envs)
    successes = sum(e.success for e in trained)
    assert successes >= 6, [e.explain() for e in trained if not e.success][:2]
    assert successes > sum(e.success for e in untrained)
