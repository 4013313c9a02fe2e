"""The model in training, playing episodes between its optimizer steps: in eval mode, its LoRA adapters merged
into the weights for decoding (one token at a time, LoRA's extra small matmuls cost more than their FLOPs;
unmerging is exact to fp32 rounding), and restored after."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def generating(model: Any) -> Iterator[Any]:
    """``model`` ready to decode with; yields the module an :class:`~training.inference.model_agent.HFAgent`
    takes (the base model, adapters merged, for a peft model)."""
    was_training = model.training
    model.eval()
    merge = hasattr(model, "merge_adapter")
    if merge:
        model.merge_adapter()
    try:
        yield model.get_base_model() if hasattr(model, "get_base_model") else model
    finally:
        if merge:
            model.unmerge_adapter()
        model.train(was_training)
