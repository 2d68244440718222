"""OutcomeList: one Gaussian posterior over independent single-output models, and conditioning
that hands each model its own column."""

import pytest
import torch
from botorch.acquisition.objective import ScalarizedPosteriorTransform
from botorch.posteriors.gpytorch import GPyTorchPosterior

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.models import OutcomeList, build_surrogate
from manibo.spaces import Sphere

SPACE = Sphere(2)


def _data():
    g = torch.Generator().manual_seed(0)
    X = SPACE.random(10, generator=g)
    return X, torch.cat([X[:, :1], X[:, 1:2] ** 2], dim=-1), SPACE.random(4, generator=g)


def test_registry_fits_one_model_per_column_of_a_single_output_surrogate():
    X, Y, X_test = _data()
    joint = build_surrogate("matern", SPACE, X, Y)
    assert isinstance(joint, OutcomeList) and joint.num_outputs == 2
    alone = [build_surrogate("matern", SPACE, X, Y[:, j : j + 1]) for j in (0, 1)]
    with torch.no_grad():
        posterior = joint.posterior(X_test.reshape(2, 2, 3))
        assert isinstance(posterior, GPyTorchPosterior) and posterior.mean.shape == (2, 2, 2)
        for j, model in enumerate(alone):
            single = model.posterior(X_test.reshape(2, 2, 3))
            assert torch.allclose(posterior.mean[..., j], single.mean[..., 0], atol=1e-10)
            assert torch.allclose(posterior.variance[..., j], single.variance[..., 0], atol=1e-10)
        weights = torch.tensor([1.0, -2.0], dtype=torch.float64)
        scalar = joint.posterior(X_test, posterior_transform=ScalarizedPosteriorTransform(weights))
        expected = alone[0].posterior(X_test).variance + 4 * alone[1].posterior(X_test).variance
        assert torch.allclose(scalar.variance, expected, atol=1e-10)


def test_conditioning_hands_each_model_its_column():
    X, Y, X_test = _data()
    joint = build_surrogate("vish", SPACE, X, Y, num_features=40, maxiter=10)
    X_new = SPACE.random(2, generator=torch.Generator().manual_seed(3))
    Y_new = torch.tensor([[0.5, -1.0], [2.0, 0.0]], dtype=torch.float64)
    conditioned = joint.condition_on_observations(X_new, Y_new)
    with torch.no_grad():
        for j, model in enumerate(joint.models):
            alone = model.condition_on_observations(X_new, Y_new[:, j : j + 1])
            mean = conditioned.posterior(X_test, output_indices=[j]).mean
            assert torch.allclose(mean, alone.posterior(X_test).mean, atol=1e-12)
    with pytest.raises(InputDataError, match="one column per model"):
        joint.condition_on_observations(X_new, Y_new[:, :1])
    with pytest.raises(InputDataError, match="output_indices"):
        joint.posterior(X_test, output_indices=[2])


@pytest.mark.parametrize("surrogate", ["matern", "vish"])
def test_a_noise_tensor_adds_each_outcomes_column_to_that_outcome(surrogate):
    # BoTorch's ModelList handed each one-output model the list's outcome indices with a noise
    # tensor, and the second model refused output_indices=[1]: every tensor noise failed
    X, Y, test = _data()
    test = test[:3]
    model = build_surrogate(surrogate, SPACE, X, Y)
    noise = torch.tensor([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]], dtype=torch.float64)
    with torch.no_grad():
        joint = model.posterior(test, observation_noise=noise).variance
        for j, sub in enumerate(model.models):
            alone = sub.posterior(test, observation_noise=noise[:, j : j + 1]).variance
            assert torch.allclose(joint[:, j : j + 1], alone, rtol=1e-10)
            assert (alone > sub.posterior(test).variance).all()
        second = model.posterior(test, output_indices=[1], observation_noise=noise[:, :1])
        alone = model.models[1].posterior(test, observation_noise=noise[:, :1])
        assert torch.allclose(second.variance, alone.variance, rtol=1e-10)
    with pytest.raises(InputDataError, match="one column per returned outcome"):
        model.posterior(test, output_indices=[1], observation_noise=noise)


def test_an_outcome_list_refuses_a_model_of_several_outputs():
    from botorch.models import SingleTaskGP

    X, Y, _ = _data()
    single = build_surrogate("matern", SPACE, X, Y[:, :1])
    with pytest.raises(ConfigurationError, match=r"models\[1\] has 2 outputs"):
        OutcomeList(single, SingleTaskGP(X, Y))
