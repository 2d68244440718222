"""The ``"adgp"`` surrogate of the registry: the activated deep GP on the coordinates of a space."""

from __future__ import annotations

import inspect

from botorch.models.transforms.input import ChainedInputTransform

from manibo.exceptions import ConfigurationError
from manibo.models.adgp.model import ActivatedDGPModel
from manibo.models.exact_gp import validate_training_data
from manibo.models.inputs import indices_not_coordinates
from manibo.models.registry import register_surrogate
from manibo.models.transforms import SpaceEmbedding, checked_input_transform

#: Defaults of the ``"adgp"`` surrogate: a small network and short training, so that one Bayesian
#: optimisation iteration costs seconds on a CPU (measured in ``docs/adgp.md``).
SURROGATE_DEFAULTS = {
    "num_layers": 1,
    "num_units": 128,
    "network_epochs": 100,
    "network_lr": 1e-2,
    "elbo_epochs": 100,
    "num_samples": 2,
    "stage_two_objective": "predictive",
    "warm_network_epochs": 30,
    "warm_elbo_epochs": 30,
}


def _indices_not_coordinates(space) -> str | None:
    return indices_not_coordinates("adgp", space, "use a geometric surrogate ('matern', 'heat').")


@register_surrogate(
    "adgp",
    unsupported=_indices_not_coordinates,
    unsupported_features={
        "train_Yvar": "the activated deep GP fits one noise variance shared by all "
        "observations; the exact 'matern', 'heat', 'euclidean' and 'chart' surrogates take known "
        "noise variances."
    },
    multi_output=True,
    check_options={"network_epochs": 1, "elbo_epochs": 1},
)
def activated_dgp_surrogate(
    space, train_X, train_Y, previous_model=None, warm_start=False, **options
) -> ActivatedDGPModel:
    """Activated deep GP on the embedded points (options: see :class:`ActivatedDGPModel`).

    Builds the model, then trains it (:meth:`ActivatedDGPModel.fit`). Several columns of
    ``train_Y`` are modelled jointly by one network with one output per column. The network sees
    the points through :class:`~manibo.models.SpaceEmbedding` (a circle's angle as its cosine and
    sine); an ``input_transform`` option acts on the points before that embedding and must return
    points of the space (an isometry such as :class:`~manibo.models.SpaceIsometry`): a transform
    that leaves the space, such as a ``Normalize`` of a torus's angles, brings its seam back.

    The loop offers its previous surrogate as ``previous_model``. It is used only with
    ``warm_start=True``: the network then starts from the previous one and trains for
    ``warm_network_epochs`` and ``warm_elbo_epochs`` steps. Off by default, because a proposal then
    depends on the surrogates before it, not only on the seed and the data, so a run resumed from
    its journal (which starts cold) no longer proposes exactly the points of an uninterrupted run.
    """
    validate_training_data(space, train_X, train_Y)
    accepted = set(inspect.signature(ActivatedDGPModel).parameters)
    unknown = set(options) - (accepted - {"train_X", "train_Y", "previous_model"})
    if unknown:
        raise ConfigurationError(
            f"unknown option(s) {sorted(unknown)} for the 'adgp' surrogate; see "
            "manibo.models.adgp.ActivatedDGPModel for the accepted ones."
        )
    if not isinstance(warm_start, bool):
        raise ConfigurationError(f"`warm_start` must be True or False, got {warm_start!r}.")
    user_transform = checked_input_transform(options.pop("input_transform", None))
    embedding = SpaceEmbedding(space)
    model = ActivatedDGPModel(
        train_X.reshape(train_X.shape[0], -1),
        train_Y,
        previous_model=previous_model if warm_start else None,
        input_transform=(
            embedding
            if user_transform is None
            else ChainedInputTransform(user=user_transform, embedding=embedding)
        ),
        **{**SURROGATE_DEFAULTS, **options},
    )
    return model.fit()
