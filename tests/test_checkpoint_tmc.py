"""TMC Shapley checkpoints: a resumed run is the uninterrupted run."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from sklearn.linear_model import Ridge

from tdshap import TMCShapley, Utility
from tdshap.methods.checkpoint.files import checkpoint_info, read_checkpoint, write_checkpoint
from tdshap.methods.stopping import MeanRelativeChange, RunStatus


@pytest.fixture
def data():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + rng.normal(0, 0.3, 60)
    y[:4] += 5  # a few harmful rows
    return X[:30], y[:30], X[30:], y[30:]


def _fit(data, **kw):
    settings = dict(metric="neg_mae", truncation=None, rtol=None, max_permutations=24,
                    batch_size=4, fast_path=False, random_state=1)
    settings.update(kw)
    return TMCShapley(Ridge(), **settings).fit(*data)


def _same(a: TMCShapley, b: TMCShapley) -> None:
    np.testing.assert_array_equal(a.values_, b.values_)
    np.testing.assert_array_equal(a.counts_, b.counts_)
    np.testing.assert_array_equal(a.result_.variances, b.result_.variances)
    assert a.n_permutations_ == b.n_permutations_
    assert a.result_.n_fits == b.result_.n_fits


def test_a_finished_run_extended_by_resuming_equals_one_long_run(data, tmp_path):
    path = tmp_path / "tmc.tdshap"
    _fit(data, max_permutations=8, checkpoint=path, checkpoint_every=0)
    info = checkpoint_info(path)
    assert info["finished"] and info["rounds"] == 8 and info["algorithm"] == "tmc_shapley"
    _same(_fit(data, checkpoint=path, resume=True), _fit(data))
    # resuming a finished run with the same budget does no more work
    again = _fit(data, checkpoint=path, resume=True)
    assert again.n_permutations_ == 24


@pytest.mark.slow
def test_the_convergence_rule_continues_where_it_stopped(data, tmp_path):
    kw = dict(rtol=0.02, rtol_window=5, max_permutations=None, truncation="original")
    expected = _fit(data, **kw)
    assert expected.result_.extra["stopped_by"] == ["MeanRelativeChange(rtol=0.02, window=5)"]
    path = tmp_path / "tmc.tdshap"
    calls = []
    original = Utility.evaluate_chain

    def interrupted(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == expected.n_permutations_ - 6:  # mid-batch, late in the run
            raise KeyboardInterrupt
        return original(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Utility, "evaluate_chain", interrupted)
        with pytest.raises(KeyboardInterrupt):
            _fit(data, checkpoint=path, checkpoint_every=1e9, **kw)  # only the last-gasp save
    info = checkpoint_info(path)
    assert not info["finished"] and info["rounds"] % 4 == 0  # the batch before the interrupt
    resumed = _fit(data, checkpoint=path, resume=True, **kw)
    _same(resumed, expected)
    assert resumed.result_.extra["convergence_error"] == expected.result_.extra[
        "convergence_error"]


def test_resume_refuses_other_settings(data, tmp_path):
    path = tmp_path / "tmc.tdshap"
    _fit(data, max_permutations=4, checkpoint=path)
    with pytest.raises(ValueError, match=r"different settings.*batch_size"):
        _fit(data, batch_size=2, resume=path)
    with pytest.raises(ValueError, match="written by 'tmc_shapley', not 'tdshap'"):
        from tdshap import TDShap

        TDShap(Ridge(), "neg_mae", n_min=5, k=5, resume=path).fit(*data)


def _edit(path, **changes) -> None:
    meta, arrays = read_checkpoint(path)
    for key, value in changes.items():
        if key.startswith("array_"):
            arrays[key[6:]] = value(arrays[key[6:]])
        else:
            meta[key] = value
    write_checkpoint(path, {k: v for k, v in meta.items() if k not in ("format", "version")},
                     arrays)


def _one_more(counts):
    counts = counts.copy()
    counts[0] += 100
    return counts


@pytest.mark.parametrize("changes", [
    # each resumed with the saved means weighed by counts no permutation made
    {"array_counts": _one_more}, {"array_counts": lambda c: 2 * c},
    {"array_counts": lambda c: np.where(np.arange(len(c)) == 0, 0, c)},
    {"rounds": 9}, {"rounds": 4},
    {"array_counts": lambda c: -c}, {"array_mu": lambda m: np.full_like(m, np.nan)},
    # the cached V(D) is the truncation target of the resumed run and its full_score
    {"array_cache_values": lambda v: np.full_like(v, np.nan)},
], ids=["one-row", "doubled", "zeroed", "more-rounds", "fewer-rounds", "negative", "nan",
        "nan-scores"])
def test_an_edited_checkpoint_is_refused(data, tmp_path, changes):
    path = tmp_path / "tmc.tdshap"
    _fit(data, max_permutations=8, checkpoint=path)
    _edit(path, **changes)
    with pytest.raises(ValueError, match=r"tmc.tdshap' is damaged or was edited: array"):
        _fit(data, checkpoint=path, resume=True)


def _rng_field(*path: str, value: object):
    def edit(rng: dict) -> dict:
        out = copy.deepcopy(rng)
        inner = out
        for key in path[:-1]:
            inner = inner[key]
        inner[path[-1]] = value
        return out
    return edit


@pytest.mark.parametrize("edit", [
    # numpy took each (1.5 as 1, true as 1, any int as "has a spare draw"): the resumed run
    # drew other permutations than the saved state would have, without a word
    _rng_field("state", "state", value=1.5), _rng_field("state", "inc", value=True),
    _rng_field("has_uint32", value=-1), _rng_field("uinteger", value=2.0),
], ids=["fractional-state", "bool-inc", "negative-flag", "float-spare"])
def test_a_checkpoint_whose_generator_state_numpy_would_coerce_is_refused(data, tmp_path,
                                                                         edit):
    path = tmp_path / "tmc.tdshap"
    _fit(data, max_permutations=8, checkpoint=path)
    meta, _ = read_checkpoint(path)
    _edit(path, rng=edit(meta["rng"]))
    with pytest.raises(ValueError, match=r"field 'rng' is not a state of PCG64 as numpy "
                       r"saves one"):
        _fit(data, checkpoint=path, resume=True)


def test_mean_relative_change_state_round_trips():
    rule = MeanRelativeChange(rtol=0.01, window=3)
    rng = np.random.default_rng(0)
    for r in range(1, 6):
        rule.check(RunStatus(r, 0.0, rng.normal(size=4)))
    copy = MeanRelativeChange(rtol=0.01, window=3)
    copy.set_state(rule.get_state())
    values = rng.normal(size=4)
    assert copy.check(RunStatus(6, 0.0, values)) == rule.check(RunStatus(6, 0.0, values))
    assert copy.error == rule.error and np.isfinite(copy.error)
