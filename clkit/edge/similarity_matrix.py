"""The class-similarity record shared by every similarity source, and its small helpers.

:class:`ClassSimilarity` (a matrix and where it came from), :func:`check_class_names`
and :func:`cosine_similarity`. Both :mod:`clkit.edge.similarity` (class names through a
text encoder) and :mod:`clkit.edge.data_similarity` (similarity from data) build on this
module; :mod:`clkit.edge.similarity` imports :mod:`clkit.edge.data_similarity`, never the
other way round.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["ClassSimilarity", "check_class_names", "cosine_similarity"]


@dataclass
class ClassSimilarity:
    """A class-similarity matrix and where it came from.

    Behaves as its ``matrix`` wherever NumPy converts it (``np.asarray(result)``),
    so it can be passed to every function taking ``sim``.

    Attributes
    ----------
    matrix : ndarray, shape (N, N)
        Cosine similarities, symmetric, ones on the diagonal.
    encoder : str
        The encoder actually used, e.g. ``"minilm:all-MiniLM-L6-v2"``.
    class_names : list of str
    embeddings : ndarray, shape (N, d)
        Unit-norm class embeddings.
    notes : list of str
        Why ``"auto"`` skipped an encoder, if it did.
    """

    matrix: np.ndarray
    encoder: str
    class_names: list
    embeddings: np.ndarray
    notes: list = field(default_factory=list)

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.matrix, dtype=dtype)


def check_class_names(class_names, name: str = "class_names") -> list[str]:
    """Validate a list of at least two distinct, non-empty class names.

    Examples
    --------
    >>> check_class_names(["cat", "dog"])
    ['cat', 'dog']
    >>> check_class_names(["cat", "dog", "cat"])
    Traceback (most recent call last):
    ...
    ValueError: class_names has duplicates: ['cat'] (every class needs a distinct name)
    """
    if isinstance(class_names, str) or not isinstance(class_names, (list, tuple)):
        raise TypeError(f"{name} must be a list of strings, got {type(class_names).__name__} {class_names!r}")
    out = []
    for c in class_names:
        if not isinstance(c, str) or not c.strip():
            raise ValueError(f"{name} must hold non-empty strings, got {c!r}")
        out.append(c.strip())
    dups = sorted({c for c in out if out.count(c) > 1})
    if dups:
        raise ValueError(f"{name} has duplicates: {dups} (every class needs a distinct name)")
    if len(out) < 2:
        raise ValueError(f"{name} must name at least 2 classes, got {out!r}")
    return out


def cosine_similarity(embeddings) -> np.ndarray:
    """Cosine similarity of the rows of ``embeddings`` (shape (N, d)) -> (N, N).

    Examples
    --------
    >>> cosine_similarity([[1, 0], [1, 1]]).round(4).tolist()
    [[1.0, 0.7071], [0.7071, 1.0]]
    """
    E = np.asarray(embeddings, dtype=float)
    norms = np.linalg.norm(E, axis=1, keepdims=True)
    if (norms == 0).any():
        raise ValueError("embeddings contain a zero vector; cosine similarity is undefined for it")
    E = E / norms
    S = E @ E.T
    S = (S + S.T) / 2
    np.fill_diagonal(S, 1.0)
    return np.clip(S, -1.0, 1.0)
