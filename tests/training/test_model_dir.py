"""hf:PATH checks: every unusable directory gets an error that says what is wrong and what to do."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from training.inference.model_dir import CheckpointError


@pytest.fixture
def copy(tiny, tmp_path):
    target = tmp_path / "ckpt"
    shutil.copytree(tiny, target)
    return target


def load(path, **kwargs):
    from training.inference.model_agent import load_agent

    return load_agent(str(path), **kwargs)


def test_a_good_directory_loads(tiny):
    agent = load(tiny)
    assert agent.fingerprint().startswith(f"hf:{tiny}|")


def test_a_missing_directory(tmp_path):
    with pytest.raises(CheckpointError, match=r"no such directory.*hf:default"):
        load(tmp_path / "nope")


def test_a_file_instead_of_a_directory(tmp_path):
    (tmp_path / "model.bin").write_text("x")
    with pytest.raises(CheckpointError, match="is a file, expected a checkpoint directory"):
        load(tmp_path / "model.bin")


def test_no_config(copy):
    (copy / "config.json").unlink()
    with pytest.raises(CheckpointError, match=r"no config.json.*save_pretrained"):
        load(copy)


def test_a_config_that_is_not_json(copy):
    (copy / "config.json").write_text("{not json")
    with pytest.raises(CheckpointError, match=r"config.json is not valid JSON"):
        load(copy)


def test_a_config_that_asks_for_remote_code(copy):
    config = json.loads((copy / "config.json").read_text())
    config["auto_map"] = {"AutoModelForCausalLM": "modeling_evil.EvilForCausalLM"}
    (copy / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match=r"needs its own Python code.*trust_remote_code=True"):
        load(copy)


def test_pickle_weights_only(copy):
    (copy / "model.safetensors").rename(copy / "pytorch_model.bin")
    with pytest.raises(CheckpointError, match=r"no \*.safetensors.*pytorch_model.bin.*only safetensors"):
        load(copy)


def test_no_tokenizer(copy):
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (copy / name).unlink()
    with pytest.raises(CheckpointError, match=r"no tokenizer files.*tokenizer.save_pretrained"):
        load(copy)


def test_no_chat_template(copy):
    (copy / "chat_template.jinja").unlink()
    config = json.loads((copy / "tokenizer_config.json").read_text())
    config.pop("chat_template", None)
    (copy / "tokenizer_config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match=r"no chat template.*HERMES_TOOL_TEMPLATE"):
        load(copy)


def test_corrupt_weights(copy):
    (copy / "model.safetensors").write_bytes(b"\x00" * 64)
    with pytest.raises(CheckpointError, match="cannot load the model"):
        load(copy)


def test_the_template_renders_tools_calls_and_results_in_the_hermes_convention():
    from transformers.utils.chat_template_utils import render_jinja_template

    from training.inference.chat_template import HERMES_TOOL_TEMPLATE

    nested = {"type": "object", "properties": {"q": {"type": "string"}}}
    parameters = {
        "type": "object",
        "properties": {
            "q": {"type": "string", "description": "what to find"},
            "limit": {"type": "integer", "description": "at most"},
            "day": {"type": "string", "description": "weekday", "enum": ["mon", "tue"]},
            "filters": nested,
        },
        "required": ["q"],
    }
    tools = [{"type": "function", "function": {"name": "search", "description": "Find", "parameters": parameters}}]
    calls = [
        {"type": "function", "function": {"name": "search", "arguments": {"q": "pizza"}}},
        {"type": "function", "function": {"name": "search", "arguments": '{"q": "tea"}'}},
    ]
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Find pizza"},
        {"role": "assistant", "content": "", "tool_calls": calls},
        {"role": "tool", "name": "search", "content": '{"ids": ["P1"]}'},
        {"role": "tool", "name": "search", "content": {"ids": []}},
    ]
    (text,), _ = render_jinja_template(
        [messages],
        tools=tools,
        chat_template=HERMES_TOOL_TEMPLATE,
        add_generation_prompt=True,
        return_assistant_tokens_mask=True,
    )
    assert text.startswith("<|im_start|>system\nBe brief.\n\n# Tools\n")
    # one compact line per tool; nested parameters keep their JSON schema
    line = (
        "search(q: what to find, limit?: at most (integer), day?: weekday, one of mon|tue, "
        'filters?: {"type": "object", "properties": {"q": {"type": "string"}}}) - Find'
    )
    assert f"\n<tools>\n{line}\n</tools>" in text
    assert (
        '<|im_start|>assistant\n<tool_call>\n{"name": "search", "arguments": {"q": "pizza"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "search", "arguments": {"q": "tea"}}\n</tool_call><|im_end|>\n'
    ) in text
    assert (
        '<|im_start|>user\n<tool_response>\n{"ids": ["P1"]}\n</tool_response>\n<tool_response>\n{"ids": []}\n'
        "</tool_response><|im_end|>\n<|im_start|>assistant\n"
    ) in text
    (plain,), _ = render_jinja_template([messages[1:2]], chat_template=HERMES_TOOL_TEMPLATE, add_generation_prompt=True)
    assert plain.startswith("<|im_start|>system\nYou are a helpful AI assistant named SmolLM")


def test_importing_training_loads_no_torch():
    modules = "training, training.inference.model_agent, training.inference.base, training.cli"
    code = f"import sys, {modules}; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
