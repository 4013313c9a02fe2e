"""Inference: the Hugging Face model agent, batched generation with a KV cache kept across turns,
prefix-shared attention, the chat template, and the default base model's preparation.

OpenMP's wait policy is left as the user set it (or OpenMP's default): generation picks its thread count by
timing decoding steps (``training.inference.threads``), which copes with both idle and shared cores."""
