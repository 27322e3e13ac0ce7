"""The Word and PowerPoint readers cut documents into the chunks AgentScope 1.0.21 cuts them
into: the text below a slide's table stays with the slide, and a Word block opened by a picture's
paragraph or an empty paragraph keeps its leading line break.

The documents are built here with python-docx and python-pptx, with the features of
AgentScope's own sample files (tests/test.docx and tests/test.pptx at v1.0.21) that decide the
cutting: paragraphs with leading white space, empty paragraphs, pictures between paragraphs,
text above and below a table. The expected chunks were recorded by running AgentScope 1.0.21's
``WordReader`` and ``PowerPointReader`` on exactly these generated files (sentences split by
nltk's punkt algorithm; the texts hold no abbreviations, so its English model splits them the
same way).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from agentscope_rt.rag import PowerPointReader, WordReader, split_sentences

from ._files import png_bytes

IMAGE = "<image>"

# Recorded from AgentScope 1.0.21 on the files write_word and write_deck make (chunk_size=200),
# keyed by (split_by, separate_table).
# fmt: off
WORD_CHUNKS = {
    ("sentence", False): [
        "Quarterly report\nIndented first sentence.",
        "Second sentence follows.",
        "Table below:\n| Name | Age |\n| --- | --- |\n| Alice | 30 |\n\n\nText after the table.",
        "It goes on here.",
        IMAGE,
        "\nText between pictures.",
        IMAGE,
        "\nText before a table.",
        "| Key | Value |\n| --- | --- |\n| a | 1 |\n\n\nClosing words.",
    ],
    ("sentence", True): [
        "Quarterly report\nIndented first sentence.",
        "Second sentence follows.",
        "Table below:",
        "| Name | Age |\n| --- | --- |\n| Alice | 30 |",
        "\nText after the table.",
        "It goes on here.",
        IMAGE,
        "\nText between pictures.",
        IMAGE,
        "\nText before a table.",
        "| Key | Value |\n| --- | --- |\n| a | 1 |",
        "\nClosing words.",
    ],
    ("char", False): [
        "Quarterly report\nIndented first sentence. Second sentence follows.\nTable below:\n"
        "| Name | Age |\n| --- | --- |\n| Alice | 30 |\n\n\n"
        "Text after the table. It goes on here.",
        IMAGE,
        "\nText between pictures.",
        IMAGE,
        "\nText before a table.\n| Key | Value |\n| --- | --- |\n| a | 1 |\n\n\nClosing words.",
    ],
    ("char", True): [
        "Quarterly report\nIndented first sentence. Second sentence follows.\nTable below:",
        "| Name | Age |\n| --- | --- |\n| Alice | 30 |\n",
        "\nText after the table. It goes on here.",
        IMAGE,
        "\nText between pictures.",
        IMAGE,
        "\nText before a table.",
        "| Key | Value |\n| --- | --- |\n| a | 1 |\n",
        "\nClosing words.",
    ],
}
DECK_CHUNKS = {
    ("sentence", False): [
        "<slide index=1>\nResults\nText above the table.",
        "| Name | Score |\n| --- | --- |\n| Alice | 25 |\n| Bob | 26 |\n\nText below the table.",
        "It has two sentences.",
        "</slide>",
        "<slide index=2>\nOutlook\nText above the table\n| Quarter | Target |\n| --- | --- |\n"
        "| Q3 | 120 |\n\nText below the table\n</slide>",
        "<slide index=3>\nText above the picture.",
        IMAGE,
        "Text below the picture.",
        "</slide>",
    ],
    ("sentence", True): [
        "<slide index=1>\nResults\nText above the table.",
        "| Name | Score |\n| --- | --- |\n| Alice | 25 |\n| Bob | 26 |",
        "Text below the table.",
        "It has two sentences.",
        "</slide>",
        "<slide index=2>\nOutlook\nText above the table",
        "| Quarter | Target |\n| --- | --- |\n| Q3 | 120 |",
        "Text below the table\n</slide>",
        "<slide index=3>\nText above the picture.",
        IMAGE,
        "Text below the picture.",
        "</slide>",
    ],
    ("char", False): [
        "<slide index=1>\nResults\nText above the table.\n| Name | Score |\n| --- | --- |\n"
        "| Alice | 25 |\n| Bob | 26 |\n\nText below the table. It has two sentences.\n</slide>",
        "<slide index=2>\nOutlook\nText above the table\n| Quarter | Target |\n| --- | --- |\n"
        "| Q3 | 120 |\n\nText below the table\n</slide>",
        "<slide index=3>\nText above the picture.",
        IMAGE,
        "Text below the picture.\n</slide>",
    ],
    ("char", True): [
        "<slide index=1>\nResults\nText above the table.",
        "| Name | Score |\n| --- | --- |\n| Alice | 25 |\n| Bob | 26 |\n",
        "Text below the table. It has two sentences.\n</slide>",
        "<slide index=2>\nOutlook\nText above the table",
        "| Quarter | Target |\n| --- | --- |\n| Q3 | 120 |\n",
        "Text below the table\n</slide>",
        "<slide index=3>\nText above the picture.",
        IMAGE,
        "Text below the picture.\n</slide>",
    ],
}
# fmt: on


def write_word(path: Path) -> Path:
    """A report: a heading, an indented paragraph, a table followed by an empty paragraph, two
    pictures with text between them, a second table and a white-space-only paragraph."""
    import docx

    document = docx.Document()
    document.add_heading("Quarterly report", level=1)
    document.add_paragraph("   Indented first sentence. Second sentence follows.")
    document.add_paragraph("Table below:")
    _word_table(document, [["Name", "Age"], ["Alice", "30"]])
    document.add_paragraph("")
    document.add_paragraph("Text after the table. It goes on here.")
    document.add_picture(io.BytesIO(png_bytes()))
    document.add_paragraph("Text between pictures.")
    document.add_picture(io.BytesIO(png_bytes((0, 0, 255))))
    document.add_paragraph("  Text before a table.")
    _word_table(document, [["Key", "Value"], ["a", "1"]])
    document.add_paragraph("   ")
    document.add_paragraph("Closing words.")
    document.save(str(path))
    return path


def _word_table(document: Any, rows: list[list[str]]) -> None:
    table = document.add_table(rows=len(rows), cols=len(rows[0]))
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            table.cell(r, c).text = value


def write_deck(path: Path) -> Path:
    """A deck: slides 1 and 2 with a title, text above a table and text below it (slide 2, as
    AgentScope's sample, without full stops); slide 3 with text above and below a picture."""
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])  # title only
    slide.shapes.title.text = "Results"
    _text_box(slide, "Text above the table.", top=1.5)
    table = slide.shapes.add_table(3, 2, Inches(1), Inches(2.5), Inches(4), Inches(1)).table
    for r, row in enumerate([["Name", "Score"], ["Alice", "25"], ["Bob", "26"]]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    _text_box(slide, "Text below the table. It has two sentences.", top=4.5)
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "Outlook"
    _text_box(slide, "Text above the table", top=1.5)
    table = slide.shapes.add_table(2, 2, Inches(1), Inches(2.5), Inches(4), Inches(1)).table
    for r, row in enumerate([["Quarter", "Target"], ["Q3", "120"]]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    _text_box(slide, "Text below the table", top=4.5)
    slide = deck.slides.add_slide(deck.slide_layouts[6])  # blank
    _text_box(slide, "Text above the picture.", top=0.5)
    slide.shapes.add_picture(io.BytesIO(png_bytes()), Inches(1), Inches(1.5))
    _text_box(slide, "Text below the picture.", top=4)
    deck.save(str(path))
    return path


def _text_box(slide: Any, text: str, *, top: float) -> None:
    from pptx.util import Inches

    box = slide.shapes.add_textbox(Inches(1), Inches(top), Inches(6), Inches(1))
    box.text_frame.text = text


def _chunks(docs: list[Any]) -> list[str]:
    return [
        d.metadata.content["text"] if d.metadata.content.type == "text" else IMAGE for d in docs
    ]


_CASES = [("sentence", False), ("sentence", True), ("char", False), ("char", True)]
_IDS = [f"{split_by}-separate_table={separate}" for split_by, separate in _CASES]


# The file written, its name, its reader and AgentScope's chunks of it.
_OFFICE = {
    "word": (write_word, "report.docx", WordReader, WORD_CHUNKS),
    "powerpoint": (write_deck, "deck.pptx", PowerPointReader, DECK_CHUNKS),
}


@pytest.mark.parametrize(("split_by", "separate_table"), _CASES, ids=_IDS)
@pytest.mark.parametrize("kind", list(_OFFICE))
async def test_office_chunks_are_agentscopes(
    tmp_path: Path, kind: str, split_by: Any, separate_table: bool
) -> None:
    write, name, reader_class, expected = _OFFICE[kind]
    path = write(tmp_path / name)
    reader = reader_class(chunk_size=200, split_by=split_by, separate_table=separate_table)
    assert _chunks(await reader(path)) == expected[split_by, separate_table]


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        # Recorded from nltk's PunktSentenceTokenizer (the algorithm AgentScope splits with).
        ("\nA heading\n\nThe body. More.  ", ["\nA heading\n\nThe body.", "More."]),
        ("  \n  Lead. \n\n Tail!  ", ["  \n  Lead.", "Tail!"]),
        ("| a |\n\n\nText after. Two.", ["| a |\n\n\nText after.", "Two."]),
    ],
)
def test_punkt_mode_goes_on_across_blank_lines_and_keeps_the_opening_white_space(
    text: str, sentences: list[str]
) -> None:
    assert split_sentences(text, as_punkt=True) == sentences
    # TextReader's own rule is unchanged: a blank line ends a sentence, sentences are stripped.
    assert split_sentences("\nA heading\n\nThe body. More.") == ["A heading", "The body.", "More."]
