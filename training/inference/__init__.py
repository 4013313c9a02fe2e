"""Inference: the Hugging Face model agent, batched generation with a KV cache kept across turns,
prefix-shared attention, the chat template, and the default base model's preparation."""
