"""``openagent gguf``: a checkpoint as the GGUF file llama.cpp serves."""

from __future__ import annotations

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")
pytest.importorskip("transformers")


def _tensors(path):
    return {t.name: t for t in gguf.GGUFReader(path).tensors}


def test_a_checkpoint_is_written_with_its_hyperparameters_template_and_the_bases_tokenizer(tiny_base, tmp_path):
    """The tensors are checked against the shipped file in the slow test below (gguf's reader takes seconds)."""
    from training.gguf_export import read_fields, write_gguf
    from training.inference.base import gguf_path
    from training.inference.model_dir import load

    out = write_gguf(tiny_base, tmp_path / "sub" / "tiny.gguf")
    model, tokenizer, _ = load(tiny_base, dtype="fp32")
    config = model.config
    fields = {key: value for key, (_, value, _) in read_fields(out).items()}
    assert fields["llama.block_count"] == config.num_hidden_layers
    assert fields["llama.attention.head_count_kv"] == config.num_key_value_heads
    assert fields["tokenizer.chat_template"] == tokenizer.chat_template  # tools rendered as the hf: agent does
    shipped = {key: value for key, (_, value, _) in read_fields(gguf_path()).items()}
    assert fields["tokenizer.ggml.merges"] == shipped["tokenizer.ggml.merges"]
    assert fields["tokenizer.ggml.pre"] == shipped["tokenizer.ggml.pre"]
    assert not list(tmp_path.joinpath("sub").glob(".*tmp*"))

    half = write_gguf(tiny_base, tmp_path / "half.gguf", dtype="f16")
    assert read_fields(half)["general.file_type"][1] == gguf.LlamaFileType.MOSTLY_F16


def test_a_checkpoint_of_another_vocabulary_is_refused_with_the_way_out(tiny, tmp_path):
    from training.gguf_export import NotExportable, write_gguf

    with pytest.raises(NotExportable, match=r"vocabulary .* is not the default base's .*convert_hf_to_gguf"):
        write_gguf(tiny, tmp_path / "tiny.gguf")
    assert not list(tmp_path.iterdir())


def test_the_command_says_what_it_wrote_and_refuses_a_folder(tiny_base, tmp_path):
    from pytest_openagent.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["gguf", str(tiny_base), str(tmp_path)])
    assert exit_info.value.code == 2
    assert main(["gguf", str(tiny_base), str(tmp_path / "m.gguf"), "--dtype", "f16"]) == 0
    assert (tmp_path / "m.gguf").stat().st_size > 0


@pytest.mark.slow
def test_the_default_base_written_back_is_the_shipped_gguf_dequantized(tmp_path):
    """The base's fp32 weights are the shipped Q4_1 file's, dequantized: written back, every tensor matches, so
    names, layouts and the query/key permutation are llama.cpp's converter's."""
    from training.gguf_export import read_fields, write_gguf
    from training.inference.base import gguf_path

    ours, shipped = _tensors(write_gguf("default", tmp_path / "base.gguf")), _tensors(gguf_path())
    assert set(ours) == set(shipped)
    for name, tensor in shipped.items():
        dequantized = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
        assert np.array_equal(dequantized, np.asarray(ours[name].data)), name
    half = _tensors(write_gguf("default", tmp_path / "half.gguf", dtype="f16"))
    assert half["blk.0.attn_q.weight"].tensor_type == gguf.GGMLQuantizationType.F16
    assert half["blk.0.attn_norm.weight"].tensor_type == gguf.GGMLQuantizationType.F32  # llama.cpp wants norms f32
    # the header reader gives what gguf's own reader gives
    fields = {f.name: f for f in gguf.GGUFReader(gguf_path()).fields.values()}
    for key, (kind, value, _) in read_fields(gguf_path()).items():
        assert fields[key].types[0] == kind and fields[key].contents() == value, key
