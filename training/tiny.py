"""A tiny random-weight chat model, built from a config in about a second, for plumbing tests.

It writes a normal checkpoint directory (safetensors, tokenizer, the tool-aware chat template),
so everything that loads ``hf:PATH`` can be tested on it without a download. Its tokenizer is the
default base's when given one (``tokenizer_from``), else a small byte-level BPE trained here on a
fixed text, so the result is the same on every machine.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]

_CORPUS = [
    "<|im_start|>system\nYou are a helpful AI assistant.<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n",
    '<tool_call>\n{"name": "search_places", "arguments": {"city": "Lyon", "category": "cafe"}}\n</tool_call>',
    '<tool_response>\n{"results": [{"id": "P1042", "name": "Cafe du Parc", "rating": 4.5}]}\n</tool_response>',
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
    '{"type": "function", "function": {"name": "get_details", "description": "Details of a place", '
    '"parameters": {"type": "object", "properties": {"id": {"type": "string"}}}}}\n</tools>',
    "Book a table for two at the best rated restaurant in Paris tonight and tell me the confirmation code.",
    "I cannot do that with these tools. The phone number is 555-0142. Booking code BK-7731 confirmed.",
    "0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ .,:;!?'\"()[]{}<>-_/=+*&%$#@",
]


def build_tiny_tokenizer(vocab_size: int = 512):
    """A byte-level BPE with the ChatML special tokens and the tool-aware chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from training.inference.chat_template import HERMES_TOOL_TEMPLATE

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    core.train_from_iterator(_CORPUS * 4, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        bos_token="<|im_start|>",
        eos_token="<|im_end|>",
        unk_token="<|endoftext|>",
        pad_token="<|im_end|>",
    )
    tokenizer.chat_template = HERMES_TOOL_TEMPLATE
    return tokenizer


def build_tiny_model(
    path: str | Path,
    tokenizer_from: str | Path | None = None,
    layers: int = 2,
    hidden: int = 64,
    heads: int = 4,
    kv_heads: int = 2,
    seed: int = 0,
) -> Path:
    """Write a random-weight Llama-style chat model to ``path`` and return the path."""
    import torch
    from transformers import AutoTokenizer, GenerationConfig, LlamaConfig, LlamaForCausalLM

    path = Path(path)
    tokenizer = build_tiny_tokenizer() if tokenizer_from is None else AutoTokenizer.from_pretrained(tokenizer_from)
    eos = _token_id(tokenizer, "<|im_end|>")
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=hidden * 2,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=8192,
        tie_word_embeddings=False,
        bos_token_id=_token_id(tokenizer, "<|im_start|>"),
        eos_token_id=eos,
        pad_token_id=eos,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config).eval()
    # The default init gives near-uniform logits, where float noise could flip a greedy choice, and a
    # reply that repeats one token; wider weights give varied replies with clear winners.
    with torch.no_grad():
        model.model.embed_tokens.weight.normal_(0.0, 1.0)
        model.lm_head.weight.normal_(0.0, 0.4)
        for layer in model.model.layers:  # sharp attention, so replies depend on the whole prompt
            for proj in (layer.self_attn.q_proj, layer.self_attn.k_proj):
                proj.weight.normal_(0.0, 0.5)
            for proj in (layer.self_attn.v_proj, layer.self_attn.o_proj):
                proj.weight.normal_(0.0, 0.3)
    model.generation_config = GenerationConfig(bos_token_id=config.bos_token_id, eos_token_id=eos, pad_token_id=eos)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def _token_id(tokenizer: PreTrainedTokenizerBase, token: str) -> int:
    """The id of one token (``convert_tokens_to_ids`` gives a list only for a list)."""
    found = tokenizer.convert_tokens_to_ids(token)
    assert isinstance(found, int), token
    return found
