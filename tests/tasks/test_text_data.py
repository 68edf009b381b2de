"""Raw text as data: the text task's readers (txt, JSON Lines, a hub dataset on a local folder),
packing into fixed-length blocks, held-out dev blocks and the bad-input errors."""

from __future__ import annotations

import json

import pytest
import torch

from srnet.errors import SrnetError
from srnet.models import load_tokenizer
from srnet.tasks.spec import DataSpec, HubSpec
from srnet.tasks.text import load_texts
from srnet.training.packing import TextBlocks, hold_out, pack_blocks


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir):
    return load_tokenizer(str(tiny_model_dir))


def test_txt_one_document_per_line_or_per_paragraph(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("first doc\nsecond doc\n\n  \nthird\nstill third\n", encoding="utf-8")
    assert load_texts(DataSpec(path=str(path))) == ["first doc", "second doc", "third", "still third"]
    assert load_texts(DataSpec(path=str(path), format="txt_paragraphs")) == [
        "first doc second doc", "third still third"
    ]
    assert load_texts(DataSpec(path=str(path), n=2)) == ["first doc", "second doc"]


def test_jsonl_named_text_field_and_missing_field(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(json.dumps({"premise": f"p{i}", "label": "x"}) for i in range(3)))
    assert load_texts(DataSpec(path=str(path))) == ["p0", "p1", "p2"]
    assert load_texts(DataSpec(path=str(path), columns={"text_a": "label"})) == ["x", "x", "x"]
    with pytest.raises(SrnetError, match=r"c.jsonl:1: text column 'body' not found; columns are"):
        load_texts(DataSpec(path=str(path), columns={"text_a": "body"}))


def test_hub_reader_on_a_local_folder(tmp_path):
    """``datasets.load_dataset`` on a folder: the same code path as a hub id such as wikitext."""
    folder = tmp_path / "wiki"
    folder.mkdir()
    (folder / "train.jsonl").write_text("\n".join(json.dumps({"text": f"doc {i}"}) for i in range(4)))
    texts = load_texts(DataSpec(hub=HubSpec(name=str(folder), split="train")))
    assert texts == [f"doc {i}" for i in range(4)]
    with pytest.raises(SrnetError, match=r"hub:.*:validation: could not load the dataset"):
        load_texts(DataSpec(hub=HubSpec(name=str(folder), split="validation")))


def test_empty_corpus_is_an_error(tmp_path):
    path = tmp_path / "empty.txt"
    path.write_text("\n  \n", encoding="utf-8")
    with pytest.raises(SrnetError, match=r"empty.txt: empty corpus"):
        load_texts(DataSpec(path=str(path)))


def test_packing_blocks_and_short_corpus(tokenizer):
    texts = ["the cat sat on the mat"] * 20
    blocks = pack_blocks(texts, tokenizer, 16)
    body = len(tokenizer("the cat sat on the mat", add_special_tokens=False)["input_ids"]) + 1
    assert blocks.shape == (20 * body // 14, 16)
    assert (blocks[:, 0] == tokenizer.cls_token_id).all() and (blocks[:, -1] == tokenizer.sep_token_id).all()
    stream = blocks[:, 1:-1].flatten().tolist()
    assert stream[:body] == [*tokenizer("the cat sat on the mat", add_special_tokens=False)["input_ids"],
                             tokenizer.sep_token_id]
    with pytest.raises(SrnetError, match=r"corpus has \d+ tokens, shorter than one block of 512"):
        pack_blocks(["a short text"], tokenizer, 512)


def test_hold_out_dev_blocks_are_disjoint_and_seeded():
    blocks = torch.arange(200).view(20, 10)
    train, dev = hold_out(blocks, 0.1, seed=3)
    assert (len(train), len(dev)) == (18, 2)
    rows = {tuple(r) for r in train.tolist()} | {tuple(r) for r in dev.tolist()}
    assert len(rows) == 20
    assert torch.equal(hold_out(blocks, 0.1, seed=3)[1], dev)
    with pytest.raises(SrnetError, match="needs at least 2"):
        hold_out(blocks[:1], 0.1, seed=0)
    item = TextBlocks(blocks)[1]
    assert item["input_ids"] == list(range(10, 20)) and "labels" not in item
