"""Inference: the Hugging Face model agent, batched generation with a KV cache kept across turns,
prefix-shared attention, the chat template, and the default base model's preparation."""

import os
import sys

if "torch" not in sys.modules and not {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT"} & set(os.environ):
    # OpenMP reads this once, when torch loads it. A decoding step is about a thousand small parallel
    # regions; between them, threads that spin keep the cores from threads that work, and on a busy
    # machine each region then waits a scheduler slice: 10x slower steps (docs/serving.md).
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
