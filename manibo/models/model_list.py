"""Independent single-output surrogates as one multi-output BoTorch model."""

from __future__ import annotations

from botorch.models.model import ModelList
from torch import Tensor

from manibo.exceptions import InputDataError


class OutcomeList(ModelList):
    """One single-output model per outcome, as a BoTorch ``ModelList`` that also conditions.

    BoTorch's ``ModelList`` computes joint posteriors (a ``PosteriorList``), subsets outputs and
    builds fantasy models; this subclass adds :meth:`condition_on_observations`, which hands each
    model its own column of ``Y``.

    Args:
        *models: single-output models, one per outcome, in the order of the outcomes.
    """

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
