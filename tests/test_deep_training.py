"""Torch warm start and batched subset training (tdshap.torch); tiny CNNs, tiny data."""

from __future__ import annotations

import copy
import functools

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sklearn.base import clone  # noqa: E402

from tdshap import TDShap  # noqa: E402
from tdshap.torch.batched import BatchedTorchUtility  # noqa: E402
from tdshap.torch.estimators import TorchClassifier  # noqa: E402
from tdshap.torch.modules import FashionCNN  # noqa: E402
from tdshap.torch.training import (  # noqa: E402
    FitSeeds,
    Schedule,
    resolve_device,
    stack_states,
    train_single,
    train_stacked,
)
from tdshap.utility.base import Chain, Truncation, Utility  # noqa: E402
from tdshap.utility.warm_start import Pretrained  # noqa: E402
from tiny_images import one_torch_thread, three_class_images, tiny_cnn  # noqa: E402, F401


@pytest.fixture
def images():
    return three_class_images()


def small_estimator(**kwargs) -> TorchClassifier:
    params = dict(module=tiny_cnn, epochs=2, pretrain_epochs=3, batch_size=8, lr=1e-2,
                  device="cpu", random_state=0)
    params.update(kwargs)
    return TorchClassifier(**params)


@pytest.fixture
def float64():
    """Compare the two loops in float64: in float32 they agree to ~1e-6 per step, but
    Adam can blow rounding noise in a near-zero gradient up to a full lr-sized step."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(old)


@pytest.mark.parametrize(
    ("optimizer", "warmup", "lr_schedule"),
    [("adam", 0, "constant"), ("adamw", 3, "linear"), ("sgd", 2, "constant")],
)
def test_stacked_training_gives_the_weights_of_one_by_one_training(optimizer, warmup,
                                                                    lr_schedule, float64):
    rng = np.random.default_rng(1)
    X = torch.as_tensor(rng.random((40, 1, 8, 8)))
    y = torch.as_tensor(rng.integers(0, 3, 40))
    schedule = Schedule(epochs=3, batch_size=8, optimizer=optimizer, lr=1e-2,
                        weight_decay=0.01, warmup_steps=warmup, lr_schedule=lr_schedule)
    # nested prefixes (different minibatch counts) and one unrelated subset
    rows = [np.arange(10), np.arange(13), np.arange(17), rng.permutation(40)[:25]]
    seeds = [FitSeeds.from_seed(s) for s in (1, 2, 3, 4)]
    starts = []
    for s in seeds:
        torch.manual_seed(s.init)
        starts.append(tiny_cnn(3).state_dict())
    alone = []
    for r, s, start in zip(rows, seeds, starts, strict=True):
        model = tiny_cnn(3)
        model.load_state_dict(start)
        train_single(model, X, y, r, schedule, s)
        alone.append(model.state_dict())
    stacked = train_stacked(tiny_cnn(3), stack_states(starts, torch.device("cpu")), X, y,
                            rows, schedule, seeds)
    for j in range(len(rows)):
        moved = max(float((alone[j][k] - starts[j][k]).abs().max()) for k in stacked)
        gap = max(float((stacked[k][j] - alone[j][k]).abs().max()) for k in stacked)
        assert moved > 1e-3  # training did change the weights...
        assert gap < 1e-10  # ...and the stack changed them the same way


def test_fixed_buffer_epochs_replayed_give_the_weights_of_the_plain_loop():
    """The CUDA-graph path keeps the state and each epoch's draws in fixed buffers and
    reruns the same steps on them; on the CPU that path runs without a graph, so the
    buffer handling is checked here bit for bit against the plain loop."""
    rng = np.random.default_rng(3)
    X = torch.as_tensor(rng.random((40, 1, 8, 8)), dtype=torch.float32)
    y = torch.as_tensor(rng.integers(0, 3, 40))
    schedule = Schedule(epochs=3, batch_size=8, optimizer="adamw", weight_decay=0.01,
                        warmup_steps=2, lr_schedule="linear")
    rows = [np.arange(9), np.arange(20), rng.permutation(40)[:31]]
    seeds = [FitSeeds.from_seed(s) for s in (4, 5, 6)]
    starts = []
    for s in seeds:
        torch.manual_seed(s.init)
        starts.append(tiny_cnn(3).state_dict())
    stack = stack_states(starts, torch.device("cpu"))
    plain = train_stacked(tiny_cnn(3), stack, X, y, rows, schedule, seeds, cuda_graph=False)
    fixed = train_stacked(tiny_cnn(3), stack, X, y, rows, schedule, seeds, cuda_graph=True)
    assert any(not torch.equal(plain[k], stack[k]) for k in plain)
    assert all(torch.equal(plain[k], fixed[k]) for k in plain)


def test_dropout_masks_and_order_depend_on_the_seed():
    rng = np.random.default_rng(2)
    X = torch.as_tensor(rng.random((30, 1, 8, 8)), dtype=torch.float32)
    y = torch.as_tensor(rng.integers(0, 3, 30))
    schedule = Schedule(epochs=2, batch_size=8)

    def train(seed: int) -> dict:
        torch.manual_seed(0)
        model = tiny_cnn(3)
        train_single(model, X, y, np.arange(30), schedule, FitSeeds.from_seed(seed))
        return model.state_dict()

    a, b, c = train(5), train(5), train(6)
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert any(not torch.equal(a[k], c[k]) for k in a)


def test_prepare_pretrains_once_and_clones_share_the_weights(images):
    X, y, _, _ = images
    est = small_estimator()
    prepared = est.prepare(X, y)
    assert est.init_from is None  # the user's estimator is left alone
    assert isinstance(prepared.init_from, Pretrained)
    assert prepared.init_from.n_rows == len(y)
    assert prepared.init_from.steps == 3 * 8  # 3 epochs of ceil(60 / 8) minibatches
    np.testing.assert_array_equal(prepared.classes, [0, 1, 2])
    twin = clone(prepared)
    assert twin.init_from is prepared.init_from
    assert copy.deepcopy(prepared.init_from) is prepared.init_from


def test_warm_fit_starts_from_the_pretrained_weights(images):
    X, y, X_val, _ = images
    prepared = small_estimator().prepare(X, y)
    zero = clone(prepared).set_params(epochs=0).fit(X[:20], y[:20])
    for k, w in zero.module_.state_dict().items():
        assert torch.equal(w, prepared.init_from.payload[k])
    cold = clone(prepared).set_params(epochs=0, warm_start=False).fit(X[:20], y[:20])
    assert not np.allclose(cold.predict_proba(X_val), zero.predict_proba(X_val))


def test_fits_are_reproducible_and_the_seed_matters(images):
    X, y, X_val, _ = images
    prepared = small_estimator().prepare(X, y)
    a = clone(prepared).set_params(random_state=3).fit(X[:30], y[:30]).predict_proba(X_val)
    b = clone(prepared).set_params(random_state=3).fit(X[:30], y[:30]).predict_proba(X_val)
    c = clone(prepared).set_params(random_state=4).fit(X[:30], y[:30]).predict_proba(X_val)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_cnn_learns_the_toy_task(images):
    X, y, X_val, y_val = images
    est = small_estimator(warm_start=False, epochs=15).fit(X, y)
    assert est.score(X_val, y_val) > 0.8  # chance is 1/3


def test_batched_utility_matches_one_by_one_utility(images):
    X, y, X_val, y_val = images
    prepared = small_estimator().prepare(X, y)
    chains = [Chain(np.arange(20), np.array([30, 31, 32, 33]), 11),
              Chain(np.arange(10, 35), np.array([5, 6, 7]), 12),
              Chain(np.arange(40, 58), np.array([], dtype=int), 13)]  # a LOO-style chain
    one = Utility(prepared, "accuracy", X, y, X_val, y_val)
    many = BatchedTorchUtility(prepared, "accuracy", X, y, X_val, y_val)
    expected = one.evaluate_chains(chains)
    got = many.evaluate_chains(chains)
    for e, g in zip(expected, got, strict=True):
        np.testing.assert_allclose(g, e, atol=1.5 / len(y_val))  # at most one prediction flips
    assert many.n_fits == one.n_fits == 5 + 4 + 1
    assert many.n_evaluations == one.n_evaluations
    again = many.evaluate_chains(chains[:1])  # cached: no new fit
    assert many.n_fits == 10 and many.n_cache_hits == 5
    np.testing.assert_array_equal(again[0], got[0])


@pytest.mark.slow
def test_tdshap_with_a_torch_estimator_uses_the_batched_utility(images):
    X, y, X_val, y_val = images
    est = small_estimator(max_models=4, batched=True)
    assert small_estimator().utility_class is Utility  # "auto" batches on a GPU only
    assert est.utility_class is BatchedTorchUtility
    model = TDShap(est, "accuracy", k=5, n_min=10, max_iter=2, random_state=0).fit(
        X, y, X_val, y_val)
    r = model.result_
    assert r.n_fits == (12 + 2) * 6  # 12 initial blocks and 2 rounds of K + 1 = 6 fits
    assert np.isfinite(r.values).all() and (r.counts >= 1).all()
    serial = TDShap(small_estimator(batched=False), "accuracy", k=5, n_min=10, max_iter=2,
                    random_state=0).fit(X, y, X_val, y_val)
    # the same chains, the same seeds: the same values up to rare flipped predictions
    assert np.mean(np.isclose(serial.values_, model.values_, atol=1e-9)) > 0.9


def test_batched_truncation_is_the_rule_applied_after_the_fact(images):
    X, y, X_val, y_val = images
    est = small_estimator(batched=True)
    batched = BatchedTorchUtility(est, "accuracy", X, y, X_val, y_val)
    empty, perm = np.empty(0, dtype=np.intp), np.random.default_rng(0).permutation(12)
    whole = batched.evaluate_chains([Chain(empty, perm, 3)])[0]
    rule = Truncation(target=1.0, tolerance=1.0, patience=2)  # every accuracy is settled
    cut = batched.evaluate_chains([Chain(empty, perm, 3, rule)])[0]
    expected = whole.copy()
    assert rule.apply(expected) == batched.n_truncated == len(perm) - 2
    np.testing.assert_array_equal(cut, expected)


def test_bad_parameters_say_what_to_do():
    with pytest.raises(ValueError, match="module must be a factory"):
        TorchClassifier(module=None).fit(np.zeros((4, 1, 8, 8)), np.arange(4))
    with pytest.raises(ValueError, match="optimizer"):
        Schedule(epochs=1, batch_size=8, optimizer="rmsprop")
    with pytest.raises(ValueError, match="batch_size"):
        Schedule(epochs=1, batch_size=0)
    with pytest.raises(ValueError, match="not in classes"):
        small_estimator(classes=[0, 1]).fit(np.zeros((3, 1, 8, 8)), np.array([0, 1, 2]))


def test_fit_refuses_bad_data_instead_of_training_on_it(images):
    X, y, _, _ = images
    nan = X.copy()
    nan[3, 0, 2, 2] = np.nan
    cases = [((X, y[:5]), "X has 60 rows but y has 5"),
             ((nan, y), "NaN or infinite"),
             ((X, np.zeros(len(y), int)), "single class"),
             ((X[:, 0, 0, 0], y), "must be 2-D"),
             ((X, np.stack([y, y], 1)), "y must be 1-D")]
    for (Xb, yb), message in cases:
        with pytest.raises(ValueError, match=message):
            small_estimator().fit(Xb, yb)
        with pytest.raises(ValueError, match=message):
            small_estimator().prepare(Xb, yb)
    # a subset of one label is a valid fit once prepare has fixed all the classes
    prepared = small_estimator(epochs=1).prepare(X, y)
    one = y == 0
    assert clone(prepared).fit(X[one], y[one]).predict_proba(X[:2]).shape == (2, 3)



def test_calls_after_fit_refuse_bad_rows_as_fit_does(images):
    X, y, X_val, _ = images
    est = small_estimator(epochs=1).fit(X, y)
    nan = X_val.copy()
    nan[2, 0, 1, 1] = np.nan
    cases = [(nan, "X contains NaN or infinite values .first at row 2"),
             (X_val[:, 0, 0, 0], "X must be 2-D"),
             (np.zeros((3, 1, 10, 10)), r"rows of shape \(1, 10, 10\) but the classifier was "
                                        r"fitted on rows of shape \(1, 8, 8\)")]
    for Xb, message in cases:
        for call in (est.predict_proba, est.predict, est.embed):
            with pytest.raises(ValueError, match=message):
                call(Xb)
    with pytest.raises(ValueError, match="needs a fitted classifier"):
        small_estimator().predict_proba(X_val)
    assert est.predict_proba(X_val[:0]).shape == (0, 3)
    assert est.predict(X_val[:4]).shape == (4,)

class _PooledTokens(torch.nn.Module):
    """Token ids -> embeddings averaged over the non-padding ids -> a linear head: any
    sequence length is the same input, as for the MiniLM text model."""

    def __init__(self, n_classes: int) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(20, 4)
        self.head = torch.nn.Linear(4, n_classes)

    def forward(self, ids):
        mask = (ids != 0).to(torch.float32).unsqueeze(-1)
        return self.head((self.embed(ids) * mask).sum(1) / mask.sum(1).clamp(min=1))


def _flat_tokens(n_classes: int) -> torch.nn.Module:
    """A head sized for 6 tokens: no other length fits it."""
    return torch.nn.Sequential(torch.nn.Embedding(20, 4), torch.nn.Flatten(),
                               torch.nn.Linear(24, n_classes))


def _token_ids(length: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    ids = np.zeros((12, length), dtype=np.int64)
    ids[:, :4] = rng.integers(1, 20, size=(12, 4))  # 4 real tokens, then padding
    return ids, np.arange(12) % 2


def test_token_ids_of_another_length_are_taken_when_the_module_takes_them():
    # a text model pads and masks: the same texts tokenised to another max_length are the
    # same input (the MiniLM model gives the same probabilities), but the fitted-shape
    # check refused every length but fit's
    ids, y = _token_ids(6)
    longer = np.pad(ids, ((0, 0), (0, 4)))
    est = TorchClassifier(module=_PooledTokens, epochs=2, batch_size=4, lr=1e-2, device="cpu",
                          input_dtype="long", random_state=0).fit(ids, y)
    np.testing.assert_allclose(est.predict_proba(longer), est.predict_proba(ids), atol=1e-6)
    np.testing.assert_allclose(est.embed(longer), est.embed(ids), atol=1e-6)
    with pytest.raises(ValueError, match=r"rows of shape \(6, 1\) but the classifier was "
                                         r"fitted on rows of shape \(6,\)"):
        est.predict_proba(ids[:, :, None])  # only the length may differ, not the layout
    # a module that cannot take the length: one line naming both lengths and the fix, not
    # torch's matmul error from deep inside
    flat = TorchClassifier(module=_flat_tokens, epochs=1, batch_size=4, lr=1e-2, device="cpu",
                           input_dtype="long", random_state=0).fit(ids, y)
    for call in (flat.predict_proba, flat.predict, flat.embed):
        with pytest.raises(ValueError, match=r"token sequences of length 10, but the "
                                             r"classifier was fitted on length 6 and its "
                                             r"module cannot take 10 .*max_length=6"):
            call(longer)
    assert flat.predict_proba(ids).shape == (12, 2)


def test_auto_device_is_cuda_when_present():
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto").type == expected
    assert resolve_device("cpu").type == "cpu"


def test_module_factory_can_be_a_partial():
    est = TorchClassifier(module=functools.partial(FashionCNN, channels=(2, 2), hidden=4,
                                                   side=8), epochs=1, device="cpu")
    assert clone(est).module.func is FashionCNN


def test_a_seeded_valuation_pretrains_an_unseeded_learner_reproducibly(images):
    X, y, X_val, y_val = images
    runs = [TDShap(small_estimator(random_state=None, epochs=1), "accuracy", k=10, n_min=10,
                   max_iter=0, random_state=3).fit(X, y, X_val, y_val).values_ for _ in "ab"]
    np.testing.assert_array_equal(runs[0], runs[1])


def test_bad_hyper_parameters_are_refused_before_the_pretraining(images, monkeypatch):
    # a subset fit's epochs=-1 or lr=inf failed (or trained to NaN) only after prepare had
    # pretrained for pretrain_epochs; lr="0.1" failed on a comparison; random_state=-1 deep
    # in numpy; random_state=1.5 was truncated; warm_start="no" was truthy
    X, y, _, _ = images
    monkeypatch.setattr("tdshap.torch.estimators.train_single",
                        lambda *a, **k: pytest.fail("trained before checking"))
    cases = [(dict(epochs=-1), "epochs=-1 must be a whole number"),
             (dict(lr=float("inf")), "lr=inf must be a finite number > 0"),
             (dict(lr="0.1"), "lr='0.1' must be a finite number > 0"),
             (dict(weight_decay=float("inf")), "weight_decay=inf must be a finite number"),
             (dict(random_state=-1), "random_state=-1 must be None, a whole number"),
             (dict(random_state=1.5), "random_state=1.5 must be None, a whole number"),
             (dict(input_dtype="int"), "input_dtype='int' must be one of"),
             # a bool is an int to Python: epochs=True trained one epoch, batch_size=True
             # minibatches of one row; 2.0 failed in range() after the pretraining
             (dict(epochs=True), "epochs=True must be a whole number >= 0"),
             (dict(pretrain_epochs=False), "pretrain_epochs=False must be a whole number"),
             (dict(batch_size=True), "batch_size=True must be a whole number >= 1"),
             (dict(epochs=2.0), r"epochs=2.0 must be a whole number >= 0 given as an int: "
              "pass 2"),
             (dict(max_models=True), "max_models=True must be a whole number >= 1"),
             (dict(batched=1), "batched=1 must be True, False or 'auto'")]
    for warm in (True, False):
        for params, message in cases:
            with pytest.raises(ValueError, match=message):
                small_estimator(warm_start=warm, **params).prepare(X, y)
    with pytest.raises(TypeError, match="warm_start='no' must be True or False"):
        small_estimator(warm_start="no").prepare(X, y)


def test_devices_that_are_not_or_that_this_machine_lacks_are_refused_by_name(images):
    # torch failed after the module was built: "Torch not compiled with CUDA enabled"
    # (AssertionError), "Expected one of cpu, cuda, ..." (RuntimeError), a TypeError for None
    X, y, _, _ = images
    bad = [("garbage", "is not a device"), (None, "is not a device"),
           (5, "is not a device")]
    if not torch.cuda.is_available():
        bad.append(("cuda", "finds no CUDA GPU"))
    else:
        bad.append((f"cuda:{torch.cuda.device_count()}", "pick one of them"))
    if not torch.backends.mps.is_available():
        bad.append(("mps", "MPS backend is not available"))
    for device, message in bad:
        with pytest.raises(ValueError, match=message):
            resolve_device(device)
        with pytest.raises(ValueError, match=message):
            small_estimator(device=device).prepare(X, y)
    assert resolve_device(torch.device("cpu")).type == "cpu"


def test_modules_that_do_not_fit_the_rows_or_the_classes_are_refused(images):
    # a built network was called with n_classes as its input (TypeError inside torch); a
    # network of 5 outputs for 3 classes trained and predicted classes that do not exist
    # (IndexError in the batched utility); images of another size failed in a matmul
    X, y, X_val, y_val = images
    with pytest.raises(ValueError, match="module is a built network"):
        small_estimator(module=tiny_cnn(3)).fit(X, y)
    with pytest.raises(ValueError, match=r"module\(3\) returned NoneType"):
        small_estimator(module=lambda n: None).fit(X, y)
    with pytest.raises(ValueError, match=r"returned \(1, 5\) for 1 row\(s\), not class "
                                         r"scores of shape \(1, 3\)"):
        small_estimator(module=lambda n: tiny_cnn(5)).fit(X, y)
    with pytest.raises(ValueError, match=r"returned \(1, 2\)"):
        small_estimator(module=lambda n: tiny_cnn(2)).prepare(X, y)
    prepared = small_estimator(module=lambda n: tiny_cnn(5), warm_start=False,
                               max_models=2).prepare(X[:6], y[:6])
    with pytest.raises(ValueError, match=r"returned \(1, 5\)"):
        BatchedTorchUtility(prepared, "accuracy", X[:6], y[:6], X_val, y_val)
    big = np.zeros((6, 1, 12, 12))
    with pytest.raises(ValueError, match=r"cannot take rows of shape \(1, 12, 12\)"):
        small_estimator().fit(big, y[:6])
    with pytest.raises(ValueError, match=r"cannot take rows of shape \(3, 8, 8\)"):
        small_estimator().fit(np.repeat(X, 3, axis=1), y)
    with pytest.raises(ValueError, match=r"cannot take rows of shape \(1, 12, 12\)"):
        small_estimator(warm_start=False).prepare(X, y).set_params(classes=[0, 1, 2]).embed(
            big)


def test_token_ids_past_the_vocabulary_negative_or_fractional_are_refused():
    # an id past the embedding failed deep in torch (IndexError "index out of range in
    # self"), even in a late row; 2.7 was truncated to id 2 without a word
    ids, y = _token_ids(6)
    est = TorchClassifier(module=_PooledTokens, epochs=1, batch_size=4, device="cpu",
                          input_dtype="long", random_state=0)
    late = ids.copy()
    late[-1, 0] = 20  # the vocabulary is 0..19
    with pytest.raises(ValueError, match=r"cannot take rows of shape \(6,\) \(index out"):
        clone(est).fit(late, y)
    for bad, message in [(-1, "negative token id"), (2.7, "fractional values")]:
        wrong = ids.astype(float)
        wrong[5, 1] = bad
        with pytest.raises(ValueError, match=message):
            clone(est).fit(wrong, y)
        with pytest.raises(ValueError, match=message):
            clone(est).fit(ids, y).predict(wrong)


def test_predict_before_fit_says_to_fit(images):
    # predict read classes_ first: AttributeError, not the "call fit" of predict_proba
    with pytest.raises(ValueError, match="needs a fitted classifier"):
        small_estimator().predict(images[0])
