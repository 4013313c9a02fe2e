"""Model agents and training: the default base, ``HFAgent``, SFT, RL and PAFT.

Importing this package loads no torch: each name below is imported from its module when first used.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "BaseModelUnavailable": "training.inference.base",
    "CheckpointError": "training.inference.model_dir",
    "HFAgent": "training.inference.model_agent",
    "build_tiny_model": "training.tiny",
    "load_agent": "training.inference.model_agent",
    "prepare_default_base": "training.inference.base",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'training' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
