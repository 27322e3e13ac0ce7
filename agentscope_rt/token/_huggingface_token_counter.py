"""Hugging Face token counting, offline, with the ``tokenizers`` library and the chat template.

AgentScope's counter loads ``transformers.AutoTokenizer`` (downloading from the Hub when
needed) and counts ``apply_chat_template(messages, tools=tools, tokenize=True)``. This one
does the same two steps without transformers and without the network:

1. the chat template (a Jinja template from the tokenizer's files) is rendered the way
   transformers renders it — a sandboxed environment with ``trim_blocks`` and
   ``lstrip_blocks``, the ``loopcontrols`` extension, the ``{% generation %}`` tag, a
   ``tojson`` filter that keeps non-ASCII characters, ``raise_exception`` and
   ``strftime_now``, the special tokens (``bos_token``, ``eos_token``...) as variables;
2. the rendered text is encoded by the ``tokenizer.json`` tokenizer without adding special
   tokens again (the template already wrote them), and the ids are counted.

Threading: rendering and encoding are CPU work that grows with the prompt, and the
tokenizer file (megabytes for real models) is parsed on first use, so both run in a worker
thread; the hop costs a fraction of a millisecond.
"""

from __future__ import annotations

import json
import logging
import os
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from .._extras import missing_extra
from ._token_base import TokenCounterBase

if TYPE_CHECKING:
    import jinja2
    import tokenizers

__all__ = ["DEFAULT_CHAT_TEMPLATE", "HuggingFaceTokenCounter"]

logger = logging.getLogger(__name__)

DEFAULT_CHAT_TEMPLATE = (
    "{%- if tools %}{{ '<|im_start|>system\n# Tools\n' + (tools | tojson) + '<|im_end|>\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\n' }}"
    "{%- if message['content'] is string %}{{- message['content'] }}"
    "{%- elif message['content'] %}"
    "{%- for part in message['content'] %}"
    "{%- if part is mapping and part['text'] is string %}{{- part['text'] }}{%- endif %}"
    "{%- endfor %}"
    "{%- endif %}"
    "{%- if message['tool_calls'] %}{{- message['tool_calls'] | tojson }}{%- endif %}"
    "{{- '<|im_end|>\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- endif %}"
)
"""The ChatML layout (``<|im_start|>role\\n...<|im_end|>\\n``, as Qwen, SmolLM2 and many other
chat models use), for tokenizers that come without a chat template. Text parts of list
contents are concatenated, tool calls and tool schemas count as their JSON."""

# Special-token entries of tokenizer_config.json / special_tokens_map.json that transformers
# passes to chat templates as variables.
_SPECIAL_TOKENS = (
    "bos_token",
    "eos_token",
    "unk_token",
    "sep_token",
    "pad_token",
    "cls_token",
    "mask_token",
    "additional_special_tokens",
)
# Arguments AgentScope passes to AutoTokenizer.from_pretrained that this counter reads.
_KNOWN_KWARGS = ("chat_template", "cache_dir", "revision")


def _token_text(value: Any) -> Any:
    """A special token as text: configs write either the string or an AddedToken dict."""
    if isinstance(value, dict):
        return value.get("content")
    if isinstance(value, list):
        return [_token_text(v) for v in value]
    return value


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ValueError(f"cannot read {path}: {error}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path} does not hold a JSON object")
    return data


def _from_cache(name: str, cache_dir: Any, revision: str | None) -> Path | None:
    """``tokenizer.json`` of *name* in the local Hugging Face cache, or ``None``. Offline."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - tokenizers depends on huggingface_hub
        return None
    try:
        found = try_to_load_from_cache(
            name, "tokenizer.json", cache_dir=cache_dir, revision=revision
        )
    except Exception:
        # Not a valid repository id (huggingface_hub raises its own validation errors).
        return None
    return Path(found) if isinstance(found, str) else None


def _generation_extension(jinja2_module: Any) -> type:
    """transformers' ``{% generation %}...{% endgeneration %}`` tag, rendering its body
    unchanged (transformers uses it to mark assistant tokens; counting needs only the text)."""
    from jinja2.ext import Extension

    class GenerationTag(Extension):
        tags = {"generation"}  # noqa: RUF012 - jinja2's own class attribute

        def parse(self, parser: Any) -> Any:
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            call = self.call_method("_render_body")
            return jinja2_module.nodes.CallBlock(call, [], [], body).set_lineno(lineno)

        def _render_body(self, caller: Any) -> str:
            return str(caller())

    return GenerationTag


def _compile(template: str, source: str) -> jinja2.Template:
    """Compile a chat template in an environment that behaves as transformers' does.

    :raises ValueError: for a template with a syntax error, naming where it came from.
    """
    import jinja2
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message: str) -> None:
        raise jinja2.exceptions.TemplateError(message)

    def tojson(
        value: Any,
        ensure_ascii: bool = False,
        indent: int | None = None,
        separators: tuple[str, str] | None = None,
        sort_keys: bool = False,
    ) -> str:
        return json.dumps(
            value,
            ensure_ascii=ensure_ascii,
            indent=indent,
            separators=separators,
            sort_keys=sort_keys,
        )

    def strftime_now(format: str) -> str:
        return datetime.now().strftime(format)

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=[_generation_extension(jinja2), jinja2.ext.loopcontrols],
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    try:
        return env.from_string(template)
    except jinja2.TemplateSyntaxError as error:
        raise ValueError(f"the chat template from {source} is not valid Jinja: {error}") from None


class HuggingFaceTokenCounter(TokenCounterBase):
    """Count the tokens of a chat prompt with a Hugging Face tokenizer, fully offline.

    *pretrained_model_name_or_path* is, in this order:

    * a ``tokenizer.json`` file, or a directory holding one (a model downloaded with
      ``hf download <repo> tokenizer.json tokenizer_config.json``, a ``save_pretrained``
      directory); the chat template and special tokens are read from the files beside it;
    * a Hub repository id whose ``tokenizer.json`` is already in the local Hugging Face
      cache (``$HF_HOME/hub``, or *cache_dir*), e.g. after ``transformers`` loaded it once.

    Nothing is ever downloaded: another name raises :class:`FileNotFoundError` saying how
    to get the files. The chat template comes from ``chat_template.jinja``,
    ``chat_template.json`` or the ``chat_template`` entry of ``tokenizer_config.json`` (a
    list of named templates picks ``"tool_use"`` when tools are counted and ``"default"``
    otherwise, as transformers does); a ``chat_template=`` argument, here or to
    :meth:`count`, takes precedence. Without any, :data:`DEFAULT_CHAT_TEMPLATE` (ChatML) is
    used — AgentScope raises ``ValueError`` instead; :attr:`has_chat_template` tells which.

    :param pretrained_model_name_or_path: the local path or the cached repository id.
    :param use_mirror: accepted for AgentScope compatibility; nothing is downloaded, so no
        mirror is used (and, unlike AgentScope, ``HF_ENDPOINT`` is left alone).
    :param use_fast: accepted for AgentScope compatibility; ``tokenizer.json`` is always
        the fast (Rust) tokenizer, which counts as the slow one does for released models.
    :param trust_remote_code: accepted for AgentScope compatibility; no repository code is
        ever run (a tokenizer that exists only as custom code cannot be loaded).
    :param kwargs: ``chat_template`` (a Jinja template, or the name of one of the
        tokenizer's named templates), ``cache_dir`` and ``revision`` (for the cache lookup).
        Other ``from_pretrained`` arguments are ignored with a warning.
    :raises ImportError: when ``tokenizers`` or ``jinja2`` is not installed (the
        ``huggingface`` extra).
    :raises FileNotFoundError: when no ``tokenizer.json`` is found locally (the message
        says how to download it).
    :raises ValueError: when the tokenizer's configuration or chat template cannot be read.
    """

    def __init__(
        self,
        pretrained_model_name_or_path: str | os.PathLike[str],
        use_mirror: bool = False,
        use_fast: bool = False,
        trust_remote_code: bool = False,
        **kwargs: Any,
    ) -> None:
        try:
            # Imported here: applications that never count with a Hugging Face tokenizer
            # do not pay for (or need) these packages.
            import jinja2  # noqa: F401
            import tokenizers  # noqa: F401
        except ImportError as error:
            raise missing_extra("HuggingFaceTokenCounter", "huggingface", error.name) from error
        unknown = sorted(set(kwargs) - set(_KNOWN_KWARGS))
        if unknown:
            logger.warning("HuggingFaceTokenCounter ignores the arguments %s", unknown)
        self.pretrained_model_name_or_path = os.fspath(pretrained_model_name_or_path)
        self.use_mirror = use_mirror
        self.use_fast = use_fast
        self.trust_remote_code = trust_remote_code
        self.tokenizer_file = self._locate(kwargs.get("cache_dir"), kwargs.get("revision"))
        folder = self.tokenizer_file.parent
        config = self._config(folder)
        self.special_tokens: dict[str, Any] = {
            key: _token_text(config[key]) for key in _SPECIAL_TOKENS if config.get(key)
        }
        templates = self._templates(folder, config)
        explicit = kwargs.get("chat_template")
        self._template_source = str(folder)
        if isinstance(explicit, str) and explicit not in templates:
            templates = {"default": explicit}
            self._template_source = "the chat_template argument"
        self.has_chat_template = bool(templates)
        self._templates_by_name = templates or {"default": DEFAULT_CHAT_TEMPLATE}
        self._default_name = explicit if explicit in self._templates_by_name else None
        self._compiled: dict[str, jinja2.Template] = {}
        # Templates passed to count() as text, compiled once each.
        self._given_templates: dict[str, jinja2.Template] = {}
        for name in self._templates_by_name:
            self._compiled_template(name)
        self._tokenizer: tokenizers.Tokenizer | None = None

    def __repr__(self) -> str:
        return (
            "HuggingFaceTokenCounter("
            f"pretrained_model_name_or_path={self.pretrained_model_name_or_path!r})"
        )

    @property
    def chat_template(self) -> str:
        """The template :meth:`count` uses when it is given no tools and no
        ``chat_template`` (the tokenizer's own, or :data:`DEFAULT_CHAT_TEMPLATE`)."""
        return self._templates_by_name[self._template_name(None, None)]

    def _locate(self, cache_dir: Any, revision: str | None) -> Path:
        name = self.pretrained_model_name_or_path
        path = Path(name).expanduser()
        if path.is_file():
            return path
        if path.is_dir():
            candidate = path / "tokenizer.json"
            if candidate.is_file():
                return candidate
            raise FileNotFoundError(
                f"{path} holds no tokenizer.json. A transformers tokenizer writes one with "
                "AutoTokenizer.from_pretrained(...).save_pretrained(directory) (fast tokenizers "
                "only)."
            )
        cached = _from_cache(name, cache_dir, revision)
        if cached is not None:
            return cached
        raise FileNotFoundError(
            f"HuggingFaceTokenCounter loads tokenizers offline, and {name!r} is neither a "
            "local tokenizer.json or directory nor a repository in the local Hugging Face "
            f"cache. Download the files once (e.g. `hf download {name} tokenizer.json "
            "tokenizer_config.json --local-dir DIR`) and pass the directory."
        )

    @staticmethod
    def _config(folder: Path) -> dict[str, Any]:
        """tokenizer_config.json, with the tokens of special_tokens_map.json over its own (as
        transformers loads them)."""
        config: dict[str, Any] = {}
        config_file = folder / "tokenizer_config.json"
        if config_file.is_file():
            config = _read_json(config_file)
        tokens_file = folder / "special_tokens_map.json"
        if tokens_file.is_file():
            config.update(_read_json(tokens_file))
        return config

    @staticmethod
    def _templates(folder: Path, config: dict[str, Any]) -> dict[str, str]:
        """The tokenizer's chat templates by name (``"default"`` for a single one)."""
        jinja_file = folder / "chat_template.jinja"
        if jinja_file.is_file():
            return {"default": jinja_file.read_text(encoding="utf-8")}
        template: Any = None
        json_file = folder / "chat_template.json"
        if json_file.is_file():
            template = _read_json(json_file).get("chat_template")
        if template is None:
            template = config.get("chat_template")
        if template is None:
            return {}
        if isinstance(template, str):
            return {"default": template}
        if isinstance(template, list) and all(
            isinstance(t, dict)
            and isinstance(t.get("name"), str)
            and isinstance(t.get("template"), str)
            for t in template
        ):
            return {t["name"]: t["template"] for t in template}
        raise ValueError(
            f"the chat_template of the tokenizer in {folder} is neither a string nor a list "
            "of {'name': ..., 'template': ...} entries"
        )

    def _template_name(self, chat_template: str | None, tools: Any) -> str:
        """Which template to use, following transformers' choice among named templates."""
        names = self._templates_by_name
        if chat_template is not None:
            return chat_template
        if self._default_name is not None:
            return self._default_name
        if tools and "tool_use" in names:
            return "tool_use"
        if "default" in names:
            return "default"
        raise ValueError(
            f"the tokenizer has several chat templates ({sorted(names)}) and none is named "
            "'default': pass chat_template=<name>"
        )

    def _compiled_template(self, name: str) -> jinja2.Template:
        compiled = self._compiled.get(name)
        if compiled is None:
            source = f"{self._template_source} ({name!r})"
            compiled = _compile(self._templates_by_name[name], source)
            self._compiled[name] = compiled
        return compiled

    async def count(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        **kwargs: Any,
    ) -> int:
        """Count the tokens of the chat template rendered with *messages* and *tools*.

        As AgentScope's, the prompt is rendered with ``add_generation_prompt=False`` unless
        given here; further keyword arguments are template variables (as in transformers'
        ``apply_chat_template``).

        :param messages: chat messages (``{"role", "content", ...}`` dicts), passed to the
            template as they are.
        :param tools: tool JSON schemas, passed to the template as ``tools``.
        :param kwargs: ``chat_template`` (a template, or a named template of the tokenizer),
            ``add_generation_prompt``, and any other template variable (``documents``,
            ``enable_thinking``...).
        :raises ValueError: when the template rejects the messages (its
            ``raise_exception``) or cannot render them, or the tokenizer file is invalid.
        """
        chat_template = kwargs.pop("chat_template", None)
        if chat_template is not None and chat_template not in self._templates_by_name:
            template = self._given_templates.get(chat_template)
            if template is None:
                template = _compile(chat_template, "the chat_template argument")
                self._given_templates[chat_template] = template
        else:
            template = self._compiled_template(self._template_name(chat_template, tools))
        variables = {
            **self.special_tokens,
            "add_generation_prompt": False,
            "documents": None,
            **kwargs,
            "messages": messages,
            "tools": tools,
        }
        return await anyio.to_thread.run_sync(self._count_sync, template, variables)

    def _count_sync(self, template: jinja2.Template, variables: dict[str, Any]) -> int:
        import jinja2

        try:
            text = template.render(**variables)
        except jinja2.TemplateError as error:
            raise ValueError(f"the chat template cannot render these messages: {error}") from None
        # The template wrote the special tokens itself: adding them again would overcount.
        ids = self._get_tokenizer().encode(text, add_special_tokens=False).ids
        return len(ids)

    def _get_tokenizer(self) -> tokenizers.Tokenizer:
        if self._tokenizer is None:
            from tokenizers import Tokenizer

            try:
                self._tokenizer = Tokenizer.from_file(str(self.tokenizer_file))
            except Exception as error:
                raise ValueError(
                    f"{self.tokenizer_file} is not a valid tokenizer.json: {error}"
                ) from None
        return self._tokenizer
