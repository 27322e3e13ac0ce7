"""Older names of :mod:`._wire_servers` (the one scripted server and its replies), still
imported by test_model_hardening.py and tests/adversarial/test_provider_random_arguments.py
for their Ollama and Gemini cases; nothing else uses them."""

from ._wire_servers import Reply as Answer
from ._wire_servers import WireServer as ScriptedServer
from ._wire_servers import WireServer as running_server
from ._wire_servers import gemini_events as sse
from ._wire_servers import gemini_response, ndjson, ollama_chunk

__all__ = [
    "Answer",
    "ScriptedServer",
    "gemini_response",
    "ndjson",
    "ollama_chunk",
    "running_server",
    "sse",
]
