"""Questions about the project's own docs, each answered by one chunk: the sentence chunk of
``docs/*.md`` (``TextReader(chunk_size=512, split_by="sentence")``) that holds its phrase.

Phrases are matched with runs of white space collapsed, so re-wrapping a paragraph does not
move them. Used by ``test_knowledge_docs.py`` and ``examples/71_rag_over_docs.py``.
"""

from __future__ import annotations

QUESTIONS: list[tuple[str, str]] = [
    ("How deeply may JSON metadata inside a message be nested?", "nested deeper than 200 levels"),
    (
        "Which HTTP errors do the embedding models retry?",
        "408/409/429/5xx, connection errors and timeouts are retried",
    ),
    ("Does the local embedding model need PyTorch or a download?", "**No download, no PyTorch.**"),
    (
        "Which embedding model does default_embedding_model return when OPENAI_API_KEY is set?",
        "when `OPENAI_API_KEY` is set, else `DashScopeTextEmbedding",
    ),
    (
        "How do I silence the console output of every agent with an environment variable?",
        "silences all of them",
    ),
    ("How do the text file tools make their writes atomic?", "then `os.replace`"),
    ("Can the file tools read a FIFO or a socket?", "a FIFO, socket or device is refused"),
    (
        "Does HttpStatelessClient need connect and close calls?",
        "`HttpStatelessClient` needs no lifecycle",
    ),
    (
        "How is the execution_timeout of an MCP tool enforced?",
        "is enforced with `anyio.move_on_after`",
    ),
    (
        "What happens when several plan notebook tools are called in parallel?",
        "**Concurrent calls are serialised.**",
    ),
    (
        "When do participants of a MsgHub observe the announcement?",
        "is observed by every participant on entering",
    ),
    (
        "Which journal mode and busy timeout does the SQLite memory use?",
        "runs in WAL mode with `synchronous=NORMAL`",
    ),
    (
        "Which Redis key of RedisMemory lists the message ids of a session?",
        "list of the message ids, oldest first",
    ),
    (
        "How many characters make a token in English for the character token counter?",
        "about 4 characters make a token",
    ),
    (
        "What size is assumed for an image whose dimensions are unknown when counting tokens?",
        "assumed to be 1024x1024",
    ),
    (
        "Why do formatters report unsupported blocks with warnings.warn rather than logging?",
        "`warnings.warn` was chosen over logging",
    ),
    (
        "A tool must not have its effect twice after a durable reply restarts: what should it do?",
        "should be idempotent or check before acting",
    ),
    (
        "How is it tested that a session file survives a crash while saving?",
        "killing a saving process at random moments",
    ),
    (
        "In which folder does the formatter write base64 media as files?",
        "in a private folder of the process",
    ),
    (
        "Why is Qdrant's on-disk embedded mode slow to add many chunks?",
        "commits every point to its SQLite",
    ),
    (
        "What do reasoning_effort and reasoning_summary become for the Responses API?",
        "`reasoning_effort`/`reasoning_summary` become",
    ),
    (
        "What happens in the ReAct loop when a tool fails, is unknown or gets bad arguments?",
        "come back from the toolkit as tool results the model reads",
    ),
    (
        "Is the local embedding model's safetensors file verified before use?",
        "checked against the published file's SHA-256",
    ),
    (
        "How many tokens and texts per second does the local embedding model handle?",
        "about 170 texts/s on a free core",
    ),
    (
        "Where is the Gemini thoughtSignature kept?",
        "a part's `thoughtSignature` is kept where AgentScope keeps it",
    ),
    (
        "How does the file embedding cache name its files?",
        "`sha256(json.dumps(identifier, ensure_ascii=False)).npy`, a float64 matrix",
    ),
]
