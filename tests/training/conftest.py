"""The tiny random-weight models of the training tests, built once per session (per worker under xdist).

Tests read them and never write into them; one that must change a checkpoint copies it first.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def tiny(tmp_path_factory):
    """A tiny random Llama with its own small tokenizer and the tool-aware chat template."""
    pytest.importorskip("transformers")
    from training.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture(scope="session")
def tiny_base(tmp_path_factory):
    """A tiny random Llama with the default base's tokenizer and chat template (real episode lengths)."""
    pytest.importorskip("transformers")
    from training.inference.base import prepare_default_base
    from training.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-base") / "model", tokenizer_from=prepare_default_base())
