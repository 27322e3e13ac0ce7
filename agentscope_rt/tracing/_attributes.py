"""Span attribute keys and values: OpenTelemetry's GenAI conventions and AgentScope's own keys.

The keys are spelled out here (not read from ``opentelemetry-semantic-conventions``, whose
GenAI module is still "incubating" and renamed between releases) so that spans keep the names
AgentScope 1.0.21 gives them.
"""

from __future__ import annotations

__all__ = ["OperationName", "SpanAttributes"]


class SpanAttributes:
    """Attribute keys (AgentScope's ``SpanAttributes`` names)."""

    GEN_AI_CONVERSATION_ID = "gen_ai.conversation.id"
    GEN_AI_OPERATION_NAME = "gen_ai.operation.name"
    GEN_AI_PROVIDER_NAME = "gen_ai.provider.name"

    GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
    GEN_AI_REQUEST_TEMPERATURE = "gen_ai.request.temperature"
    GEN_AI_REQUEST_TOP_P = "gen_ai.request.top_p"
    GEN_AI_REQUEST_TOP_K = "gen_ai.request.top_k"
    GEN_AI_REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
    GEN_AI_REQUEST_PRESENCE_PENALTY = "gen_ai.request.presence_penalty"
    GEN_AI_REQUEST_FREQUENCY_PENALTY = "gen_ai.request.frequency_penalty"
    GEN_AI_REQUEST_STOP_SEQUENCES = "gen_ai.request.stop_sequences"
    GEN_AI_REQUEST_SEED = "gen_ai.request.seed"

    GEN_AI_RESPONSE_ID = "gen_ai.response.id"
    GEN_AI_RESPONSE_MODEL = "gen_ai.response.model"
    GEN_AI_RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"

    GEN_AI_USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
    GEN_AI_USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"

    GEN_AI_INPUT_MESSAGES = "gen_ai.input.messages"
    GEN_AI_OUTPUT_MESSAGES = "gen_ai.output.messages"

    GEN_AI_AGENT_ID = "gen_ai.agent.id"
    GEN_AI_AGENT_NAME = "gen_ai.agent.name"
    GEN_AI_AGENT_DESCRIPTION = "gen_ai.agent.description"

    GEN_AI_TOOL_CALL_ID = "gen_ai.tool.call.id"
    GEN_AI_TOOL_NAME = "gen_ai.tool.name"
    GEN_AI_TOOL_TYPE = "gen_ai.tool.type"
    GEN_AI_TOOL_DESCRIPTION = "gen_ai.tool.description"
    GEN_AI_TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
    GEN_AI_TOOL_CALL_RESULT = "gen_ai.tool.call.result"
    GEN_AI_TOOL_DEFINITIONS = "gen_ai.tool.definitions"

    GEN_AI_EMBEDDINGS_DIMENSION_COUNT = "gen_ai.embeddings.dimension.count"

    ERROR_TYPE = "error.type"

    AGENTSCOPE_FORMAT_TARGET = "agentscope.format.target"
    AGENTSCOPE_FORMAT_COUNT = "agentscope.format.count"
    AGENTSCOPE_FUNCTION_NAME = "agentscope.function.name"
    AGENTSCOPE_FUNCTION_INPUT = "agentscope.function.input"
    AGENTSCOPE_FUNCTION_OUTPUT = "agentscope.function.output"

    # This runtime's own: how a span ended when it did not simply succeed or fail.
    AGENTSCOPE_INTERRUPTED = "agentscope.interrupted"
    """True on a reply that was interrupted (:meth:`AgentBase.interrupt`) and on a tool call
    that ended with the interrupted chunk."""
    AGENTSCOPE_CANCELLED = "agentscope.cancelled"
    """True on a span whose call was cancelled from outside (a timeout, a cancelled task
    group, Ctrl+C): not an error."""
    AGENTSCOPE_CLOSED_EARLY = "agentscope.stream.closed_early"
    """True on a stream's span when its reader stopped (or dropped it) before the end."""


class OperationName:
    """Values of ``gen_ai.operation.name``."""

    CHAT = "chat"
    INVOKE_AGENT = "invoke_agent"
    EXECUTE_TOOL = "execute_tool"
    EMBEDDINGS = "embeddings"
    FORMATTER = "format"
    INVOKE_GENERIC_FUNCTION = "invoke_generic_function"
