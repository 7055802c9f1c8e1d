"""Shared fixtures."""

from __future__ import annotations

import pytest


@pytest.fixture
def breast_cancer_small():
    from tdshap.app.demo import breast_cancer

    return breast_cancer(seed=0, sizes=(60, 60, 100))


@pytest.fixture
def single_threaded():
    """BLAS/OpenMP on one thread: refit-heavy comparisons crawl when threads oversubscribe."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        yield
