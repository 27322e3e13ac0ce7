"""Retrieval-augmented generation: documents, readers, vector stores and the knowledge-base
interface, with AgentScope's names.

* :class:`Document` / :class:`DocMetadata` — one chunk and where it comes from; a chunk's id is
  derived from its document id, position and content (:func:`chunk_id_of`), so the same chunk
  always has the same id.
* Readers — :class:`TextReader`, :class:`PDFReader`, :class:`WordReader`,
  :class:`ExcelReader`, :class:`PowerPointReader`, :class:`ImageReader`; many files at once
  with :func:`read_files` (a progress bar on a terminal). Parsing runs in worker threads; a file
  that cannot be read raises :class:`~agentscope_rt.exception.ReaderError` naming it.
* Stores — :class:`VDBStoreBase`; :class:`LocalVectorStore`, the embedded default (exact
  search, then an HNSW index for large collections); :class:`QdrantStore`,
  :class:`MilvusLiteStore`: upserts by chunk id, delete by chunk or document id, scores where
  higher is always better.
* :class:`KnowledgeBase` — what a ReAct agent retrieves from, with the ``retrieve_knowledge``
  tool function; :class:`SimpleKnowledge` — one embedding model over one store.

The parsing libraries and database clients are optional extras (``pdf``, ``office``,
``vector``, ``qdrant``, ``milvus``; ``rag`` for all) and are imported only when a reader reads
or a store is built, so importing this package stays cheap.
"""

from ._document import DocMetadata, Document, chunk_id_of
from ._knowledge_base import KnowledgeBase
from ._reader import (
    ExcelReader,
    ImageReader,
    PDFReader,
    PowerPointReader,
    ReaderBase,
    TextReader,
    WordReader,
    read_files,
    split_sentences,
)
from ._simple_knowledge import SimpleKnowledge
from ._store import LocalVectorStore, MilvusLiteStore, QdrantStore, VDBStoreBase

__all__ = [
    "DocMetadata",
    "Document",
    "ExcelReader",
    "ImageReader",
    "KnowledgeBase",
    "LocalVectorStore",
    "MilvusLiteStore",
    "PDFReader",
    "PowerPointReader",
    "QdrantStore",
    "ReaderBase",
    "SimpleKnowledge",
    "TextReader",
    "VDBStoreBase",
    "WordReader",
    "chunk_id_of",
    "read_files",
    "split_sentences",
]
