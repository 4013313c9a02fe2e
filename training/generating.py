"""The model in training, playing episodes between its optimizer steps: in eval mode, its LoRA adapters merged
into the weights for decoding (one token at a time, LoRA's extra small matmuls cost more than their FLOPs), and
restored after to the very values they had: an unmerge subtracts what the merge added, which leaves about 1% of
the base weights' elements one rounding off, so the weights are copied back instead (a check observes the
training, it does not change it)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def generating(model: Any) -> Iterator[Any]:
    """``model`` ready to decode with; yields the module an :class:`~training.inference.model_agent.HFAgent`
    takes (the base model, adapters merged, for a peft model)."""
    import torch

    was_training = model.training
    model.eval()
    merge = hasattr(model, "merge_adapter")
    if merge:
        weights = _merged_weights(model)
        kept = [w.detach().clone() for w in weights]
        model.merge_adapter()
    try:
        yield model.get_base_model() if hasattr(model, "get_base_model") else model
    finally:
        if merge:
            model.unmerge_adapter()  # peft's own record of what is merged
            with torch.no_grad():
                for weight, value in zip(weights, kept, strict=True):
                    weight.copy_(value)
        model.train(was_training)


def _merged_weights(model: Any) -> list[Any]:
    """The weights a merge of ``model``'s LoRA adapters writes into: each adapted layer's base weight."""
    from peft.tuners.lora import LoraLayer

    return [m.get_base_layer().weight for m in model.modules() if isinstance(m, LoraLayer)]
