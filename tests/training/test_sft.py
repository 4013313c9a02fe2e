"""SFT plumbing on a tiny random model: the loss falls, exact shared-prefix gradients, checkpoints, resume."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

from training.config import SFTConfig  # noqa: E402


@pytest.fixture(scope="module")
def base(tiny_base):
    return tiny_base


@pytest.fixture(scope="module")
def tokenizer(base):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(base)


@pytest.fixture(scope="module")
def examples(tokenizer):
    from training.dataset import build_examples

    examples, _ = build_examples(SFTConfig(episodes=24), tokenizer)
    return examples


def _cfg(base, out, **kw) -> SFTConfig:
    defaults = dict(
        out=str(out), base=str(base), episodes=24, steps=12, batch_size=4, lr=3e-3, warmup=2, lora=False,
        progress=False, threads=1, save_every=0,
    )  # fmt: skip
    return SFTConfig(**{**defaults, **kw})


def test_labels_cover_only_the_assistant_turns(tokenizer, examples):
    ex = examples[0]
    text = tokenizer.decode([t for t, m in zip(ex.ids, ex.labels, strict=True) if m])
    assert "<tool_call>" in text and "<|im_end|>" in text
    assert "<tools>" not in text and "<tool_response>" not in text and "You complete" not in text


@pytest.fixture(scope="module")
def perturbed_example(tokenizer, examples):
    """A training example whose tool specs differ from the clean ones (a PAFT row)."""
    from training.dataset import build_examples

    mixed, _ = build_examples(SFTConfig(episodes=24, alpha=1.0, families=["symbolic"]), tokenizer)
    return next(e for e in mixed if e.perturbations)


@pytest.mark.parametrize("with_perturbed", [False, True], ids=["clean", "with-perturbed"])
def test_packed_batches_give_the_loss_and_gradients_of_plain_rows(
    base, tokenizer, examples, perturbed_example, with_perturbed
):
    """Each group's prefix run once and the suffixes packed (with or without prefixes) compute what a
    plain forward pass of each whole row does, up to float rounding."""
    import torch.nn.functional as F

    from training.batches import collate
    from training.loop import load_model
    from training.sft import batch_loss

    model, _ = load_model(_cfg(base, "unused"), base)
    rows = [e for e in examples if e.family != examples[0].family][:2] + examples[:1]  # mixed lengths
    if with_perturbed:
        rows.insert(1, perturbed_example)

    def plain_rows():
        total, n = 0, 0
        for r in rows:
            logits = model(input_ids=torch.tensor([r.ids])).logits[0, :-1]
            keep = torch.tensor(r.labels[1:])
            total = total + F.cross_entropy(logits[keep], torch.tensor(r.ids[1:])[keep], reduction="sum")
            n += int(keep.sum())
        return total / n

    def packed(share):
        batch = collate(rows, share)
        prefixes = sorted(g.prefix.shape[1] for g in batch.groups)
        if not share:
            assert prefixes == [0]
        elif with_perturbed:  # the perturbed row runs apart, so the clean rows still share their whole opening
            assert len(prefixes) == 2 and prefixes[-1] > 500
        else:
            assert len(prefixes) == 1 and prefixes[0] > 500
        # No padding: each token is run once, a group's prefix once for all its rows.
        computed = sum(g.prefix.shape[1] + g.input_ids.shape[1] for g in batch.groups)
        shared = sum((len(g.counts) - 1) * g.prefix.shape[1] for g in batch.groups)
        assert computed == sum(len(r) for r in rows) - shared
        return batch_loss(model, batch)

    results = []
    for compute in (plain_rows, lambda: packed(True), lambda: packed(False)):
        model.zero_grad()
        loss = compute()
        loss.backward()
        results.append((loss.item(), torch.cat([p.grad.flatten() for p in model.parameters()])))
    (l0, g0), *others = results
    for loss, grad in others:
        assert loss == pytest.approx(l0, rel=1e-5)
        assert torch.allclose(grad, g0, atol=1e-4 * g0.abs().max().item(), rtol=1e-4)


def test_batches_mix_task_families(examples):
    from training.batches import plan_batches

    plan = plan_batches(examples, 4, 6, seed=0)
    assert sum(len({examples[i].family for i in b}) > 1 for b in plan) >= 5
    assert plan == plan_batches(examples, 4, 6, seed=0)


def _greedy(model_dir, tokenizer, examples, n_new=12):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    prompt = torch.tensor([examples[0].ids[: examples[0].first_label]])
    with torch.no_grad():
        out = model.generate(prompt, max_new_tokens=n_new, do_sample=False, pad_token_id=tokenizer.pad_token_id)
    return out[0, prompt.shape[1] :].tolist()


@pytest.mark.parametrize("lora", [False, True], ids=["full", "lora"])
def test_loss_falls_and_the_checkpoint_reloads_with_the_same_greedy_outputs(base, tokenizer, examples, tmp_path, lora):
    from training.runs import META_FILE
    from training.sft import train

    lr = 1e-2 if lora else 3e-3
    out = train(_cfg(base, tmp_path / "run", lora=lora, lr=lr, steps=15, export_at=[5]), examples, {"test": True})
    meta = json.loads((out / META_FILE).read_text())
    losses = [h["loss"] for h in meta["history"]]
    assert len(losses) == 15
    assert sum(losses[-3:]) / 3 < 0.8 * sum(losses[:3]) / 3, losses
    assert meta["steps"] == 15 and meta["seed"] == 0 and meta["kind"] == "sft" and meta["data"] == {"test": True}
    assert (out / "step-5" / META_FILE).is_file() and not (out / "checkpoints").exists()
    first = _greedy(out, tokenizer, examples)
    assert first == _greedy(out, tokenizer, examples)
    # The saved model is what was trained: reloading gives the in-memory model's own greedy tokens.
    from transformers import AutoModelForCausalLM

    assert not (out / "adapter_config.json").exists()  # LoRA is merged: a plain directory
    assert AutoModelForCausalLM.from_pretrained(out).config.model_type == "llama"


def test_resume_after_interruption_matches_an_uninterrupted_run(base, examples, tmp_path):
    from training import runs, sft

    straight = sft.train(_cfg(base, tmp_path / "straight", steps=8), examples)

    class Killed(Exception):
        pass

    original = runs.save_checkpoint

    def save_then_die(out, step, *args):
        path = original(out, step, *args)
        if step == 4:
            raise Killed  # as if the process were killed right after the step-4 checkpoint
        return path

    runs.save_checkpoint = save_then_die
    try:
        with pytest.raises(Killed):
            sft.train(_cfg(base, tmp_path / "resumed", steps=8, save_every=2), examples)
    finally:
        runs.save_checkpoint = original
    assert runs.latest_checkpoint(tmp_path / "resumed").name == "step-000004"
    from training.inference.model_dir import CheckpointError

    with pytest.raises(CheckpointError, match=r"lr: 0\.003 -> 0\.001.*--no-resume"):  # other options: not resumed
        sft.train(_cfg(base, tmp_path / "resumed", steps=8, save_every=2, lr=1e-3), examples)
    resumed = sft.train(_cfg(base, tmp_path / "resumed", steps=8, save_every=2), examples)

    def losses(d):
        return [h["loss"] for h in json.loads((d / runs.META_FILE).read_text())["history"]]

    assert len(losses(resumed)) == 8
    assert losses(resumed) == pytest.approx(losses(straight), rel=1e-4)
    from safetensors.torch import load_file

    a, b = load_file(straight / "model.safetensors"), load_file(resumed / "model.safetensors")
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)


def test_training_ids_extend_the_prompts_the_agent_sees(tokenizer):
    """Each assistant turn's inference prompt (as ``HFAgent.render`` builds it) is a prefix of the
    training ids, and the loss starts exactly where generation starts."""
    from sandbox import tasks
    from training.dataset import encode, gold_trajectories, paft_cases, train_perturbations

    cases = paft_cases(tasks("poi", "train", 30, seed=3), 0.5, train_perturbations(), seed=3)
    for t in gold_trajectories(cases):
        ids, mask = encode(tokenizer, t.messages, t.tools)
        for k, message in enumerate(t.messages):
            if message["role"] != "assistant":
                continue
            text = tokenizer.apply_chat_template(
                t.messages[:k], tools=t.tools, add_generation_prompt=True, tokenize=False
            )
            prompt = tokenizer(text, add_special_tokens=False)["input_ids"]
            assert ids[: len(prompt)] == prompt
            assert mask[len(prompt)] and not mask[len(prompt) - 1]


def test_lora_on_the_last_layers_adapts_only_those_and_still_learns(base, examples, tmp_path):
    import torch

    from training.batches import collate
    from training.loop import load_model
    from training.sft import batch_loss

    model, _ = load_model(SFTConfig(out=str(tmp_path), lora_layers=1), base)
    layers = model.config.num_hidden_layers
    adapted = {int(n.split(".layers.")[1].split(".")[0]) for n, p in model.named_parameters() if p.requires_grad}
    assert adapted == {layers - 1}
    assert layers > 1  # else the test would not tell the last layer from all

    batch = collate(examples[:2])
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    first = None
    for _ in range(5):
        loss = batch_loss(model, batch)
        first = first if first is not None else loss.item()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    assert loss.item() < first


def test_runs_of_either_precision_follow_each_other_in_one_process():
    from training.loop import new_accelerator

    assert new_accelerator(False).mixed_precision == "no"
    assert new_accelerator(True).mixed_precision == "bf16"
    assert new_accelerator(True).mixed_precision == "bf16"
    assert new_accelerator(False).mixed_precision == "no"
