"""The model agent on a tiny random model: batching and the cross-turn cache change no output."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from sandbox.agent import Turn  # noqa: E402

TOOLS = [
    {"type": "function", "function": {
        "name": "search_places", "description": "Find places in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
]  # fmt: skip
QUERIES = [
    "Find a cafe in Lyon",
    "Book a table for two in Paris tonight, please",
    "hi",
    "What is the phone number?",
]


_loaded: dict = {}


def agent(tiny, **kwargs):
    """An agent on the tiny model; the weights are loaded once and shared (agents never change them)."""
    from training.inference.model_agent import HFAgent

    kwargs.setdefault("max_new_tokens", 10)
    if tiny not in _loaded:
        first = HFAgent(tiny, dtype="fp32")
        _loaded[tiny] = (first.model, first.tokenizer)
    model, tokenizer = _loaded[tiny]
    return HFAgent(model=model, tokenizer=tokenizer, name=f"hf:{tiny}", **kwargs)


def first_turns(prefix: str = "e") -> list[Turn]:
    return [Turn(f"{prefix}{i}", [{"role": "user", "content": q}], TOOLS) for i, q in enumerate(QUERIES)]


def next_turns(turns: list[Turn], replies) -> list[Turn]:
    """Each conversation one call and one tool result further (the second turn has a long prefix)."""
    out = []
    for turn, reply in zip(turns, replies, strict=True):
        call = {"type": "function", "function": {"name": "search_places", "arguments": {"city": "Lyon"}}}
        messages = [
            *turn.messages,
            {"role": "assistant", "content": reply.text, "tool_calls": [call]},
            {"role": "tool", "name": "search_places", "content": json.dumps({"results": ["P1"]})},
        ]
        out.append(Turn(turn.episode_id, messages, TOOLS))
    return out


def completions(replies) -> list[list[int]]:
    return [r.meta["completion_ids"] for r in replies]


def test_greedy_replies_match_transformers_generate(tiny):
    a = agent(tiny)
    replies = a.act(first_turns())
    for turn, reply in zip(first_turns(), replies, strict=True):
        ids = torch.tensor([a.render(turn)])
        out = a.model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=10, do_sample=False)
        assert out[0, ids.shape[1] :].tolist() == reply.meta["completion_ids"]
    assert len({tuple(c) for c in completions(replies)}) > 1, "the tiny model should not ignore its prompt"


def test_a_batch_gives_what_one_by_one_gives_over_several_turns(tiny):
    together = agent(tiny)
    alone = agent(tiny, cache_across_turns=False, share_prefixes=False)
    turns = first_turns()
    for _ in range(3):
        batch = together.act(turns)
        single = [alone.act([t])[0] for t in turns]
        assert completions(batch) == completions(single)
        for b, s in zip(batch, single, strict=True):
            assert b.text == s.text
            assert b.meta["logprobs"] == pytest.approx(s.meta["logprobs"], abs=1e-4)
        turns = next_turns(turns, batch)


def test_the_thread_count_generation_runs_on_changes_no_reply(tiny, monkeypatch):
    from training.inference import threads

    monkeypatch.setattr(threads, "RETRY_S", 0.0)  # a trial after every step: two threads and one, alternately
    trying, single = agent(tiny), agent(tiny)
    trying.generator.threads = threads.ThreadTuner(2)
    single.generator.threads = threads.ThreadTuner(1)
    turns = first_turns()
    for _ in range(3):
        replies = trying.act(turns)
        assert completions(replies) == completions(single.act(turns))
        turns = next_turns(turns, replies)
    assert trying.generator.threads.trials > 3


def test_the_cross_turn_cache_prefills_only_the_new_tokens(tiny):
    a = agent(tiny)
    turns = first_turns()
    replies = a.act(turns)
    # On the first turn, rows after the first reuse the shared system prompt and tool specs.
    assert all(r.meta["reused"] > 0 for r in replies[1:])
    second = a.act(next_turns(turns, replies))
    for first, r in zip(replies, second, strict=True):
        before, total = len(first.meta["prompt_ids"]), len(r.meta["prompt_ids"])
        assert r.meta["reused"] + r.meta["prefilled"] == total
        # All of the last turn's prompt is reused (but a token or two that BPE merges across the seam).
        assert r.meta["reused"] >= before - 2, (r.meta["reused"], before)
    assert a.stats["turns"] == 8 and a.stats["generated"] == sum(len(c) for c in completions([*replies, *second]))


def test_episodes_that_come_one_at_a_time_reuse_the_shared_system_prompt(tiny):
    shared, plain = agent(tiny), agent(tiny, share_prefixes=False)
    for n, turn in enumerate(first_turns()):
        reply = shared.act([turn])[0]
        assert reply.meta["completion_ids"] == plain.act([turn])[0].meta["completion_ids"]
        assert (reply.meta["reused"] > 0) == (n > 0)
    shared.reset()
    assert shared.act(first_turns()[:1])[0].meta["reused"] == 0


def full_kv(state, layer: int, part: int):
    """One layer's keys (part 0) or values (part 1) of all a state's tokens, shared or not."""
    return torch.cat([chunk[part] for chunk in state.pieces(0, len(state.tokens))[layer]], dim=1)


@pytest.mark.parametrize(
    ("share_prefixes", "packed_tokens"),
    [(True, 8192), (False, 8192), (True, 40)],
    ids=["shared-prefix", "no-shared-prefix", "several-passes"],
)
def test_packed_prefill_gives_what_row_by_row_prefill_gives(tiny, monkeypatch, share_prefixes, packed_tokens):
    from training.inference import generation

    monkeypatch.setattr(generation, "PACKED_TOKENS", packed_tokens)
    packed, rows = agent(tiny, share_prefixes=share_prefixes), agent(tiny, share_prefixes=share_prefixes)
    rows.generator.batched_prefill = False
    calls = []
    prefill = packed.generator._prefill_packed
    packed.generator._prefill_packed = lambda *args: calls.append(1) or prefill(*args)
    turns = first_turns()
    for _ in range(3):
        a, b = packed.act(turns), rows.act(turns)
        assert completions(a) == completions(b)
        for x, y in zip(a, b, strict=True):
            assert x.meta["logprobs"] == pytest.approx(y.meta["logprobs"], abs=1e-4)
            assert x.meta["reused"] + x.meta["prefilled"] == len(x.meta["prompt_ids"])
        for e in packed._states:
            mine, theirs = packed._states[e], rows._states[e]
            assert mine.tokens == theirs.tokens
            for layer in range(len(mine.kv)):
                for part in (0, 1):  # keys, values
                    assert torch.allclose(full_kv(mine, layer, part), full_kv(theirs, layer, part), atol=1e-4)
        turns = next_turns(turns, a)
    assert len(calls) == 3


def test_a_batch_prefills_its_shared_prefix_once_and_keeps_it_once(tiny):
    from training.inference.generation import common_prefix

    a = agent(tiny)
    replies = a.act(first_turns())
    prompts = [r.meta["prompt_ids"] for r in replies]
    common = min(common_prefix(prompts[0], p) for p in prompts)
    assert common >= 64, "the tiny template's system prompt and tools should be a long shared prefix"
    assert replies[0].meta["reused"] == 0 and all(r.meta["reused"] >= common for r in replies[1:])
    states = list(a._states.values())
    assert all(s.shared_len == common for s in states)
    assert len({id(s.shared[0][0]) for s in states}) == 1, "one copy of the prefix for every episode"
    assert all(s.kv[0][0].shape[1] == len(s.tokens) - common for s in states), "the episodes' own tokens only"


def test_each_row_stops_at_its_own_end_of_turn(tiny):
    a = agent(tiny, max_new_tokens=12)
    free = completions(a.act(first_turns("free")))
    # Pretend two tokens that rows emit at different steps end the turn.
    stops = {free[0][2], free[2][6]}
    a.generator.eos = stops
    alone = agent(tiny, max_new_tokens=12, cache_across_turns=False, share_prefixes=False)
    alone.generator.eos = stops
    batch = a.act(first_turns("stop"))
    for row, reply in zip(free, batch, strict=True):
        cut = next((k + 1 for k, t in enumerate(row) if t in stops), len(row))
        assert reply.meta["completion_ids"] == row[:cut]
        assert reply.meta["finish_reason"] == ("stop" if cut < len(row) or row[-1] in stops else "length")
    assert completions(batch) == [alone.act([t])[0].meta["completion_ids"] for t in first_turns("stop")]
    # The end-of-turn token is in the ids for RL, not in the text for the parser.
    stopped = batch[0]
    assert stopped.meta["finish_reason"] == "stop"
    assert stopped.text == a.tokenizer.decode(stopped.meta["completion_ids"][:-1])


def test_log_probs_are_those_of_a_plain_forward_pass(tiny):
    a = agent(tiny)
    reply = a.act(first_turns()[:1])[0]
    prompt, completion = reply.meta["prompt_ids"], reply.meta["completion_ids"]
    ids = torch.tensor([prompt + completion])
    with torch.no_grad():
        logprobs = torch.log_softmax(a.model(ids).logits[0].float(), dim=-1)
    expected = [logprobs[len(prompt) - 1 + k, t].item() for k, t in enumerate(completion)]
    assert reply.meta["logprobs"] == pytest.approx(expected, abs=1e-4)


def test_sampling_is_seeded_per_episode_and_independent_of_the_batch(tiny):
    def run(seed, turns):
        return completions(agent(tiny, temperature=1.0, seed=seed).act(turns))

    turns = first_turns()
    batch = run(7, turns)
    assert batch == run(7, turns)
    assert batch != run(8, turns)
    assert [run(7, [t])[0] for t in turns] == batch
    top = agent(tiny, temperature=0.7, top_k=5, top_p=0.9, seed=1).act(turns)
    assert all(len(r.meta["logprobs"]) == len(r.meta["completion_ids"]) for r in top)


def test_close_frees_an_episodes_cache(tiny):
    a = agent(tiny)
    turns = first_turns()
    a.act(turns)
    assert a.cache_bytes() > 0
    full = a.cache_bytes()
    a.close([t.episode_id for t in turns[:2]])
    assert 0 < a.cache_bytes() < full
    a.close([t.episode_id for t in turns[2:]] + ["never-seen"])
    assert a.cache_bytes() == 0


def test_the_fingerprint_names_the_weights_and_the_decoding(tiny):
    from training.inference.model_agent import HFAgent

    greedy, sampled = HFAgent(tiny), HFAgent(tiny, temperature=0.5, seed=3)
    assert greedy.fingerprint() == HFAgent(tiny).fingerprint()
    assert greedy.fingerprint() != sampled.fingerprint()
    assert "greedy" in greedy.fingerprint() and "seed=3" in sampled.fingerprint()


def test_sandbox_episodes_run_end_to_end_and_batching_changes_no_outcome(tiny):
    import sandbox

    tasks = sandbox.tasks("poi", "test", 4, 0)
    a = agent(tiny, max_new_tokens=16)
    batch = sandbox.run_episodes(a, [sandbox.make_env("poi", t) for t in tasks], max_steps=2)
    assert a.cache_bytes() == 0, "finished episodes free their caches"
    single = [
        sandbox.run_episodes(agent(tiny, max_new_tokens=16), [sandbox.make_env("poi", t)], max_steps=2)[0]
        for t in tasks
    ]
    for b, s in zip(batch, single, strict=True):
        assert b.outcome in sandbox.OUTCOMES and b.outcome != "agent_error", b.steps
        assert (b.outcome, [st.reply for st in b.steps]) == (s.outcome, [st.reply for st in s.steps])
        assert b.meta and all("completion_ids" in m and "logprobs" in m for m in b.meta)


@pytest.mark.parametrize("cpu_kernel", [True, False], ids=["sdpa-cpu-kernel", "matmuls"])
def test_shared_prefix_attention_equals_attention_over_the_whole_sequence(monkeypatch, cpu_kernel):
    from types import SimpleNamespace

    from training.inference import prefix_attention

    monkeypatch.setattr(prefix_attention, "CPU_KERNEL", cpu_kernel)
    torch.manual_seed(0)
    batch, heads, kv_heads, dim, shared, own = 3, 6, 2, 16, 20, 7
    query = torch.randn(batch, heads, 1, dim)
    pk, pv = torch.randn(kv_heads, shared, dim), torch.randn(kv_heads, shared, dim)
    key, value = torch.randn(batch, kv_heads, own, dim), torch.randn(batch, kv_heads, own, dim)
    allowed = torch.ones(batch, 1, 1, own, dtype=torch.bool)
    allowed[0, ..., :3] = False  # left padding of row 0
    token = prefix_attention._context.set(prefix_attention._Context([(pk, pv)]))
    try:
        out, _ = prefix_attention._attention(SimpleNamespace(layer_idx=0), query, key, value, allowed)
    finally:
        prefix_attention._context.reset(token)
    full_k = torch.cat([pk.expand(batch, -1, -1, -1), key], dim=2).repeat_interleave(heads // kv_heads, dim=1)
    full_v = torch.cat([pv.expand(batch, -1, -1, -1), value], dim=2).repeat_interleave(heads // kv_heads, dim=1)
    full_mask = torch.cat([torch.ones(batch, 1, 1, shared, dtype=torch.bool), allowed], dim=-1)
    expected = torch.nn.functional.scaled_dot_product_attention(query, full_k, full_v, attn_mask=full_mask)
    assert torch.allclose(out, expected.transpose(1, 2), atol=1e-5)


@pytest.mark.parametrize("cpu_kernel", [True, False], ids=["sdpa-cpu-kernel", "matmuls"])
def test_packed_prefill_attention_equals_attention_row_by_row(monkeypatch, cpu_kernel):
    from types import SimpleNamespace

    from training.inference import prefix_attention

    monkeypatch.setattr(prefix_attention, "CPU_KERNEL", cpu_kernel)
    torch.manual_seed(0)
    heads, kv_heads, dim, shared, width = 6, 2, 16, 20, 9
    rep = heads // kv_heads
    # Row 0: 4 earlier tokens and 5 new ones; row 1: 2 columns of padding, 7 new tokens.
    segments = [prefix_attention.Segment(0, 0, 5, 0, width), prefix_attention.Segment(1, 5, 7, 2, width)]
    for s in segments:
        own = s.end - s.start
        masked = torch.ones(s.count, own, dtype=torch.bool).triu(own - s.count + 1)
        s.mask = torch.zeros(s.count, own).masked_fill(masked, float("-inf")).repeat(rep, 1)
    query = torch.randn(1, heads, 12, dim)
    key, value = torch.randn(2, kv_heads, width + 3, dim), torch.randn(2, kv_heads, width + 3, dim)
    pk, pv = torch.randn(kv_heads, shared, dim), torch.randn(kv_heads, shared, dim)
    token = prefix_attention._context.set(prefix_attention._Context([(pk, pv)], segments))
    try:
        out, _ = prefix_attention._attention(SimpleNamespace(layer_idx=0), query, key, value, None)
    finally:
        prefix_attention._context.reset(token)
    for s in segments:
        q = query[:, :, s.first : s.first + s.count]
        k = torch.cat([pk, key[s.row, :, s.start : s.end]], dim=1).repeat_interleave(rep, dim=0).unsqueeze(0)
        v = torch.cat([pv, value[s.row, :, s.start : s.end]], dim=1).repeat_interleave(rep, dim=0).unsqueeze(0)
        own = s.end - s.start
        allowed = torch.ones(s.count, shared + own, dtype=torch.bool).tril(shared + own - s.count)
        expected = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
        assert torch.allclose(out[:, s.first : s.first + s.count], expected.transpose(1, 2), atol=1e-5)
