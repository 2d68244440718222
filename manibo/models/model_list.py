"""Independent single-output surrogates as one multi-output BoTorch model."""

from __future__ import annotations

import torch
from botorch.models.model import Model, ModelList
from botorch.posteriors import Posterior, PosteriorList
from botorch.posteriors.gpytorch import GPyTorchPosterior
from gpytorch.distributions import MultitaskMultivariateNormal
from torch import Tensor

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.models.outputs import check_output_indices


class OutcomeList(ModelList):
    """One single-output model per outcome, as a BoTorch ``ModelList`` that also conditions.

    BoTorch's ``ModelList`` subsets outputs and builds fantasy models; this subclass checks
    ``output_indices`` like every surrogate, returns one Gaussian posterior over all outcomes when
    every model's posterior is Gaussian (so that posterior transforms such as
    ``ScalarizedPosteriorTransform`` apply, as for BoTorch's ``ModelListGP``), and adds
    :meth:`condition_on_observations`, which hands each model its own column of ``Y``.

    Args:
        *models: single-output models, one per outcome, in the order of the outcomes.

    Raises:
        ConfigurationError: a model has more than one output.
    """

    def __init__(self, *models) -> None:
        several = [i for i, model in enumerate(models) if model.num_outputs != 1]
        if several:
            raise ConfigurationError(
                "an OutcomeList holds one single-output model per outcome, but "
                f"models[{several[0]}] has {models[several[0]].num_outputs} outputs; use "
                "BoTorch's ModelList for models of several outputs."
            )
        super().__init__(*models)

    def posterior(
        self,
        X: Tensor,
        output_indices: list[int] | None = None,
        observation_noise: bool | Tensor = False,
        posterior_transform=None,
        **kwargs,
    ) -> Posterior:
        """The joint posterior of the selected outcomes at ``X``.

        Args:
            X: inputs, shape ``(*batch, q, d)``.
            output_indices: None or the outcomes to return.
            observation_noise: True for each model's own noise, or a tensor of noise variances
                in the models' transformed units, shape ``(*batch, q, k)`` with one column per
                returned outcome, in the order of ``output_indices``.
            posterior_transform: applied last.

        Returns:
            A ``GPyTorchPosterior`` over ``(*batch', q, k)`` when every model's posterior is
            Gaussian, else a ``PosteriorList``.

        Raises:
            InputDataError: ``output_indices`` names an outcome the list does not have, or the
                noise tensor does not have one column per returned outcome.
        """
        check_output_indices(output_indices, self.num_outputs)
        indices = range(self.num_outputs) if output_indices is None else output_indices
        if isinstance(observation_noise, Tensor) and observation_noise.shape[-1:] != (
            len(indices),
        ):
            raise InputDataError(
                f"a tensor `observation_noise` needs one column per returned outcome "
                f"({len(indices)}), got shape {tuple(observation_noise.shape)}."
            )
        # each model is asked on its own, with its own column of a noise tensor: BoTorch's
        # ModelList hands the models the list's outcome indices, which a one-output model refuses
        parts = [
            self.models[i].posterior(
                X,
                observation_noise=observation_noise[..., j : j + 1]
                if isinstance(observation_noise, Tensor)
                else observation_noise,
            )
            for j, i in enumerate(indices)
        ]
        posterior = PosteriorList(*parts)
        if all(type(p) is GPyTorchPosterior for p in parts) and len(parts) > 1:
            mvns = [p.distribution for p in parts]
            batch = torch.broadcast_shapes(*(mvn.batch_shape for mvn in mvns))
            mvns = [mvn.expand(batch) for mvn in mvns]
            posterior = GPyTorchPosterior(MultitaskMultivariateNormal.from_independent_mvns(mvns))
        elif len(parts) == 1:
            posterior = parts[0]
        return posterior if posterior_transform is None else posterior_transform(posterior)

    def subset_output(self, idcs: list[int]) -> Model:
        """The outcomes ``idcs``, checked like ``output_indices``, in that order: the model of
        the one outcome, or an :class:`OutcomeList` of theirs. (BoTorch's ``ModelList`` took an
        index beyond the outcomes, 2 or -1 of two, for one of them, silently: a one-off error
        gave the other objective's model.)

        Raises:
            InputDataError: ``idcs`` is not a non-empty list of distinct outcome indices.
        """
        indices = check_output_indices(idcs, self.num_outputs)
        if len(indices) == 1:
            return self.models[indices[0]]
        return type(self)(*(self.models[i] for i in indices))

    def condition_on_observations(
        self, X: Tensor, Y: Tensor, noise: Tensor | None = None, **kwargs
    ) -> OutcomeList:
        """Each model conditioned on its column of ``Y``.

        Args:
            X: inputs, shape ``(*batch, n, d)``.
            Y: outcomes, shape ``(*batch', n, m)`` with ``m`` the number of models.
            noise: noise variances in the models' transformed units, shape of ``Y``, or None.
            **kwargs: passed to every model.

        Returns:
            An :class:`OutcomeList` of the conditioned models.
        """
        if Y.dim() < 2 or Y.shape[-1] != len(self.models):
            raise InputDataError(
                f"`Y` must have one column per model ({len(self.models)}), got shape "
                f"{tuple(Y.shape)}."
            )
        return type(self)(
            *(
                model.condition_on_observations(
                    X,
                    Y[..., j : j + 1],
                    **({} if noise is None else {"noise": noise[..., j : j + 1]}),
                    **kwargs,
                )
                for j, model in enumerate(self.models)
            )
        )
