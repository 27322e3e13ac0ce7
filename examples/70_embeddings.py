"""Embeddings offline: a few sentences, their cosine similarities, and a cache hit.

:class:`~agentscope_rt.embedding.LocalTextEmbedding` runs all-MiniLM-L6-v2 in the process (the
``embedding`` extra, also part of ``local``): nothing is downloaded and no API key is needed.
Its vectors have unit length, so a cosine similarity is a dot product. With a
:class:`~agentscope_rt.embedding.FileEmbeddingCache`, asking again for the same texts is
answered from the cache (``source="cache"``) without running the model.

Run: ``python examples/70_embeddings.py`` (asyncio) or ``python examples/70_embeddings.py trio``.

What to look for: 5 vectors of 384 dimensions; each sentence's closest neighbour is the one with
the same meaning (the two eating sentences, the two rate-limit sentences, whatever their words);
the second request comes from the cache (``source=cache``) without running the model.
"""

from __future__ import annotations

import sys
import tempfile

import anyio

from agentscope_rt.embedding import FileEmbeddingCache, LocalTextEmbedding

SENTENCES = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "A man is riding a horse.",
    "The agent retries the request after a rate limit.",
    "After being rate limited, the request is sent again.",
]


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


async def main() -> None:
    with tempfile.TemporaryDirectory() as cache_dir:
        model = LocalTextEmbedding(embedding_cache=FileEmbeddingCache(cache_dir))
        response = await model(SENTENCES)
        print(f"{len(response.embeddings)} vectors of {len(response.embeddings[0])} dimensions")
        assert response.usage is not None
        print(f"source={response.source}, tokens={response.usage.tokens}\n")

        vectors = response.embeddings
        for i, sentence in enumerate(SENTENCES):
            scores = [(cosine(vectors[i], vectors[j]), j) for j in range(len(SENTENCES)) if j != i]
            score, best = max(scores)
            print(f"{sentence!r}\n    closest: {SENTENCES[best]!r} ({score:.3f})")

        again = await model(SENTENCES)
        assert again.usage is not None and again.embeddings == response.embeddings
        print(
            f"\nsame texts again: source={again.source}, tokens={again.usage.tokens}, "
            f"time={again.usage.time}"
        )


if __name__ == "__main__":
    anyio.run(main, backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")
