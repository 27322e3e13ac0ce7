"""Retrieval-augmented generation: the knowledge-base interface and its document type.

Only the interface the agents use is defined here; implementations come in a later release.
"""

from ._document import DocMetadata, Document
from ._knowledge_base import KnowledgeBase

__all__ = ["DocMetadata", "Document", "KnowledgeBase"]
