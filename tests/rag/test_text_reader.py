"""TextReader: AgentScope's chunking rules (checked against chunks recorded from AgentScope
1.0.21), the dependency-free sentence splitter, unique chunk ids, files and bad files."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import SupportsIndex

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentscope_rt.exception import ReaderError
from agentscope_rt.rag import TextReader, split_sentences
from agentscope_rt.rag._reader import split_text

_FIXTURES = json.loads(
    (Path(__file__).parent / "fixtures" / "agentscope_text_reader.json").read_text("utf-8")
)


@pytest.mark.parametrize(
    "case", _FIXTURES, ids=[f"{c['name']}-{c['split_by']}-{c['chunk_size']}" for c in _FIXTURES]
)
async def test_char_and_paragraph_chunks_match_agentscope(case: dict) -> None:
    docs = await TextReader(case["chunk_size"], case["split_by"])(case["text"])
    expected = case["chunks"]
    if case["split_by"] == "paragraph":
        # AgentScope keeps whitespace-only lines as chunks; they are dropped here.
        expected = [chunk for chunk in expected if chunk.strip()]
    assert [d.metadata.content["text"] for d in docs] == expected
    assert {d.metadata.doc_id for d in docs} == {case["doc_id"]}
    assert [d.metadata.chunk_id for d in docs] == list(range(len(docs)))
    assert {d.metadata.total_chunks for d in docs} == {len(docs)}
    # AgentScope gives every chunk the document's id; here each chunk has its own.
    assert case["ids"] == [case["doc_id"]]
    assert len({d.id for d in docs}) == len(docs)


async def test_chunk_ids_are_stable_across_reads() -> None:
    text = "One. Two. Three."
    first, second = await TextReader(8)(text), await TextReader(8)(text)
    assert [d.id for d in first] == [d.id for d in second]
    assert first[0].metadata.doc_id == hashlib.sha256(text.encode()).hexdigest()
    assert TextReader().get_doc_id(text) == first[0].metadata.doc_id


async def test_sentence_mode_makes_one_chunk_per_sentence_and_cuts_long_ones() -> None:
    text = "Dr. Smith arrived at 3.30 p.m. today. Did he stay? Yes! " + "word " * 10
    docs = await TextReader(20, "sentence")(text)
    assert [d.metadata.content["text"] for d in docs] == [
        "Dr. Smith arrived at",
        " 3.30 p.m. today.",
        "Did he stay?",
        "Yes!",
        "word word word word ",
        "word word word word ",
        "word word",
    ]


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        (
            "AgentScope is a framework. It runs agents! Does it use e.g. tools? "
            "Yes, etc. and more.",
            [
                "AgentScope is a framework.",
                "It runs agents!",
                "Does it use e.g. tools?",
                "Yes, etc. and more.",
            ],
        ),
        (
            "J. R. R. Tolkien wrote it. The U.S. is big.",
            ["J. R. R. Tolkien wrote it.", "The U.S. is big."],
        ),
        ('He said "Stop." Then he left.', ['He said "Stop."', "Then he left."]),
        ("Pi is 3.14159. It never ends", ["Pi is 3.14159.", "It never ends"]),
        ("你好，世界。这是测试！真的吗？是的", ["你好，世界。", "这是测试！", "真的吗？", "是的"]),
        ("他说：“走吧。”我们走了。", ["他说：“走吧。”", "我们走了。"]),
        ("A heading\n\nThe body text.", ["A heading", "The body text."]),
        ("Mixed English. 还有中文。", ["Mixed English.", "还有中文。"]),
        ("", []),
        ("   \n  ", []),
    ],
)
def test_sentence_splitter(text: str, sentences: list[str]) -> None:
    assert split_sentences(text) == sentences


async def test_reads_a_text_file_named_by_string_or_path(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("Line one.\nLine two.", encoding="utf-8")
    by_str = await TextReader(100, "paragraph")(str(path))
    by_path = await TextReader(100, "paragraph")(path)
    assert [d.metadata.content["text"] for d in by_str] == ["Line one.", "Line two."]
    assert [d.id for d in by_path] == [d.id for d in by_str]
    # A string that names no file is text, as in AgentScope.
    docs = await TextReader(100)(str(tmp_path / "missing.txt"))
    assert docs[0].metadata.content["text"] == str(tmp_path / "missing.txt")
    assert await TextReader()("") == []


async def test_a_byte_order_mark_is_not_text(tmp_path: Path) -> None:
    # Windows editors start UTF-8 files with a byte order mark: it is not part of the text
    # (nor of the first chunk, nor of the document id).
    marked = tmp_path / "marked.txt"
    marked.write_bytes("\ufeffFirst line.\nSecond line.".encode())
    plain = tmp_path / "plain.txt"
    plain.write_text("First line.\nSecond line.", encoding="utf-8")
    docs = await TextReader(100, "paragraph")(marked)
    assert [d.metadata.content["text"] for d in docs] == ["First line.", "Second line."]
    assert [d.id for d in docs] == [d.id for d in await TextReader(100, "paragraph")(plain)]


async def test_bad_text_files_raise_reader_errors_naming_them(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("  \n", encoding="utf-8")
    binary = tmp_path / "data.txt"
    binary.write_bytes(b"\xff\xfe\x00bad")
    cases = [
        (empty, "empty"),
        (binary, "not UTF-8"),
        (tmp_path / "missing.txt", "no such file"),
        (tmp_path, "not a file"),
    ]
    for path, message in cases:
        with pytest.raises(ReaderError, match=message) as info:
            await TextReader()(path)
        assert info.value.path == str(path)
        assert str(path) in str(info.value)
        assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(("size", "split_by"), [(0, "char"), (-1, "char"), (10, "word")])
def test_invalid_arguments(size: int, split_by: str) -> None:
    with pytest.raises(ValueError, match=r"chunk_size|split_by"):
        TextReader(size, split_by)  # type: ignore[arg-type]


@pytest.mark.parametrize("size", [1.5, "512", None, True])
def test_a_chunk_size_that_is_not_an_integer_is_named_as_such(size: object) -> None:
    with pytest.raises(ValueError, match="chunk_size must be a positive integer"):
        TextReader(size)  # type: ignore[arg-type]


_TEXTS = st.text(alphabet=st.sampled_from(list("ab cd.!?\n\t。！？你好\"'”")), max_size=200)


@given(text=_TEXTS, size=st.integers(1, 30))
def test_char_chunks_are_the_text_in_windows(text: str, size: int) -> None:
    chunks = split_text(text, size, "char")
    assert "".join(chunks) == text
    assert all(0 < len(c) <= size for c in chunks)


@given(text=_TEXTS, size=st.integers(1, 30), split_by=st.sampled_from(["sentence", "paragraph"]))
def test_sentence_and_paragraph_chunks_lose_nothing_but_white_space(
    text: str, size: int, split_by: str
) -> None:
    chunks = split_text(text, size, split_by)  # type: ignore[arg-type]
    assert all(0 < len(c) <= size and c.strip() for c in chunks)

    def visible(s: str) -> str:
        return "".join(s.split())

    assert visible("".join(chunks)) == visible(text)


class _CountingText(str):
    """A text that counts the characters its searches and slices look at."""

    examined = 0

    def rfind(self, sub: str, start: int = 0, end: int | None = None) -> int:  # type: ignore[override]
        stop = len(self) if end is None else end
        _CountingText.examined += max(stop - start, 0)
        return super().rfind(sub, start, stop)

    def __getitem__(self, key: SupportsIndex | slice) -> str:
        result = super().__getitem__(key)
        _CountingText.examined += len(result)
        return result


def test_sentence_splitting_looks_at_each_character_a_few_times_only() -> None:
    # Each full stop looked back for the start of its word through the whole text before it
    # (for a line break or tab it never found): quadratic, 11 s for a 4.8 MB file on one line.
    sentence = "Dr. Smith met the team at 5 p.m. in the lab. It went well! "
    text = _CountingText(sentence * 2000)
    _CountingText.examined = 0
    sentences = split_sentences(text)
    assert len(sentences) == 4000
    assert _CountingText.examined < 10 * len(text)


@given(st.text(alphabet=st.sampled_from(list("ab A. \t\n\r")), max_size=80), st.data())
def test_a_word_starts_after_the_last_space_tab_or_line_break(
    text: str, data: st.DataObject
) -> None:
    from agentscope_rt.rag._reader._utils import _word_start

    end = data.draw(st.integers(0, len(text)))
    last_blank = max(text.rfind(" ", 0, end), text.rfind("\n", 0, end), text.rfind("\t", 0, end))
    assert _word_start(text, end) == last_blank + 1
