"""The model directory behind ``hf:PATH``: finding it, checking it, loading its model and tokenizer for inference."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sandbox.errors import UsageError
from training.precision import cpu_computes_bf16

TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "tokenizer_config.json")


class CheckpointError(UsageError):
    """A checkpoint directory that cannot be used (as an agent, a base, or a run to resume), and how to fix it.

    Misuse (a wrong path, a run of other options), so ``openagent`` exits 2 on it; still a ``ValueError``."""


def resolve(path: str | Path) -> Path:
    """``default`` (or ``hf:default``) is the default base, prepared on first use; else a local dir."""
    text = str(path)
    if text.startswith("hf:"):
        text = text[3:]
    if text == "default":
        from training.inference.base import prepare_default_base

        return prepare_default_base()
    return Path(text).expanduser()


def check_dir(path: Path, trust_remote_code: bool = False) -> dict[str, Any]:
    """Raise :class:`CheckpointError` unless ``path`` looks like a loadable checkpoint; return its config."""
    where = f"hf:{path}"
    if not path.exists():
        raise CheckpointError(
            f"{where}: no such directory. Give the path of a Hugging Face checkpoint directory "
            "(config.json, *.safetensors, tokenizer files), or hf:default for the default base."
        )
    if not path.is_dir():
        raise CheckpointError(f"{where}: is a file, expected a checkpoint directory (config.json, *.safetensors).")
    config_file = path / "config.json"
    if not config_file.is_file():
        raise CheckpointError(
            f"{where}: not a Hugging Face checkpoint (no config.json). Save one with "
            "model.save_pretrained(dir) and tokenizer.save_pretrained(dir)."
        )
    try:
        config = json.loads(config_file.read_text())
    except ValueError as err:
        raise CheckpointError(f"{where}: config.json is not valid JSON ({err}).") from None
    if not isinstance(config, dict):
        raise CheckpointError(f"{where}: config.json is not a JSON object; it is not a transformers model config.")
    if "auto_map" in config and not trust_remote_code:
        raise CheckpointError(
            f"{where}: this model needs its own Python code (config.json has auto_map), which is not run by "
            "default. If you trust the code in that directory, pass trust_remote_code=True."
        )
    if "model_type" not in config:
        raise CheckpointError(f"{where}: config.json has no model_type; it is not a transformers model config.")
    if not any(path.glob("*.safetensors")):
        found = sorted(p.name for p in path.glob("*.bin")) + sorted(p.name for p in path.glob("*.pt*"))
        hint = (
            (
                f" It has {', '.join(found[:3])}: only safetensors are loaded (pickle files can run code). "
                "Convert with model.save_pretrained(dir), which writes safetensors."
            )
            if found
            else ""
        )
        raise CheckpointError(f"{where}: no *.safetensors weights.{hint}")
    if not any((path / name).is_file() for name in TOKENIZER_FILES):
        raise CheckpointError(
            f"{where}: no tokenizer files ({', '.join(TOKENIZER_FILES)}). Save the tokenizer next to the "
            "model with tokenizer.save_pretrained(dir)."
        )
    return config


def pick_device(device: str | None = None) -> str:
    if device:
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def pick_dtype(dtype: str, device: str):
    """``auto``: bf16 where the hardware computes in it (CUDA with bf16, a CPU with AVX512-BF16/AMX),
    else fp32: on CPUs without native bf16 it is emulated and slower."""
    import torch

    if dtype != "auto":
        names = {
            "fp32": torch.float32,
            "float32": torch.float32,
            "bf16": torch.bfloat16,
            "bfloat16": torch.bfloat16,
            "fp16": torch.float16,
            "float16": torch.float16,
        }
        if dtype not in names:
            raise UsageError(f"dtype {dtype!r}: expected one of auto, {', '.join(names)}")
        return names[dtype]
    if device.startswith("cuda"):
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if device == "cpu" and cpu_computes_bf16():
        return torch.bfloat16
    return torch.float32


def load(path: str | Path, dtype: str = "auto", device: str | None = None, trust_remote_code: bool = False):
    """Load ``(model, tokenizer, directory)`` from a checked checkpoint directory, in eval mode."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    directory = resolve(path)
    check_dir(directory, trust_remote_code)
    where = f"hf:{directory}"
    try:
        tokenizer = AutoTokenizer.from_pretrained(directory, trust_remote_code=trust_remote_code)
    except Exception as err:  # transformers raises many kinds here; all mean the same to the user
        raise CheckpointError(f"{where}: cannot load the tokenizer ({type(err).__name__}: {err}).") from err
    if not getattr(tokenizer, "chat_template", None):
        raise CheckpointError(
            f"{where}: the tokenizer has no chat template, so conversations cannot be rendered. Add one "
            "(chat_template.jinja, or tokenizer.chat_template before save_pretrained); for tool use in the "
            "Hermes/Qwen convention, training.inference.chat_template.HERMES_TOOL_TEMPLATE fits ChatML models."
        )
    device = pick_device(device)
    torch_dtype = pick_dtype(dtype, device)
    try:
        model = AutoModelForCausalLM.from_pretrained(
            directory, dtype=torch_dtype, use_safetensors=True, trust_remote_code=trust_remote_code
        )
    except Exception as err:
        raise CheckpointError(f"{where}: cannot load the model ({type(err).__name__}: {err}).") from err
    return model.to(device).eval(), tokenizer, directory  # type: ignore[arg-type]  # transformers' wrapped .to, unbound
