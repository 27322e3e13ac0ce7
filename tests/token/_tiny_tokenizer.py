"""A tiny word-level Hugging Face tokenizer, trained on the spot: no download, no model files.

Only ``tokenizers`` is imported, so the script that produced ``data/huggingface_counts.json``
with AgentScope and transformers builds the very same tokenizer from this file.
"""

from __future__ import annotations

from pathlib import Path

from tokenizers import Tokenizer, models, pre_tokenizers, trainers

SPECIAL_TOKENS = ["[UNK]", "<s>", "</s>", "<|im_start|>", "<|im_end|>", "<|user|>", "<|bot|>"]

CORPUS = [
    "You are a helpful assistant . Be brief .",
    "What is the weather in Paris ? It is sunny in Paris today .",
    "get_weather city unit celsius fahrenheit Get the weather of a city",
    "system user assistant tool name type function description parameters",
    "{ } [ ] : , \" ' Tools tools # json",
]


def train_tokenizer(path: Path) -> Tokenizer:
    """Train the tokenizer on :data:`CORPUS`, save it as *path* (a ``tokenizer.json``) and
    return it. Words split on whitespace and punctuation; unknown words become ``[UNK]``."""
    tokenizer = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.WordLevelTrainer(special_tokens=SPECIAL_TOKENS, min_frequency=1)
    tokenizer.train_from_iterator(CORPUS, trainer)
    tokenizer.save(str(path))
    return tokenizer
