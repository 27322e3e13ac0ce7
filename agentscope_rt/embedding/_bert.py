"""A BERT sentence encoder in NumPy: the forward pass of sentence-transformers' MiniLM models.

:class:`LocalTextEmbedding` runs a small BERT model (all-MiniLM-L6-v2 by default) without
PyTorch or ONNX Runtime: the weights are read from the model's ``model.safetensors`` (parsed
here: an 8-byte header length, a JSON header, raw little-endian tensors), the text is tokenised
by the ``tokenizers`` library from the model's ``tokenizer.json``, and the encoder is a few
NumPy matrix products per layer (BLAS does the work). The sentence vector is the mean of the
last layer's token vectors over the real (non-padding) tokens, L2-normalised, as the model's
sentence-transformers pipeline (Transformer, mean Pooling, Normalize) computes it.

The encoder is CPU-bound and blocking: callers run it in a worker thread. One instance may be
used from several threads at once (it keeps no per-call state; NumPy releases the GIL in the
matrix products).

Importing this module imports NumPy and ``tokenizers``; ``agentscope_rt.embedding`` imports it
only when a local model is first called.
"""

from __future__ import annotations

import json
import math
import os
import struct
from typing import Any

import numpy as np
from tokenizers import Tokenizer

__all__ = ["BertEncoder", "read_safetensors"]

_DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": None, "I64": np.int64}

MICRO_BATCH = 32
"""Texts per forward pass: sorted by length first, so each batch pads to similar lengths."""


def read_safetensors(path: str) -> dict[str, Any]:
    """The tensors of a ``.safetensors`` file, by name, as NumPy arrays (float32 for floats).

    :raises ValueError: when the file is not a safetensors file or holds an unsupported dtype.
    """
    with open(path, "rb") as file:
        head = file.read(8)
        if len(head) != 8:
            raise ValueError(f"{path} is not a safetensors file (too short)")
        (size,) = struct.unpack("<Q", head)
        if size > 100_000_000:
            raise ValueError(f"{path} is not a safetensors file (header of {size} bytes)")
        try:
            header = json.loads(file.read(size))
        except ValueError as exc:
            raise ValueError(f"{path} is not a safetensors file ({exc})") from None
        data = file.read()
    tensors: dict[str, Any] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = info["dtype"]
        if dtype == "BF16":
            start, end = info["data_offsets"]
            raw = np.frombuffer(data, dtype="<u2", count=(end - start) // 2, offset=start)
            array = (raw.astype(np.uint32) << 16).view(np.float32)
        elif dtype in _DTYPES:
            start, end = info["data_offsets"]
            np_dtype = np.dtype(_DTYPES[dtype]).newbyteorder("<")
            array = np.frombuffer(
                data, dtype=np_dtype, count=(end - start) // np_dtype.itemsize, offset=start
            )
        else:
            raise ValueError(f"{path}: tensor {name!r} has unsupported dtype {dtype}")
        array = array.reshape(info["shape"])
        if array.dtype.kind == "f":
            array = array.astype(np.float32)
        tensors[name] = array
    return tensors


_ERF_P = np.float32(0.3275911)
_ERF_A = [
    np.float32(v) for v in (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)
]
_INV_SQRT2 = np.float32(1.0 / math.sqrt(2.0))
_GELU_BLOCK = 16384
"""Values per step of :func:`_gelu_`: the scratch arrays stay in the CPU cache."""


def _gelu_(x: Any) -> Any:
    """The exact GELU, ``x * (1 + erf(x / sqrt(2))) / 2``, computed in place on *x*.

    NumPy has no erf: Abramowitz & Stegun 7.1.26 gives it with an absolute error below 1.5e-7.
    The polynomial takes a dozen element-wise steps; done block by block into three small
    scratch arrays rather than on whole temporaries, it runs over ten times faster (the large
    temporaries made the whole forward pass memory-bound).
    """
    if not x.flags.c_contiguous:
        x = np.ascontiguousarray(x)
    flat = x.reshape(-1)  # a view, so the steps below write into x
    a, t, p = (np.empty(min(_GELU_BLOCK, flat.size), np.float32) for _ in range(3))
    a4, a3, a2, a1, a0 = _ERF_A[4], _ERF_A[3], _ERF_A[2], _ERF_A[1], _ERF_A[0]
    for start in range(0, flat.size, _GELU_BLOCK):
        v = flat[start : start + _GELU_BLOCK]
        n = v.size
        a_, t_, p_ = a[:n], t[:n], p[:n]
        np.multiply(v, _INV_SQRT2, out=a_)
        np.abs(a_, out=a_)  # |z|
        np.multiply(a_, _ERF_P, out=t_)
        t_ += 1
        np.reciprocal(t_, out=t_)  # t = 1 / (1 + p|z|)
        np.multiply(t_, a4, out=p_)
        for coefficient in (a3, a2, a1, a0):
            p_ += coefficient
            p_ *= t_
        np.square(a_, out=a_)
        np.negative(a_, out=a_)
        np.exp(a_, out=a_)
        p_ *= a_
        np.subtract(1, p_, out=p_)  # erf(|z|)
        np.copysign(p_, v, out=p_)  # erf(z)
        p_ += 1
        p_ *= 0.5
        v *= p_
    return x


def _layer_norm(x: Any, weight: Any, bias: Any, eps: float) -> Any:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = (centred * centred).mean(axis=-1, keepdims=True)
    return centred / np.sqrt(var + eps) * weight + bias


class BertEncoder:
    """A sentence-transformers BERT model (mean pooling, normalised) loaded from *model_dir*.

    :param model_dir: a folder with ``config.json``, ``tokenizer.json`` and
        ``model.safetensors`` (a BERT encoder, as sentence-transformers saves one).
    :param max_seq_length: tokens per text; longer texts are truncated (defaults to the
        folder's ``sentence_bert_config.json``, else 256).
    :raises FileNotFoundError: when a file is missing.
    :raises ValueError: when the folder holds something other than a BERT encoder.
    """

    def __init__(self, model_dir: str, max_seq_length: int | None = None) -> None:
        with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as file:
            config = json.load(file)
        if config.get("model_type") != "bert":
            raise ValueError(
                f"{model_dir} holds a {config.get('model_type')!r} model; LocalTextEmbedding "
                "runs BERT encoders (all-MiniLM-L6-v2, bge-small, ...)"
            )
        if max_seq_length is None:
            st_config = os.path.join(model_dir, "sentence_bert_config.json")
            if os.path.exists(st_config):
                with open(st_config, encoding="utf-8") as file:
                    max_seq_length = int(json.load(file).get("max_seq_length", 256))
            else:
                max_seq_length = 256
        self.max_seq_length = min(max_seq_length, int(config["max_position_embeddings"]))
        self.hidden_size = int(config["hidden_size"])
        self.num_heads = int(config["num_attention_heads"])
        self.num_layers = int(config["num_hidden_layers"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        if config.get("hidden_act", "gelu") != "gelu":
            raise ValueError(f"{model_dir}: activation {config.get('hidden_act')!r} unsupported")

        tokenizer = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
        tokenizer.no_padding()
        tokenizer.enable_truncation(self.max_seq_length)
        self._tokenizer = tokenizer

        weights = read_safetensors(os.path.join(model_dir, "model.safetensors"))
        prefix = "bert." if "bert.embeddings.word_embeddings.weight" in weights else ""

        def w(name: str) -> Any:
            return weights[prefix + name]

        self._word = w("embeddings.word_embeddings.weight")
        self._position = w("embeddings.position_embeddings.weight")
        self._token_type = w("embeddings.token_type_embeddings.weight")
        self._emb_norm: tuple[Any, Any] = (
            w("embeddings.LayerNorm.weight"),
            w("embeddings.LayerNorm.bias"),
        )
        self._layers: list[dict[str, Any]] = []
        for i in range(self.num_layers):
            p = f"encoder.layer.{i}."
            # One fused QKV matrix, transposed once here so each pass is a single product.
            qkv = np.concatenate(
                [w(p + f"attention.self.{n}.weight") for n in ("query", "key", "value")]
            )
            qkv_b = np.concatenate(
                [w(p + f"attention.self.{n}.bias") for n in ("query", "key", "value")]
            )
            self._layers.append(
                {
                    "qkv": np.ascontiguousarray(qkv.T),
                    "qkv_b": qkv_b,
                    "out": np.ascontiguousarray(w(p + "attention.output.dense.weight").T),
                    "out_b": w(p + "attention.output.dense.bias"),
                    "norm1": (
                        w(p + "attention.output.LayerNorm.weight"),
                        w(p + "attention.output.LayerNorm.bias"),
                    ),
                    "up": np.ascontiguousarray(w(p + "intermediate.dense.weight").T),
                    "up_b": w(p + "intermediate.dense.bias"),
                    "down": np.ascontiguousarray(w(p + "output.dense.weight").T),
                    "down_b": w(p + "output.dense.bias"),
                    "norm2": (w(p + "output.LayerNorm.weight"), w(p + "output.LayerNorm.bias")),
                }
            )

    def token_counts(self, texts: list[str]) -> list[int]:
        """Tokens each text is encoded as (special tokens included, after truncation)."""
        return [len(e.ids) for e in self._tokenizer.encode_batch(texts)]

    def encode(self, texts: list[str]) -> tuple[Any, int]:
        """``(vectors, tokens)``: a ``(len(texts), hidden_size)`` float32 array of unit
        vectors, in the order of *texts*, and the number of tokens encoded."""
        encodings = self._tokenizer.encode_batch(texts)
        out = np.empty((len(texts), self.hidden_size), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        tokens = 0
        for start in range(0, len(order), MICRO_BATCH):
            batch = order[start : start + MICRO_BATCH]
            length = max(len(encodings[i].ids) for i in batch)
            ids = np.zeros((len(batch), length), dtype=np.int64)
            types = np.zeros((len(batch), length), dtype=np.int64)
            mask = np.zeros((len(batch), length), dtype=np.float32)
            for row, i in enumerate(batch):
                enc = encodings[i]
                n = len(enc.ids)
                ids[row, :n] = enc.ids
                types[row, :n] = enc.type_ids
                mask[row, :n] = 1.0
                tokens += n
            out[batch] = self._forward(ids, types, mask)
        return out, tokens

    def _forward(self, ids: Any, types: Any, mask: Any) -> Any:
        batch, length = ids.shape
        heads, hidden = self.num_heads, self.hidden_size
        head_dim = hidden // heads
        x = self._word[ids] + self._position[:length][None, :, :] + self._token_type[types]
        x = _layer_norm(x, self._emb_norm[0], self._emb_norm[1], self.eps)
        # Padding keys get a large negative score, so softmax gives them no weight.
        bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        scale = np.float32(1.0 / math.sqrt(head_dim))
        for layer in self._layers:
            qkv = x @ layer["qkv"] + layer["qkv_b"]
            qkv = qkv.reshape(batch, length, 3, heads, head_dim).transpose(2, 0, 3, 1, 4)
            q, k, v = qkv[0] * scale, qkv[1].transpose(0, 1, 3, 2), qkv[2]
            context = np.empty((batch, length, hidden), dtype=np.float32)
            # One sequence at a time: its (heads, length, length) scores fit in the CPU
            # cache, where the whole batch's would be a memory-bound array of ~100 MB.
            for row in range(batch):
                scores = q[row] @ k[row]
                scores += bias[row]
                scores -= scores.max(axis=-1, keepdims=True)
                np.exp(scores, out=scores)
                scores /= scores.sum(axis=-1, keepdims=True)
                context[row] = (scores @ v[row]).transpose(1, 0, 2).reshape(length, hidden)
            x = _layer_norm(
                context @ layer["out"] + layer["out_b"] + x,
                layer["norm1"][0],
                layer["norm1"][1],
                self.eps,
            )
            inner = _gelu_(x @ layer["up"] + layer["up_b"])
            x = _layer_norm(
                inner @ layer["down"] + layer["down_b"] + x,
                layer["norm2"][0],
                layer["norm2"][1],
                self.eps,
            )
        summed = (x * mask[:, :, None]).sum(axis=1)
        pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1.0)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
