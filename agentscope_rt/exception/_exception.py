"""The exception hierarchy of agentscope-rt.

Everything the library raises on purpose derives from :class:`AgentScopeRTError`, so an
application can catch the whole family with one ``except`` clause. Where an error is also a
classic Python error (bad input is a ``ValueError``, a missing tool a ``LookupError``) the
class derives from both, so code written against the builtin types keeps working.

Errors derived from :class:`AgentOrientedExceptionBase` (AgentScope's name) are the ones whose
text is meant for the model rather than for the programmer; their ``str()`` names the class.
"""

from __future__ import annotations


class AgentScopeRTError(Exception):
    """Base class of every error agentscope-rt raises on purpose."""


class AgentOrientedExceptionBase(AgentScopeRTError):
    """An error meant to be shown to the agent, so that the model can correct itself.

    As in AgentScope, such errors are caught at runtime and their text is handed to the agent
    (typically as a tool result) rather than ending the reply. ``str(error)`` is
    ``"ClassName: message"``, the form the model reads; the bare text is :attr:`message`.

    :param message: what went wrong, written for the model to act on.
    :ivar message: the text given to the constructor.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return f"{type(self).__name__}: {self.message}"


# -- foundation -----------------------------------------------------------------------------


class MessageFormatError(AgentScopeRTError, ValueError):
    """Data could not be turned into a message or content block.

    Raised by :meth:`Msg.from_dict`, by ``Msg(...)`` for dict content, and wherever JSON data is
    structured into attrs values. The message names the offending path, e.g.
    ``content[2].source.url``. Nothing half-built is ever returned.
    """

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class StateError(AgentScopeRTError, ValueError):
    """A state could not be registered, saved or loaded.

    Raised by :meth:`StateModule.register_state` for attributes that cannot be serialised and
    by :meth:`StateModule.load_state_dict` for missing, unexpected or malformed keys. A failed
    load leaves the module unchanged.
    """


# -- agents ---------------------------------------------------------------------------------


class AgentError(AgentScopeRTError):
    """An agent was used in a way it does not support."""


class MsgHubError(AgentScopeRTError):
    """A message hub could not deliver a message, or was used outside its lifetime.

    Raised by :meth:`MsgHub.broadcast` and by a speaking agent whose reply could not reach every
    recipient because an observer raised (the hub itself then exits with the observer's error)
    or because the hub was cancelled while delivering; when a wait inside the hub would close
    a cycle (an observer calling the agent whose reply it is observing, or two tasks each
    waiting for the other's agent), naming the agents in the cycle instead of hanging; and when
    a hub is used before it is entered or after it has exited.
    """


# -- models ---------------------------------------------------------------------------------


class ModelError(AgentScopeRTError):
    """A chat or embedding model failed."""


class ModelAPIError(ModelError):
    """A model provider answered with an error (after all retries).

    :ivar provider: the provider's name, e.g. ``"openai"``.
    :ivar status_code: the HTTP status, or ``None`` for connection errors and timeouts.
    :ivar message: the provider's own error text.
    """

    def __init__(
        self,
        provider: str,
        message: str,
        *,
        status_code: int | None = None,
        attempts: int = 1,
    ) -> None:
        self.provider = provider
        self.status_code = status_code
        self.message = message
        self.attempts = attempts
        status = f"HTTP {status_code}" if status_code is not None else "no response"
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        super().__init__(f"{provider} request failed{tries} ({status}): {message}")


class ModelResponseError(ModelError):
    """A model's response could not be understood (e.g. invalid structured output)."""


# -- tools ----------------------------------------------------------------------------------


class ToolError(AgentScopeRTError):
    """Base class of toolkit errors."""


class FunctionNotFoundError(ToolError, LookupError):
    """No tool function with the requested name is registered."""


class FunctionInactiveError(ToolError):
    """The tool function belongs to a tool group that is not active."""


class ToolGroupError(ToolError, ValueError):
    """A tool group does not exist, already exists, or cannot be changed."""


class ToolRegistrationError(ToolError, ValueError):
    """A function cannot be registered as a tool (name clash, bad schema, ...)."""


class ToolNotFoundError(AgentOrientedExceptionBase, ToolError, LookupError):
    """The agent asked for a tool that does not exist (shown to the agent)."""


class ToolInterruptedError(AgentOrientedExceptionBase, ToolError):
    """A tool call was interrupted by the user (shown to the agent)."""


class ToolInvalidArgumentsError(AgentOrientedExceptionBase, ToolError, ValueError):
    """The arguments the agent passed to a tool are invalid (shown to the agent).

    Tool functions may raise it to answer bad input with a message the model can act on.
    """


class MCPError(ToolError):
    """An MCP client or server failed (not connected, disconnected, server error)."""


# -- framework ------------------------------------------------------------------------------


class A2AError(AgentScopeRTError, RuntimeError, ValueError):
    """An A2A exchange failed: an agent card that cannot be read or resolved, a remote agent
    that answers with an error or with nothing, or a request an A2A server refuses.

    It is a ``RuntimeError`` and a ``ValueError`` too, because AgentScope raises those two for
    the same failures (an unresolvable card, "No response received from remote agent").
    """


class SessionError(AgentScopeRTError, ValueError):
    """A session could not be saved or loaded.

    Raised for a session that does not exist (when that is not allowed), a stored state that is
    corrupted or does not fit the modules (the message names the session, where it is stored
    and the path inside the state), an invalid session or user id, and storage failures. A
    failed load leaves every module unchanged and overwrites nothing.
    """


class DurableRunError(AgentScopeRTError, RuntimeError):
    """A durable run could not go on: its store failed, it is open in another process, or
    the program breaks a rule of durable runs (two live agents with one name, a step result
    that is not JSON data, a memory kept outside the process).

    The run's records are never changed by the failure: fix the cause and start the program
    again with the same run id.
    """


class RunDivergedError(DurableRunError):
    """A resumed run's program did something else than what the run recorded (edited code,
    another order, another input), so the two histories cannot be joined.

    :ivar step: the key of the first step found to differ (``"Alice#3/chat#2"``).
    :ivar recorded: what the run recorded for it (a short description).
    :ivar now: what the program does now.
    """

    def __init__(self, message: str, *, step: str, recorded: str = "", now: str = "") -> None:
        super().__init__(message)
        self.step = step
        self.recorded = recorded
        self.now = now


class ReaderError(AgentScopeRTError, ValueError):
    """A RAG reader could not read a file: missing, empty, of the wrong kind, or corrupt.

    The message names the file and says what to do; :attr:`path` holds it.

    :param message: what went wrong with the file.
    :param path: the file that could not be read.
    """

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class EvaluationError(AgentScopeRTError, ValueError):
    """An evaluation was set up wrongly or its stored results could not be read.

    Raised for evaluator arguments out of range (``n_repeat``, ``n_workers``, ``timeout``), a
    benchmark that is not a :class:`~agentscope_rt.evaluate.BenchmarkBase`, task ids or metric
    names that cannot name a file, two tasks with one id, and stored files that are not the JSON
    the storage wrote (the message names the file). Nothing already stored is overwritten.
    """
