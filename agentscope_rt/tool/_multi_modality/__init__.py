"""Multimodal tools: image generation, editing and description, speech synthesis and
transcription through the DashScope and OpenAI APIs (AgentScope's ``agentscope.tool``
multimodal functions, as coroutine functions).

Every tool takes ``api_key`` as an argument, as in AgentScope: preset it when registering the
tool so that it stays out of the schema the model sees::

    toolkit.register_tool_function(openai_text_to_image, preset_kwargs={"api_key": key})

Guarantees: the tools never block the event loop (HTTP through ``httpx`` and the ``openai``
SDK, local files read in worker threads) and never raise for a provider or input problem —
the model reads the failure as the ToolResponse's text, which never contains the API key.
Cancellation propagates, and connections are closed on the way out.
"""

from ._dashscope_tools import (
    dashscope_image_to_text,
    dashscope_text_to_audio,
    dashscope_text_to_image,
)
from ._openai_tools import (
    openai_audio_to_text,
    openai_create_image_variation,
    openai_edit_image,
    openai_image_to_text,
    openai_text_to_audio,
    openai_text_to_image,
)

__all__ = [
    "dashscope_image_to_text",
    "dashscope_text_to_audio",
    "dashscope_text_to_image",
    "openai_audio_to_text",
    "openai_create_image_variation",
    "openai_edit_image",
    "openai_image_to_text",
    "openai_text_to_audio",
    "openai_text_to_image",
]
