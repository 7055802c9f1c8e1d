"""Valuation in the representation of the full-data model (tdshap.torch.head, issue 16)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.neighbors import KNeighborsClassifier  # noqa: E402

from tdshap import TDShap  # noqa: E402
from tdshap.cleansing import cleanse  # noqa: E402
from tdshap.methods.loo import LeaveOneOut  # noqa: E402
from tdshap.methods.tdoob import ThresholdingOOB  # noqa: E402
from tdshap.torch.estimators import TorchClassifier  # noqa: E402
from tdshap.torch.head import (  # noqa: E402
    KNN_NEIGHBORS,
    head_estimator,
    last_linear,
    representation,
    standardiser,
)
from tdshap.torch.modules import FashionCNN  # noqa: E402
from tiny_images import one_torch_thread, three_class_images, tiny_cnn  # noqa: E402, F401


@pytest.fixture
def images():
    return three_class_images(np.float32)


def cnn(**kwargs) -> TorchClassifier:
    params = dict(module=tiny_cnn, epochs=2, pretrain_epochs=4, batch_size=8, lr=1e-2,
                  device="cpu", random_state=0)
    params.update(kwargs)
    return TorchClassifier(**params)


def by_hand(X, y, Xv, warm_start=True):
    """Standardised embeddings of the network a valuation with run seed 0 would use."""
    prepared = cnn(warm_start=warm_start).prepare(X, y)
    E, Ev = prepared.embed(X), prepared.embed(Xv)
    mean, scale = standardiser(E)
    return (E - mean) / scale, (Ev - mean) / scale


def test_the_representation_is_the_input_of_the_last_linear_layer(images):
    X = images[0]
    module = tiny_cnn(3)
    module.eval()
    xt = torch.as_tensor(X[:5])
    with torch.no_grad():
        hidden = torch.relu(module.fc1(torch.flatten(
            torch.max_pool2d(torch.relu(module.conv2(torch.max_pool2d(
                torch.relu(module.conv1(xt)), 2))), 2), 1)))
    module.train()
    E = representation(module, xt, batch=2)  # in pieces, as for large sets; eval mode
    assert last_linear(module) is module.fc2
    assert E.dtype == np.float64 and E.shape == (5, 8)
    np.testing.assert_allclose(E, hidden.numpy(), rtol=1e-5, atol=1e-6)
    assert module.training  # left as it was found
    with pytest.raises(ValueError, match=r"no nn\.Linear"):
        last_linear(torch.nn.Conv2d(1, 1, 3))


@pytest.mark.parametrize("head", ["knn", "logreg"])
def test_head_valuation_equals_valuing_the_head_on_embeddings_by_hand(images, head):
    X, y, Xv, yv = images
    ours = TDShap(cnn(valuation_head=head), "accuracy", k=5, n_min=10, max_iter=3,
                  random_state=0).fit(X, y, Xv, yv)
    E, Ev = by_hand(X, y, Xv)
    model = head_estimator(head)
    if head == "logreg":
        model.set_params(random_state=0)
    ref = TDShap(model, "accuracy", k=5, n_min=10, max_iter=3, random_state=0).fit(E, y, Ev, yv)
    np.testing.assert_array_equal(ours.values_, ref.values_)
    np.testing.assert_array_equal(ours.counts_, ref.counts_)
    assert ours.result_.n_fits == ref.result_.n_fits
    if head == "knn":  # the exact k-NN chain applies to the embeddings
        assert ours.result_.extra["fast_path"] == "kneighbors"
    assert np.ptp(ours.values_) > 0


def test_same_seed_same_values_and_the_representation_matters(images):
    X, y, Xv, yv = images

    def run(**kw):
        return TDShap(cnn(valuation_head="knn", **kw), "accuracy", k=5, n_min=10, max_iter=2,
                      random_state=0).fit(X, y, Xv, yv).values_

    a, b = run(), run()
    np.testing.assert_array_equal(a, b)
    # warm_start=False: the untrained network's (seeded) features, another game
    cold = run(warm_start=False)
    E, Ev = by_hand(X, y, Xv, warm_start=False)
    ref = TDShap(KNeighborsClassifier(KNN_NEIGHBORS), "accuracy", k=5, n_min=10, max_iter=2,
                 random_state=0).fit(E, y, Ev, yv).values_
    np.testing.assert_array_equal(cold, ref)
    assert not np.array_equal(a, cold)


def test_a_classifier_head_and_leave_one_out(images):
    X, y, Xv, yv = images
    head = LogisticRegression(C=0.5, max_iter=500)
    loo = LeaveOneOut(cnn(valuation_head=head), "accuracy", k=None,
                      random_state=0).fit(X, y, Xv, yv)
    E, Ev = by_hand(X, y, Xv)
    ref = LeaveOneOut(head, "accuracy", k=None, random_state=0).fit(E, y, Ev, yv)
    np.testing.assert_array_equal(loo.values_, ref.values_)


def test_fit_and_cleansing_still_train_the_network(images):
    X, y, Xv, yv = images
    est = cnn(valuation_head="knn", warm_start=False, epochs=4)
    plain = cnn(warm_start=False, epochs=4)
    fitted, ref = est.fit(X, y), plain.fit(X, y)
    assert isinstance(fitted.module_, FashionCNN)
    np.testing.assert_array_equal(fitted.predict_proba(Xv), ref.predict_proba(Xv))
    np.testing.assert_array_equal(fitted.embed(Xv[:3]),
                                  representation(ref.module_, torch.as_tensor(Xv[:3])))
    result = TDShap(cnn(valuation_head="knn"), "accuracy", k=5, n_min=10, max_iter=1,
                    random_state=0).fit(X, y, Xv, yv).result_
    a = cleanse(result, est, X, y, Xv, yv, step=10, max_fraction=0.3)
    b = cleanse(result, plain, X, y, Xv, yv, step=10, max_fraction=0.3)
    np.testing.assert_array_equal(a.val_scores, b.val_scores)


def test_bad_heads_say_what_to_choose(images):
    X, y, _, _ = images
    for bad in ("svm", 3, LogisticRegression):
        with pytest.raises(ValueError, match="valuation_head"):
            cnn(valuation_head=bad).prepare(X, y)
    with pytest.raises(ValueError, match="prepare"):
        cnn().embed(X)


def test_prepare_keeps_weights_given_for_the_same_rows(images):
    X, y, Xv, yv = images
    first = cnn().prepare(X, y)
    again = cnn(init_from=first.init_from).prepare(X, y)
    assert again.init_from is first.init_from  # no second training on all of D
    a = TDShap(cnn(valuation_head="knn"), "accuracy", k=5, n_min=10, max_iter=2,
               random_state=0).fit(X, y, Xv, yv).values_
    b = TDShap(cnn(valuation_head="knn", init_from=first.init_from), "accuracy", k=5,
               n_min=10, max_iter=2, random_state=0).fit(X, y, Xv, yv).values_
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="rows"):
        cnn(init_from=first.init_from).prepare(X[:30], y[:30])


def test_a_checkpoint_resumes_with_another_module_object_and_shared_weights(images, tmp_path):
    """Reprs of function factories carry addresses, which differ between processes."""
    X, y, Xv, yv = images
    shared = cnn().prepare(X, y).init_from

    def run(max_iter: int) -> TDShap:
        est = cnn(module=lambda n: tiny_cnn(n), valuation_head="knn", init_from=shared)
        return TDShap(est, "accuracy", k=5, n_min=10, max_iter=max_iter, random_state=0,
                      checkpoint=tmp_path / "run.tdshap", resume=True).fit(X, y, Xv, yv)

    run(1)
    resumed = run(2)
    assert resumed.result_.extra["resume"].startswith("continued")


@pytest.mark.parametrize("bagging", ["tdoob", "data_oob"])
def test_bagging_methods_refit_only_the_head(images, bagging):
    from tdshap.methods import DataOOB

    def value(estimator, X, y):
        if bagging == "tdoob":
            return ThresholdingOOB(estimator, max_iter=5, random_state=0).fit(X, y)
        return DataOOB(estimator, n_estimators=15, random_state=0).fit(X, y)

    X, y, Xv, _ = images
    ours = value(cnn(valuation_head="knn"), X, y)
    E, _ = by_hand(X, y, Xv)
    ref = value(head_estimator("knn"), E, y)
    np.testing.assert_array_equal(ours.values_, ref.values_)
    np.testing.assert_array_equal(ours.counts_, ref.counts_)
    assert ours.result_.extra["fast_path"] == "kneighbors lists"
    if bagging == "tdoob":  # probabilities spread; DataOOB's 0/1 scores may all be right here
        assert np.ptp(ours.values_) > 0
