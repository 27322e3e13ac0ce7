"""Retrieval for the ReAct agent: from long-term memory and from knowledge bases, with the
optional query rewriting, each adding what it found to the agent's memory before reasoning.

``ReActAgent`` keeps AgentScope's method names (``_retrieve_from_long_term_memory``,
``_retrieve_from_knowledge``, ``_rewrite_query``) as overridable one-line calls into here."""

from __future__ import annotations

import logging
from contextlib import aclosing
from typing import Any

from ..message import Msg, TextBlock
from ..model import ChatResponse
from ._react_host import ReActHost

logger = logging.getLogger("agentscope_rt.agent")

_REWRITE_HINT = (
    "<system-hint>Now you need to rewrite the above user query to be more specific and "
    "concise for knowledge retrieval. For example, rewrite the query 'what happened last "
    "day' to 'what happened on 2023-10-01' (assuming today is 2023-10-02).</system-hint>"
)
# AgentScope's _QueryRewriteModel as the provider receives it (titles removed).
_REWRITE_SCHEMA: dict[str, Any] = {
    "description": "The structured model used for query rewriting.",
    "type": "object",
    "properties": {
        "rewritten_query": {
            "type": "string",
            "description": "The rewritten query, which should be specific and concise. ",
        }
    },
    "required": ["rewritten_query"],
}


async def retrieve_from_long_term_memory(agent: ReActHost, msg: Msg | list[Msg] | None) -> None:
    """What the agent's long-term memory holds about *msg*, added to its memory as a user
    message (and printed when ``print_hint_msg``)."""
    if not msg or agent.long_term_memory is None:
        return
    retrieved = await agent.long_term_memory.retrieve(msg)
    if retrieved:
        retrieved_msg = Msg(
            "long_term_memory",
            "<long_term_memory>The content below are retrieved from long-term memory, "
            f"which maybe useful:\n{retrieved}</long_term_memory>",
            "user",
        )
        if agent.print_hint_msg:
            await agent.print(retrieved_msg, True)
        await agent.memory.add(retrieved_msg)


async def retrieve_from_knowledge(agent: ReActHost, msg: Msg | list[Msg] | None) -> None:
    """The knowledge bases' documents for *msg*'s text (the query rewritten first when
    ``enable_rewrite_query``), best first, added to the agent's memory as one user message."""
    if msg is None:
        return
    msgs = [msg] if isinstance(msg, Msg) else msg
    query = "\n".join(t for t in (m.get_text_content() for m in msgs) if t)
    if not query.strip():
        # Nothing to search for (a blank query would only be embedded as noise).
        return
    if agent.enable_rewrite_query:
        query = await agent._rewrite_query(query)
    docs: list[Any] = []
    for kb in agent.knowledge:
        docs.extend(await kb.retrieve(query=query))
    if not docs:
        return
    docs.sort(key=lambda doc: doc.score or 0.0, reverse=True)
    retrieved_msg = Msg(
        "user",
        [
            TextBlock(
                text="<retrieved_knowledge>Use the following content from the knowledge "
                "base(s) if it's helpful:\n"
            ),
            *[doc.metadata.content for doc in docs],
            TextBlock(text="</retrieved_knowledge>"),
        ],
        "user",
    )
    if agent.print_hint_msg:
        await agent.print(retrieved_msg, True)
    await agent.memory.add(retrieved_msg)


async def rewrite_query(agent: ReActHost, query: str) -> str:
    """Ask the model for a more specific query; keep *query* if that fails."""
    stream = agent.model.stream
    try:
        prompt = await agent._prompt_with(Msg("user", _REWRITE_HINT, "user"))
        agent.model.stream = False
        res = await agent.model(prompt, structured_model=_REWRITE_SCHEMA)
        answer: ChatResponse | None
        if isinstance(res, ChatResponse):
            answer = res
        else:
            # Streaming after all (the model ignores the flag, or a task sharing it turned
            # it back on while this call was being made): the last chunk is the answer.
            answer = None
            async with aclosing(res) as chunks:
                async for chunk in chunks:
                    answer = chunk
        if answer is not None:
            agent._add_usage(answer.usage)
            rewritten = (answer.metadata or {}).get("rewritten_query")
            if isinstance(rewritten, str) and rewritten.strip():
                return rewritten
    except Exception as exc:
        logger.warning("%s: skipping the query rewriting after an error: %s", agent.name, exc)
    finally:
        agent.model.stream = stream
    return query
