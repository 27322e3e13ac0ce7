"""The NumPy BERT runtime: safetensors parsing and models other than the bundled one."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agentscope_rt.embedding import LocalTextEmbedding
from agentscope_rt.embedding._bert import read_safetensors
from agentscope_rt.embedding._local_embedding import bundled_model_dir


def write_safetensors(path: Path, tensors: dict[str, tuple[str, Any]]) -> None:
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    blobs = []
    offset = 0
    for name, (dtype, array) in tensors.items():
        data = array.tobytes()
        header[name] = {
            "dtype": dtype,
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        blobs.append(data)
        offset += len(data)
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"".join(blobs))


def test_safetensors_float_types_are_read_as_float32(tmp_path: Path) -> None:
    values = np.array([[1.5, -2.0], [0.25, 3.0]], dtype=np.float32)
    bf16 = (values.view(np.uint32) >> 16).astype("<u2")
    write_safetensors(
        tmp_path / "m.safetensors",
        {
            "a": ("F32", values.astype("<f4")),
            "b": ("F16", values.astype("<f2")),
            "c": ("BF16", bf16),
            "d": ("I64", np.arange(3, dtype="<i8")),
        },
    )
    tensors = read_safetensors(str(tmp_path / "m.safetensors"))
    for name in "abc":
        assert tensors[name].dtype == np.float32 and tensors[name].tolist() == values.tolist()
    assert tensors["d"].tolist() == [0, 1, 2]


def test_bad_safetensors_files_are_value_errors(tmp_path: Path) -> None:
    (tmp_path / "short").write_bytes(b"abc")
    with pytest.raises(ValueError, match="too short"):
        read_safetensors(str(tmp_path / "short"))
    (tmp_path / "json").write_bytes(struct.pack("<Q", 5) + b"nope!")
    with pytest.raises(ValueError, match="not a safetensors file"):
        read_safetensors(str(tmp_path / "json"))
    write_safetensors(tmp_path / "i8", {"x": ("I8", np.zeros(2, dtype=np.int8))})
    with pytest.raises(ValueError, match="unsupported dtype I8"):
        read_safetensors(str(tmp_path / "i8"))


def tiny_bert(folder: Path, hidden: int = 8, model_type: str = "bert") -> None:
    """A randomly initialised 2-layer BERT with the bundled tokenizer, saved as
    transformers' BertForMaskedLM saves one (names prefixed with ``bert.``)."""
    bundled = bundled_model_dir()
    assert bundled is not None
    folder.mkdir()
    shutil.copy(Path(bundled) / "tokenizer.json", folder / "tokenizer.json")
    config = {
        "model_type": model_type,
        "hidden_size": hidden,
        "num_attention_heads": 2,
        "num_hidden_layers": 2,
        "intermediate_size": 16,
        "max_position_embeddings": 64,
        "layer_norm_eps": 1e-12,
        "hidden_act": "gelu",
    }
    (folder / "config.json").write_text(json.dumps(config))
    rng = np.random.default_rng(0)

    def t(*shape: int) -> tuple[str, Any]:
        return "F32", rng.normal(0, 0.2, shape).astype("<f4")

    tensors = {
        "bert.embeddings.word_embeddings.weight": t(30522, hidden),
        "bert.embeddings.position_embeddings.weight": t(64, hidden),
        "bert.embeddings.token_type_embeddings.weight": t(2, hidden),
        "bert.embeddings.LayerNorm.weight": t(hidden),
        "bert.embeddings.LayerNorm.bias": t(hidden),
    }
    for i in range(2):
        p = f"bert.encoder.layer.{i}."
        for n in ("query", "key", "value"):
            tensors[p + f"attention.self.{n}.weight"] = t(hidden, hidden)
            tensors[p + f"attention.self.{n}.bias"] = t(hidden)
        tensors[p + "attention.output.dense.weight"] = t(hidden, hidden)
        tensors[p + "attention.output.dense.bias"] = t(hidden)
        tensors[p + "attention.output.LayerNorm.weight"] = t(hidden)
        tensors[p + "attention.output.LayerNorm.bias"] = t(hidden)
        tensors[p + "intermediate.dense.weight"] = t(16, hidden)
        tensors[p + "intermediate.dense.bias"] = t(16)
        tensors[p + "output.dense.weight"] = t(hidden, 16)
        tensors[p + "output.dense.bias"] = t(hidden)
        tensors[p + "output.LayerNorm.weight"] = t(hidden)
        tensors[p + "output.LayerNorm.bias"] = t(hidden)
    write_safetensors(folder / "model.safetensors", tensors)


async def test_another_bert_model_from_a_folder(tmp_path: Path) -> None:
    tiny_bert(tmp_path / "tiny")
    model = LocalTextEmbedding("tiny-bert", 8, model_dir=str(tmp_path / "tiny"))
    response = await model(["hello world", "x " * 200])
    assert [len(v) for v in response.embeddings] == [8, 8]
    assert all(abs(sum(x * x for x in v) - 1) < 1e-5 for v in response.embeddings)
    # Truncated at the model's 64 positions (no sentence_bert_config.json).
    assert response.usage is not None and response.usage.tokens == 4 + 64


async def test_a_folder_with_another_architecture_is_refused(tmp_path: Path) -> None:
    tiny_bert(tmp_path / "roberta", model_type="roberta")
    model = LocalTextEmbedding("roberta", 8, model_dir=str(tmp_path / "roberta"))
    with pytest.raises(ValueError, match="holds a 'roberta' model"):
        await model(["x"])
