"""OpenAI image, speech and vision endpoints as tool functions, through the ``openai`` SDK.

See the `OpenAI API documentation <https://platform.openai.com/docs/overview>`_ for the
models and options. Each call builds an ``openai.AsyncOpenAI`` client with the given key (the
SDK reads ``OPENAI_BASE_URL`` when it is set, so an OpenAI-compatible server works too),
sends one request under the project's retry policy and closes the client, shielded, however
the call ends. Every failure — a provider error, a missing file, a failed download — becomes
a ToolResponse whose text starts as AgentScope's does (``"Failed to generate image: ..."``);
the API key never appears in it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from ...message import Base64Source, ImageBlock, TextBlock, URLSource
from .._response import ToolResponse
from ._common import (
    Media,
    audio_response,
    error_response,
    first_text,
    is_web_url,
    read_media,
    redact,
    request,
)

if TYPE_CHECKING:
    import openai

__all__ = [
    "openai_audio_to_text",
    "openai_create_image_variation",
    "openai_edit_image",
    "openai_image_to_text",
    "openai_text_to_audio",
    "openai_text_to_image",
]

T = TypeVar("T")

# Image types the vision and image endpoints take, by MIME type.
_IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")


async def _call(api_key: str, send: Callable[[openai.AsyncOpenAI], Awaitable[T]]) -> T:
    """Run ``send(client)`` on a fresh client under the retry policy, then close the client.

    :raises ModelAPIError: for a provider error (the key scrubbed from the message).
    :raises openai.OpenAIError: when no API key is given or set in ``OPENAI_API_KEY``.
    """
    import openai

    from ..._provider import close_sdk_client

    # The SDK's own retries are off: the project's policy is the only one.
    client = openai.AsyncOpenAI(api_key=api_key or None, max_retries=0)
    try:
        return await request("openai", lambda: send(client), (api_key,))
    finally:
        await close_sdk_client(client)


def _failure(prefix: str, exc: Exception, api_key: str) -> ToolResponse:
    return error_response(f"{prefix}{redact(str(exc), (api_key,))}")


def _image_blocks(response: Any) -> list[ImageBlock]:
    """Image blocks of an ``ImagesResponse``: a URL block for each item with a URL, a base64
    block for each item with ``b64_json`` (whichever the server sent)."""
    media_type = f"image/{getattr(response, 'output_format', None) or 'png'}"
    blocks: list[ImageBlock] = []
    for item in response.data or []:
        if item.b64_json:
            blocks.append(
                ImageBlock(source=Base64Source(media_type=media_type, data=item.b64_json))
            )
        elif item.url:
            blocks.append(ImageBlock(source=URLSource(url=item.url)))
    return blocks


def _images_response(response: Any) -> ToolResponse:
    blocks = _image_blocks(response)
    if not blocks:
        return error_response("Error: Failed to generate images: the response held no image")
    return ToolResponse(content=list(blocks))


def _upload(media: Media, default_type: str) -> tuple[str, bytes, str]:
    """The ``(file name, bytes, MIME type)`` tuple the SDK uploads as one multipart file."""
    return (media.name, media.data, media.media_type or default_type)


async def openai_text_to_image(
    prompt: str,
    api_key: str,
    n: int = 1,
    model: Literal["dall-e-2", "dall-e-3", "gpt-image-1"] = "dall-e-2",
    size: Literal[
        "256x256",
        "512x512",
        "1024x1024",
        "1792x1024",
        "1024x1792",
    ] = "256x256",
    quality: Literal["auto", "standard", "hd", "high", "medium", "low"] = "auto",
    style: Literal["vivid", "natural"] = "vivid",
    response_format: Literal["url", "b64_json"] = "url",
) -> ToolResponse:
    """Generate image(s) based on the given prompt, and return image URL(s) or
    base64 data.

    Args:
        prompt (`str`):
            The text prompt to generate images.
        api_key (`str`):
            The API key for the OpenAI API.
        n (`int`, defaults to `1`):
            The number of images to generate.
        model (`Literal["dall-e-2", "dall-e-3", "gpt-image-1"]`, defaults to `"dall-e-2"`):
            The model to use for image generation.
        size (`Literal["256x256", "512x512", "1024x1024", "1792x1024", "1024x1792"]`, \
defaults to `"256x256"`):
            The size of the generated images. Must be one of 1024x1024, 1536x1024
            (landscape), 1024x1536 (portrait), or auto (default value) for gpt-image-1,
            one of 256x256, 512x512, or 1024x1024 for dall-e-2, and one of 1024x1024,
            1792x1024, or 1024x1792 for dall-e-3.
        quality (`Literal["auto", "standard", "hd", "high", "medium", "low"]`, defaults \
to `"auto"`):
            The quality of the image that will be generated. `auto` (default value)
            will automatically select the best quality for the given model; `high`,
            `medium` and `low` are supported for gpt-image-1; `hd` and `standard` are
            supported for dall-e-3; `standard` is the only option for dall-e-2.
        style (`Literal["vivid", "natural"]`, defaults to `"vivid"`):
            The style of the generated images, only supported for dall-e-3. `vivid`
            causes the model to lean towards generating hyper-real and dramatic images;
            `natural` causes the model to produce more natural, less hyper-real looking
            images.
        response_format (`Literal["url", "b64_json"]`, defaults to `"url"`):
            The format in which generated images with dall-e-2 and dall-e-3 are
            returned. Must be one of "url" or "b64_json". URLs are only valid for 60
            minutes after the image has been generated. This parameter isn't supported
            for gpt-image-1 which will always return base64-encoded images.

    Returns:
        `ToolResponse`:
            The generated images (URL or base64 image blocks), or a text block
            saying why the generation failed.
    """
    kwargs: dict[str, Any] = {"model": model, "prompt": prompt, "n": n, "size": size}
    if model == "dall-e-3":
        kwargs["style"] = style
    if model != "dall-e-2":
        kwargs["quality"] = quality
    if model != "gpt-image-1":
        kwargs["response_format"] = response_format
    try:
        response = await _call(api_key, lambda client: client.images.generate(**kwargs))
    except Exception as exc:
        return _failure("Failed to generate image: ", exc, api_key)
    return _images_response(response)


async def openai_edit_image(
    image_url: str,
    prompt: str,
    api_key: str,
    model: Literal["dall-e-2", "gpt-image-1"] = "dall-e-2",
    mask_url: str | None = None,
    n: int = 1,
    size: Literal["256x256", "512x512", "1024x1024"] = "256x256",
    response_format: Literal["url", "b64_json"] = "url",
) -> ToolResponse:
    """Edit an image based on the provided mask and prompt, and return the edited
    image URL(s) or base64 data.

    Args:
        image_url (`str`):
            The file path or URL to the image that needs editing.
        prompt (`str`):
            The text prompt describing the edits to be made to the image.
        api_key (`str`):
            The API key for the OpenAI API.
        model (`Literal["dall-e-2", "gpt-image-1"]`, defaults to `"dall-e-2"`):
            The model to use for image generation.
        mask_url (`str | None`, defaults to `None`):
            The file path or URL to the mask image that specifies the regions to be
            edited.
        n (`int`, defaults to `1`):
            The number of edited images to generate.
        size (`Literal["256x256", "512x512", "1024x1024"]`, defaults to `"256x256"`):
            The size of the edited images.
        response_format (`Literal["url", "b64_json"]`, defaults to `"url"`):
            The format in which generated images are returned. Must be one of "url" or
            "b64_json". URLs are only valid for 60 minutes after generation. This
            parameter isn't supported for gpt-image-1 which will always return
            base64-encoded images.

    Returns:
        `ToolResponse`:
            The edited images (URL or base64 image blocks), or a text block saying
            why the edit failed.
    """
    try:
        image = await read_media(image_url, "image.png")
        kwargs: dict[str, Any] = {
            "model": model,
            "image": _upload(image, "image/png"),
            "prompt": prompt,
            "n": n,
            "size": size,
        }
        if mask_url:
            kwargs["mask"] = _upload(await read_media(mask_url, "mask.png"), "image/png")
        if model == "dall-e-2":
            kwargs["response_format"] = response_format
        response = await _call(api_key, lambda client: client.images.edit(**kwargs))
    except Exception as exc:
        return _failure("Failed to generate image: ", exc, api_key)
    return _images_response(response)


async def openai_create_image_variation(
    image_url: str,
    api_key: str,
    n: int = 1,
    model: Literal["dall-e-2"] = "dall-e-2",
    size: Literal["256x256", "512x512", "1024x1024"] = "256x256",
    response_format: Literal["url", "b64_json"] = "url",
) -> ToolResponse:
    """Create variations of an image and return the image URL(s) or base64 data.

    Args:
        image_url (`str`):
            The file path or URL to the image from which variations will be
            generated.
        api_key (`str`):
            The API key for the OpenAI API.
        n (`int`, defaults to `1`):
            The number of image variations to generate.
        model (`Literal["dall-e-2"]`, defaults to `"dall-e-2"`):
            The model to use for image variation.
        size (`Literal["256x256", "512x512", "1024x1024"]`, defaults to `"256x256"`):
            The size of the generated image variations.
        response_format (`Literal["url", "b64_json"]`, defaults to `"url"`):
            The format in which generated images are returned. Must be one of url or
            b64_json. URLs are only valid for 60 minutes after the image has been
            generated.

    Returns:
        `ToolResponse`:
            The image variations (URL or base64 image blocks), or a text block
            saying why they could not be made.
    """
    try:
        image = await read_media(image_url, "image.png")
        response = await _call(
            api_key,
            lambda client: client.images.create_variation(
                image=_upload(image, "image/png"),
                model=model,
                n=n,
                size=size,
                response_format=response_format,
            ),
        )
    except Exception as exc:
        return _failure("Failed to generate image: ", exc, api_key)
    return _images_response(response)


async def _image_part(url: str) -> dict[str, Any]:
    """One ``image_url`` content part: web and data URLs as given, local files inlined as a
    base64 data URL.

    :raises ValueError: for a path that is no local image file and no web URL.
    """
    if is_web_url(url) or url.startswith("data:"):
        return {"type": "image_url", "image_url": {"url": url}}
    try:
        media = await read_media(url, "image")
    except PermissionError:
        raise  # a file outside the allowed folders: the error says how to allow it
    except OSError:
        raise ValueError(
            f'Invalid image URL: "{url}". It should be a local file or a web URL.'
        ) from None
    if media.media_type not in _IMAGE_TYPES:
        raise ValueError(
            f'The file "{url}" is not an image OpenAI accepts (png, jpeg, gif or webp).'
        )
    data_url = f"data:{media.media_type};base64,{media.as_base64()}"
    return {"type": "image_url", "image_url": {"url": data_url}}


async def openai_image_to_text(
    image_urls: str | list[str],
    api_key: str,
    prompt: str = "Describe the image",
    model: str = "gpt-4o",
) -> ToolResponse:
    """Generate descriptive text for given image(s) using a specified model, and
    return the generated text.

    Args:
        image_urls (`str | list[str]`):
            The URL or list of URLs pointing to the images that need to be
            described.
        api_key (`str`):
            The API key for the OpenAI API.
        prompt (`str`, defaults to `"Describe the image"`):
            The prompt that instructs the model on how to describe the image(s).
        model (`str`, defaults to `"gpt-4o"`):
            The model to use for generating the text descriptions.

    Returns:
        `ToolResponse`:
            The generated description as a text block, or a text block saying why
            it failed.
    """
    urls = [image_urls] if isinstance(image_urls, str) else list(image_urls)
    try:
        content = [await _image_part(url) for url in urls]
        content.append({"type": "text", "text": prompt})
        messages = [{"role": "user", "content": content}]
        response = await _call(
            api_key,
            lambda client: client.chat.completions.create(messages=messages, model=model),  # type: ignore[arg-type]
        )
        choices = response.choices
        text = first_text(choices[0].message.content) if choices else None
    except Exception as exc:
        return _failure("Failed to generate text: ", exc, api_key)
    if text is None:
        return error_response("Error: Failed to generate text: the response held no text")
    return ToolResponse(content=[TextBlock(text=text)])


async def openai_text_to_audio(
    text: str,
    api_key: str,
    model: Literal["tts-1", "tts-1-hd", "gpt-4o-mini-tts"] = "tts-1",
    voice: Literal[
        "alloy",
        "ash",
        "ballad",
        "coral",
        "echo",
        "fable",
        "nova",
        "onyx",
        "sage",
        "shimmer",
    ] = "alloy",
    speed: float = 1.0,
    res_format: Literal["mp3", "opus", "aac", "flac", "wav", "pcm"] = "mp3",
) -> ToolResponse:
    """Convert text to an audio file using a specified model and voice.

    Args:
        text (`str`):
            The text to convert to audio.
        api_key (`str`):
            The API key for the OpenAI API.
        model (`Literal["tts-1", "tts-1-hd", "gpt-4o-mini-tts"]`, defaults to `"tts-1"`):
            The model to use for text-to-speech conversion.
        voice (`Literal["alloy", "ash", "ballad", "coral", "echo", "fable", "nova", \
"onyx", "sage", "shimmer"]`, defaults to `"alloy"`):
            The voice to use for the audio output.
        speed (`float`, defaults to `1.0`):
            The speed of the audio playback. A value of 1.0 is normal speed.
        res_format (`Literal["mp3", "opus", "aac", "flac", "wav", "pcm"]`, defaults to \
`"mp3"`):
            The format of the audio file.

    Returns:
        `ToolResponse`:
            The speech as a base64 audio block, or a text block saying why it
            failed.
    """
    try:
        response = await _call(
            api_key,
            lambda client: client.audio.speech.create(
                model=model, voice=voice, speed=speed, input=text, response_format=res_format
            ),
        )
        audio = response.content
    except Exception as exc:
        return _failure("Error: Failed to generate audio. ", exc, api_key)
    return audio_response(audio, f"audio/{res_format}")


async def openai_audio_to_text(
    audio_file_url: str,
    api_key: str,
    language: str = "en",
    temperature: float = 0.2,
) -> ToolResponse:
    """Convert an audio file to text using OpenAI's transcription service.

    Args:
        audio_file_url (`str`):
            The file path or URL to the audio file that needs to be transcribed.
        api_key (`str`):
            The API key for the OpenAI API.
        language (`str`, defaults to `"en"`):
            The language of the input audio in ISO-639-1 format (e.g., "en", "zh",
            "fr"). Improves accuracy and latency.
        temperature (`float`, defaults to `0.2`):
            The temperature for the transcription, which affects the randomness of
            the output.

    Returns:
        `ToolResponse`:
            The transcription as a text block, or a text block saying why it
            failed.
    """
    try:
        audio = await read_media(audio_file_url, "audio.mp3")
        transcription = await _call(
            api_key,
            lambda client: client.audio.transcriptions.create(
                model="whisper-1",
                file=_upload(audio, "application/octet-stream"),
                language=language,
                temperature=temperature,
            ),
        )
    except Exception as exc:
        return _failure("Error: Failed to transcribe audio: ", exc, api_key)
    return ToolResponse(content=[TextBlock(text=transcription.text)])
