"""Whether a run trains under bf16 autocast: on CUDA where the GPU supports bf16; on a CPU where it has bf16
instructions (elsewhere bf16 is emulated, and slower) and a forward and backward pass of the model is
measured faster under bf16 than in fp32, which a CPU with the instructions does not guarantee.

The measurement can land either side of the margin on a loaded machine, so a run decides once:
``training.loop`` records the choice in the run's checkpoints, and a resumed run keeps it."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from typing import Any

PROBE_TOKENS = 512  # below this the matrices are too small for bf16's gain to show steadily (docs/experiments.md)
PROBE_REPEATS = 2
MARGIN = 0.9  # bf16 must be at least this much faster: a near tie is noise, and fp32 is the exact one

_measured: dict[tuple, tuple[float, float]] = {}


WITHOUT_AVX512 = ("SSE41", "AVX", "AVX2", "AVX2_VNNI")
"""oneDNN's instruction sets without AVX-512: kept to one of them (``ONEDNN_MAX_CPU_ISA``), a CPU computes bf16 as
one without AVX-512 does, by emulation, many times slower than fp32."""


def onednn_limit() -> tuple[str, str]:
    """``(variable, instruction set)`` oneDNN is kept to by ``ONEDNN_MAX_CPU_ISA`` (or its older name
    ``DNNL_MAX_CPU_ISA``), the set upper case; ``("", "")`` where neither is set."""
    for variable in ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"):
        if os.environ.get(variable, "").strip():
            return variable, os.environ[variable].strip().upper()
    return "", ""


def cpu_computes_bf16() -> bool:
    """Whether torch computes bf16 here in instructions of the CPU, and oneDNN is not kept below them."""
    import torch

    if onednn_limit()[1] in WITHOUT_AVX512:
        return False
    return torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported()


def choose(model: Any, say: Callable[[str], None] | None = None) -> tuple[bool, str]:
    """``(bf16, why)`` for training ``model`` here. On a CPU with bf16 instructions a forward and backward pass
    is timed in each precision (:func:`timings`); ``say`` is told before it starts."""
    import torch

    if torch.cuda.is_available():
        supported = torch.cuda.is_bf16_supported()
        return supported, f"the GPU {'computes' if supported else 'does not compute'} in bf16"
    if not cpu_computes_bf16():
        variable, limit = onednn_limit()
        if limit in WITHOUT_AVX512:
            return False, f"oneDNN is kept to {limit} here ({variable}), where bf16 is emulated"
        return False, "this CPU has no bf16 instructions"
    fp32, bf16 = timings(model, say)
    faster = bf16 < MARGIN * fp32
    return faster, (
        f"a training pass measured {fp32 / bf16:.2f}× as fast in bf16 as in fp32 here (bf16 is used when "
        f"it is at least {1 / MARGIN:.2f}× as fast)"
    )


def timings(model: Any, say: Callable[[str], None] | None = None) -> tuple[float, float]:
    """``(fp32, bf16)`` seconds of a training pass of ``model`` (:func:`pass_seconds`), measured once per process
    for each model shape (about ten seconds for a 135M model on 2 cores); ``say`` is told before it starts. Where
    the CPU does not compute bf16 (:func:`cpu_computes_bf16`) only fp32 is timed, and bf16 is infinite: emulated,
    a pass takes minutes."""
    params = list(model.parameters())
    key = (type(model).__name__, sum(p.numel() for p in params), sum(p.numel() for p in params if p.requires_grad))
    if key not in _measured:
        if not cpu_computes_bf16():
            _measured[key] = (pass_seconds(model, bf16=False)[0], math.inf)
            return _measured[key]
        if say is not None:
            say("timing a training pass in bf16 against fp32 to choose the precision (about ten seconds)...")
        _measured[key] = pass_seconds(model)
    return _measured[key]


def measured() -> list[list]:
    """The timings this process measured (:func:`timings`), as JSON rows for :func:`remember` in another."""
    return [[*key, *seconds] for key, seconds in _measured.items()]


def remember(rows: list[list]) -> None:
    """Take timings :func:`measured` gave in another process on this machine as this process's own."""
    for *key, fp32, bf16 in rows:
        _measured[tuple(key)] = (fp32, bf16)


def train_in_bf16(model: Any) -> bool:
    """Whether to train ``model`` under bf16 autocast here (:func:`choose`, without the reason)."""
    return choose(model)[0]


def pass_seconds(
    model: Any, tokens: int = PROBE_TOKENS, repeats: int = PROBE_REPEATS, bf16: bool = True
) -> tuple[float, float]:
    """``(fp32, bf16)``: the fastest of ``repeats`` forward and backward passes of ``model`` on ``tokens``
    random tokens in each precision, taken in turns after one pass of each to warm up; gradients cleared.
    ``bf16=False`` times fp32 alone (bf16 infinite)."""
    import torch

    vocab = model.get_input_embeddings().num_embeddings
    ids = torch.randint(0, vocab, (1, tokens), generator=torch.Generator().manual_seed(0))
    seconds: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(1 + repeats):
        for autocast in (False, True) if bf16 else (False,):
            start = time.perf_counter()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                loss = model(input_ids=ids, labels=ids).loss
            loss.backward()
            model.zero_grad(set_to_none=True)
            seconds[autocast].append(time.perf_counter() - start)
    return min(seconds[False][1:]), min(seconds[True][1:], default=math.inf)
