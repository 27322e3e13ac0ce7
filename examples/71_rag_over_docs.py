"""Retrieval-augmented answers over this project's own documentation, offline.

The Markdown files of ``docs/`` are read with :class:`~agentscope_rt.rag.TextReader` (one chunk
per sentence; a progress bar on a terminal, from :func:`~agentscope_rt.rag.read_files`),
embedded with the local all-MiniLM-L6-v2 model (:class:`~agentscope_rt.embedding.
LocalTextEmbedding`, no API key, no download) and kept in Qdrant's embedded engine in memory,
all through :class:`~agentscope_rt.rag.SimpleKnowledge`. Then:

1. the question is looked up directly: the chunks found, with their scores and file names;
2. a ReActAgent given ``knowledge=`` answers it, the same chunks in its prompt (the model is an
   API model when ``OPENAI_API_KEY`` is set, else SmolLM2-135M in the process). The agent
   prints its answer as it streams; a check then compares the answer with the best chunk.

Embeddings are cached in ``~/.cache/agentscope_rt_examples/embeddings``: the first run embeds
every chunk (about half a minute of CPU for all of ``docs/``), later runs read the cache. Under
``nox -s examples`` only a few of the files are ingested, to keep the run short.

Run: ``python examples/71_rag_over_docs.py ["your question"]`` (asyncio) or
``python examples/71_rag_over_docs.py trio``.

What to look for: the retrieval is the point. For the default question the best chunk (from
``tool.md``) says that only regular files are read, a FIFO or socket is refused. The agent's
``DocsBot:`` line is the model's answer with that chunk in its prompt; the check below it says
whether the answer keeps the chunk's key words ("regular files", "refused"). SmolLM2-135M often
does not: it may contradict the chunk it was given, and the check then says to trust the
retrieved chunk, not the small model's prose. An API model answers from the chunk.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import anyio
from _models import pick_chat_model
from _paths import example_folder

from agentscope_rt import formatter as formatters
from agentscope_rt.agent import ReActAgent
from agentscope_rt.embedding import FileEmbeddingCache, LocalTextEmbedding
from agentscope_rt.message import Msg
from agentscope_rt.rag import QdrantStore, SimpleKnowledge, TextReader, read_files

DOCS = Path(__file__).resolve().parent.parent / "docs"
QUESTION = "Can the file tools read a FIFO or a socket?"
# What the best chunk for QUESTION says, in the words an answer true to it would use.
KEY_WORDS = ("regular file", "refused")
# Under `nox -s examples`: enough files for the question, a fraction of the embedding work.
QUICK_FILES = ("tool.md", "mcp.md", "rag.md", "embedding.md")


def shorten(text: str, width: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."


async def main(question: str) -> None:
    paths = sorted(DOCS.glob("*.md"))
    if os.environ.get("AGENTSCOPE_RT_EXAMPLES"):
        paths = [p for p in paths if p.name in QUICK_FILES]
    reader = TextReader(chunk_size=512, split_by="sentence")
    docs = await read_files(reader, paths)
    # TextReader's document id is the SHA-256 of the text: map it back to the file name.
    file_of = {reader.get_doc_id(p.read_text(encoding="utf-8")): p.name for p in paths}
    print(f"read {len(paths)} files of docs/: {len(docs)} chunks")

    embedding = LocalTextEmbedding(embedding_cache=FileEmbeddingCache(example_folder("embeddings")))
    async with QdrantStore(":memory:", "docs", dimensions=embedding.dimensions) as store:
        knowledge = SimpleKnowledge(embedding_store=store, embedding_model=embedding)
        started = time.perf_counter()
        await knowledge.add_documents(docs)
        print(f"embedded and stored in {time.perf_counter() - started:.1f} s\n")

        print(f"Q: {question}")
        hits = await knowledge.retrieve(question, limit=3)
        for rank, hit in enumerate(hits, 1):
            name = file_of.get(hit.metadata.doc_id, "?")
            print(f"  {rank}. score {hit.score:.3f}  {name}#{hit.metadata.chunk_id}")
            print(f"     {shorten(hit.metadata.content['text'])}")
        assert hits, "nothing retrieved"

        model, formatter_name = pick_chat_model(stream=True, generate_kwargs={"max_tokens": 48})
        agent = ReActAgent(
            name="DocsBot",
            sys_prompt=(
                "Answer the question in one sentence, repeating the words of the retrieved "
                "documentation that answer it."
            ),
            model=model,
            formatter=getattr(formatters, formatter_name)(),
            knowledge=knowledge,
            # A 135M model rewrites queries poorly; an API model may leave this on.
            enable_rewrite_query=bool(os.environ.get("OPENAI_API_KEY")),
            max_iters=2,
        )
        print(f"\n{model.model_name} answers with the chunks in its prompt:")
        reply = await agent(Msg("user", question, "user"))
        sources = sorted({file_of.get(h.metadata.doc_id, "?") for h in hits})
        print(f"Sources: {', '.join('docs/' + s for s in sources)}")
        if question == QUESTION:
            check(reply.get_text_content() or "")


def check(answer: str) -> None:
    """Whether the answer to the default question keeps what the best chunk says."""
    kept = [word for word in KEY_WORDS if word in answer.lower()]
    print(f"Check: the answer keeps {len(kept)} of the chunk's key words {list(KEY_WORDS)}.")
    if len(kept) < len(KEY_WORDS):
        print(
            "  It does not say what the chunk says: trust the retrieved chunk above, not this\n"
            "  answer. SmolLM2-135M often ignores or echoes the retrieved text; an API model\n"
            "  answers from it."
        )


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "trio"]
    backend = "trio" if "trio" in sys.argv[1:] else "asyncio"
    anyio.run(main, args[0] if args else QUESTION, backend=backend)
