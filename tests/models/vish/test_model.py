"""The BoTorch model: posterior shapes, noise, transforms, streaming predictions, training on the
cache, and conditioning (batched fantasies) against a model rebuilt on the augmented data."""

import pytest
import torch
from botorch.acquisition import (
    qKnowledgeGradient,
    qLogNoisyExpectedImprovement,
    qNegIntegratedPosteriorVariance,
)
from botorch.acquisition.objective import ScalarizedPosteriorTransform
from botorch.sampling import SobolQMCNormalSampler
from gpytorch.kernels import ScaleKernel

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.kernels import GeometricMaternKernel
from manibo.models.vish import VISHModel, VISHPrior, gather_statistics
from manibo.models.vish.model import optimize_bound
from manibo.spaces import Sphere

SPACE = Sphere(2)


def _model(n=200, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = SPACE.random(n, generator=g)
    Y = (3 + 2 * torch.sin(3 * X[:, :1]) + 0.2 * torch.randn(n, 1, generator=g)).double()
    prior = VISHPrior(ScaleKernel(GeometricMaternKernel(SPACE, nu=2.5, num_levels=12)), 64)
    model = VISHModel.from_statistics(prior, gather_statistics(prior.features, X, Y))
    return model.fit(maxiter=30), X, Y


def test_posterior_contract():
    model, X, _ = _model()
    assert model.num_outputs == 1 and model.batch_shape == torch.Size()
    X_test = SPACE.random(12, generator=torch.Generator().manual_seed(1)).reshape(3, 4, 3)
    post = model.posterior(X_test)
    assert post.mean.shape == (3, 4, 1) and post.covariance_matrix.shape == (3, 4, 4)
    noisy = model.posterior(X_test, observation_noise=True)
    std = model.outcome_transform.stdvs.reshape(())
    extra = model.noise * std**2
    assert torch.allclose(noisy.variance - post.variance, extra.expand(3, 4, 1).detach())
    given = torch.full((3, 4, 1), 0.5, dtype=torch.float64)
    with_tensor = model.posterior(X_test, observation_noise=given)
    assert torch.allclose(with_tensor.variance - post.variance, 0.5 * std**2)
    transform = ScalarizedPosteriorTransform(weights=torch.tensor([2.0], dtype=torch.float64))
    assert torch.allclose(
        model.posterior(X_test, posterior_transform=transform).mean, 2 * post.mean
    )
    with pytest.raises(InputDataError, match="output_indices"):
        model.posterior(X_test, output_indices=[1])
    with pytest.raises(InputDataError, match="norms must be 1"):
        model.posterior(2 * X_test)
    # differentiable in X, and the streaming prediction agrees with the posterior
    x = X_test[0].clone().requires_grad_(True)
    model.posterior(x).mean.sum().backward()
    assert torch.isfinite(x.grad).all() and x.grad.abs().sum() > 0
    flat = X_test.reshape(-1, 3)
    mean, variance = model.predict(flat, chunk_size=5, observation_noise=True)
    joint = model.posterior(flat, observation_noise=True)
    assert torch.allclose(mean, joint.mean[:, 0], atol=1e-12)
    assert torch.allclose(variance, joint.variance[:, 0], atol=1e-12)
    mean32, variance32 = model.predict(flat, compute_dtype=torch.float32)
    assert torch.allclose(mean32.double(), mean, rtol=1e-4)  # stated float32 tolerance


@pytest.mark.parametrize("cast", ["to", "float", "half", "type"])
def test_a_dtype_asked_of_the_model_keeps_it_in_float64(cast):
    """``model.to(torch.float32)`` (as docs/conventions.md tells users to move models) made every
    posterior raise "expected m1 and m2 to have the same dtype" inside the features; so did a
    list of VISH models (two outputs) moved as a whole."""
    from manibo.models import build_surrogate

    model, X, _ = _model()
    X_test = SPACE.random(5, generator=torch.Generator().manual_seed(2))
    before = model.posterior(X_test)
    two = build_surrogate("vish", SPACE, X, torch.cat([X[:, :1], X[:, 1:2] ** 2], -1))
    two_before = two.posterior(X_test)
    for m in (model, two):
        if cast == "to":
            m.to(torch.float32)
        elif cast == "type":
            m.type(torch.float32)
        else:
            getattr(m, cast)()
        floats = [t for t in m.state_dict().values() if t.is_floating_point()]
        assert floats and all(t.dtype == torch.float64 for t in floats)
    after = model.posterior(X_test.float())
    assert after.mean.dtype == torch.float32
    assert torch.allclose(after.mean.double(), before.mean, rtol=1e-5, atol=1e-6)
    assert torch.equal(model.to("cpu", torch.float32).posterior(X_test).mean, before.mean)
    assert torch.equal(two.posterior(X_test).mean, two_before.mean)


def test_fit_on_the_cache_raises_the_bound():
    model, _, _ = _model()
    prior = model.prior
    fresh = VISHModel(prior, model.statistics, model.outcome_transform)
    fresh.likelihood.noise = 0.5
    prior.covar_module.outputscale = 0.3
    with torch.no_grad():
        before = float(fresh.bound())
    fresh.fit(maxiter=50)
    with torch.no_grad():
        assert float(fresh.bound()) > before + 1.0
    assert 0.005 < float(fresh.noise.detach()) < 0.05  # noise sd 0.2 of an outcome sd ~1.4


def test_stopping_tolerance():
    """L-BFGS-B on an ill-conditioned quadratic loss per point, 1 + (x1 - 3)^2 + 100 (x2 - 3)^2:
    with tolerance 0 it reaches the maximiser (3, 3); a loose tolerance stops earlier, after
    fewer evaluations, with the loss lowered but not minimised."""
    count = 50.0

    def run(tolerance):
        owner = torch.nn.Module()
        owner.x = torch.nn.Parameter(torch.zeros(2, dtype=torch.float64))
        evaluations = []

        def objective():
            evaluations.append(1)
            loss = 1 + (owner.x[0] - 3) ** 2 + 100 * (owner.x[1] - 3) ** 2
            return -count * loss

        optimize_bound(objective, [owner.x], count, 100, owner, tolerance)
        used = len(evaluations)
        with torch.no_grad():
            return owner.x.detach(), used, float(-objective() / count)

    tight, tight_evaluations, tight_loss = run(0.0)
    assert torch.allclose(tight, torch.full((2,), 3.0, dtype=torch.float64), atol=1e-4)
    loose, loose_evaluations, loose_loss = run(0.5)
    assert loose_evaluations < tight_evaluations
    assert tight_loss < loose_loss < 1 + 9 + 900  # the initial loss at (0, 0)
    with pytest.raises(ConfigurationError, match="tolerance"):
        run(-1.0)


@torch.no_grad()
def test_conditioning_equals_rebuilding_on_augmented_data():
    model, X, Y = _model()
    g = torch.Generator().manual_seed(7)
    X_new = SPACE.random(5, generator=g)
    Y_new = torch.randn(3, 5, 1, generator=g, dtype=torch.float64) + 3  # 3 fantasies
    conditioned = model.condition_on_observations(X_new, Y_new)
    assert conditioned.batch_shape == torch.Size([3])
    X_test = SPACE.random(6, generator=g)
    post = conditioned.posterior(X_test)
    for i in range(3):
        y_all = torch.cat([Y, Y_new[i]])[:, 0]
        y_std, _ = model.outcome_transform(y_all[:, None])
        stats = gather_statistics(model.prior.features, torch.cat([X, X_new]), y_std[:, 0])
        rebuilt = VISHModel(model.prior, stats, model.outcome_transform, model.likelihood)
        ref = rebuilt.posterior(X_test)
        assert torch.allclose(post.mean[i], ref.mean, atol=1e-10)
        assert torch.allclose(post.covariance_matrix[i], ref.covariance_matrix, atol=1e-10)
    # known noise equal to the fitted noise changes nothing; the original model is untouched
    same = model.condition_on_observations(X_new, Y_new[0], noise=model.noise.expand(5, 1).clone())
    plain = model.condition_on_observations(X_new, Y_new[0])
    assert torch.allclose(same.posterior(X_test).mean, plain.posterior(X_test).mean, atol=1e-12)
    assert model.batch_shape == torch.Size()
    with pytest.raises(InputDataError, match="must have shape"):
        model.condition_on_observations(X_new, Y_new[0, :3])


def test_fantasy_based_acquisitions():
    model, X, _ = _model()
    fantasy = model.fantasize(X[:2], SobolQMCNormalSampler(torch.Size([4]), seed=0))
    assert fantasy.batch_shape == torch.Size([4])
    X_opt = SPACE.random(2 * 5).reshape(2, 5, 3).requires_grad_(True)  # q = 1 plus 4 fantasies
    qkg = qKnowledgeGradient(model, num_fantasies=4)
    value = qkg(X_opt)
    value.sum().backward()
    assert value.shape == (2,) and torch.isfinite(X_opt.grad).all()
    ipv = qNegIntegratedPosteriorVariance(model, mc_points=SPACE.random(32))
    assert torch.isfinite(ipv(SPACE.random(3).reshape(3, 1, 3))).all()
    nei = qLogNoisyExpectedImprovement(model, X_baseline=X[:50], prune_baseline=True)
    assert torch.isfinite(nei(SPACE.random(4).reshape(2, 2, 3))).all()


def test_model_errors():
    model, _, _ = _model(50)
    batched = model.condition_on_observations(
        model.prior.features.transform.new_tensor([[0.0, 0.0, 1.0]]),
        torch.ones(2, 1, 1, dtype=torch.float64),
    )
    with pytest.raises(ConfigurationError, match="unbatched"):
        batched.predict(SPACE.random(3))
    with pytest.raises(ConfigurationError, match="batched"):
        batched.bound()
    with pytest.raises(InputDataError, match="shape"):
        model.predict(SPACE.random(3).reshape(1, 3, 3))
    other = VISHPrior(ScaleKernel(GeometricMaternKernel(SPACE, num_levels=12)), 16)
    with pytest.raises(ConfigurationError, match="features"):
        VISHModel(other, model.statistics)
    with pytest.raises(ConfigurationError, match="maxiter"):
        model.fit(maxiter=-1)


def test_a_joint_posterior_past_four_gib_is_refused_with_the_way_to_marginals():
    # the posterior at a 1-degree grid of the globe (64,800 points) asked the allocator for 34 GB
    # and failed inside the covariance product with a bare RuntimeError; and the guard counted
    # one covariance where a call holds five at its peak (q = 10,000: 0.80 GB, 4.0 GB used)
    from manibo.models.vish.model import JOINT_COVARIANCE_COPIES, MAX_JOINT_COVARIANCE_BYTES

    assert JOINT_COVARIANCE_COPIES == 5
    model, _, _ = _model()
    grid = SPACE.random(64_800, generator=torch.Generator().manual_seed(2))
    with pytest.raises(InputDataError, match=r"31\.29 GiB, and about 5 times.*model\.predict"):
        model.posterior(grid)
    with pytest.raises(InputDataError, match="1 x 10,400 x 10,400"):  # 4.03 GiB with its copies
        model.posterior(SPACE.random(10_400, generator=4))
    # noisy EI's baseline of every evaluated point: the message names the screen (it pointed to
    # predict, which gives no joint posterior)
    with pytest.raises(InputDataError, match=r"X_baseline.*screen_baseline\(model, train_X\)"):
        model.posterior(SPACE.random(10_400, generator=4))
    # batches count together: 8 members of 3,700 points need 4.1 GiB with their copies
    with pytest.raises(InputDataError, match="8 x 3,700 x 3,700"):
        model.posterior(SPACE.random(29_600, generator=3).reshape(8, 3700, 3))
    assert 5 * 8 * 3700**2 * 8 > MAX_JOINT_COVARIANCE_BYTES >= 5 * 8 * 3600**2 * 8
    mean, variance = model.predict(grid)  # the marginals, streamed
    assert mean.shape == variance.shape == (64_800,) and bool((variance > 0).all())
    head = model.posterior(grid[:50])
    assert torch.allclose(head.mean[:, 0], mean[:50]) and torch.allclose(
        head.variance[:, 0], variance[:50]
    )
