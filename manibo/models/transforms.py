r"""Outcome and input transforms of the surrogates.

Every surrogate takes BoTorch's ``outcome_transform=`` (default ``Standardize``) and
``input_transform=``; :func:`fitted_outcome_transform` and :func:`transformed_training_inputs` are
the two steps a factory applies to its training data. :class:`SpaceIsometry` is an input transform
that means something on a space: it moves every point by one isometry (a rotation of a sphere, a
shift of the angles of a torus, a left multiplication on SO(n)), so that a model with an isotropic
kernel predicts the same with and without it. :class:`SpaceEmbedding` gives a coordinate-based
model coordinates without seams (a circle's angle as its cosine and sine).
"""

from __future__ import annotations

import math

import torch
from botorch.models.transforms.input import InputTransform
from botorch.models.transforms.outcome import OutcomeTransform, Standardize
from botorch.utils.types import DEFAULT, _DefaultType
from torch import Tensor

from manibo._validation import shown
from manibo.exceptions import ConfigurationError, InputDataError
from manibo.spaces.base import Space
from manibo.spaces.circle import Circle
from manibo.spaces.product import ProductSpace
from manibo.spaces.special_orthogonal import SpecialOrthogonal
from manibo.spaces.sphere import Sphere

OutcomeTransformArg = OutcomeTransform | _DefaultType | None


def check_outcome_transform(outcome_transform: object) -> None:
    """Raise ``ConfigurationError`` unless ``outcome_transform`` is ``DEFAULT``, None or a BoTorch
    ``OutcomeTransform``."""
    if not (
        outcome_transform is DEFAULT
        or outcome_transform is None
        or isinstance(outcome_transform, OutcomeTransform)
    ):
        raise ConfigurationError(
            "`outcome_transform` must be a BoTorch OutcomeTransform (e.g. Standardize(m=1)) or "
            f"None, got {shown(outcome_transform)} ({type(outcome_transform).__name__})."
        )


def fitted_outcome_transform(
    train_Y: Tensor, outcome_transform: OutcomeTransformArg = DEFAULT
) -> tuple[OutcomeTransform | None, Tensor]:
    """Fit the outcome transform on the training outcomes and return it in eval mode.

    Args:
        train_Y: outcomes, shape ``(n, m)``.
        outcome_transform: ``DEFAULT`` (``Standardize(m)``), None (no transform) or a BoTorch
            ``OutcomeTransform`` (fitted here).

    Returns:
        ``(transform, Y)``: the fitted transform (None for none) and the transformed outcomes,
        shape ``(n, m)``.

    Raises:
        ConfigurationError: ``outcome_transform`` is not an ``OutcomeTransform``, or it was
            built for another number of outputs than ``train_Y`` has.
    """
    check_outcome_transform(outcome_transform)
    if outcome_transform is DEFAULT:
        outcome_transform = Standardize(m=train_Y.shape[-1])
    if outcome_transform is None:
        return None, train_Y
    m = train_Y.shape[-1]
    other = sorted(transform_outputs(outcome_transform) - {m})
    if other:  # BoTorch's own error was "Wrong output dimension. Y.size(-1) is 2; expected 1."
        raise ConfigurationError(
            f"`outcome_transform` is a {type(outcome_transform).__name__} of m={other[0]} "
            f"outputs, but this surrogate models the {m} columns of train_Y together: pass one "
            f"of m={m}, such as Standardize(m={m})."
        )
    outcome_transform.to(train_Y).train()
    Y, _ = outcome_transform(train_Y)
    outcome_transform.eval()
    return outcome_transform, Y


def transform_outputs(transform: object) -> set[int]:
    """The output counts ``m`` that ``transform`` and the transforms inside it (a
    ``ChainedOutcomeTransform``'s) were built for, where they record one (``Standardize``'s
    ``_m``)."""
    if not isinstance(transform, torch.nn.Module):
        return set()
    return {int(t._m) for t in transform.modules() if isinstance(getattr(t, "_m", None), int)}


def standardize_from_moments(mean: Tensor, std: Tensor) -> Standardize:
    """A ``Standardize`` in eval mode with given constants (for statistics gathered in a stream).

    Args:
        mean: outcome means, shape ``(m,)``.
        std: outcome standard deviations ``> 0``, shape ``(m,)``.
    """
    transform = Standardize(m=mean.shape[-1]).to(mean)
    transform.means = mean.reshape(1, -1).clone()
    transform.stdvs = std.reshape(1, -1).clone()
    transform._stdvs_sq = transform.stdvs.pow(2)
    transform._is_trained = torch.tensor(True)
    return transform.eval()


def checked_input_transform(input_transform: InputTransform | None) -> InputTransform | None:
    """``input_transform`` in eval mode, or None.

    Raises:
        ConfigurationError: it is not a BoTorch ``InputTransform``.
    """
    if input_transform is None:
        return None
    if not isinstance(input_transform, InputTransform):
        raise ConfigurationError(
            "`input_transform` must be a BoTorch InputTransform (e.g. "
            f"manibo.models.SpaceIsometry(space)) or None, got {type(input_transform).__name__}."
        )
    return input_transform.eval()


def transformed_training_inputs(train_X: Tensor, input_transform: InputTransform | None) -> Tensor:
    """The training inputs as the model sees them: ``input_transform.preprocess_transform``.

    Args:
        train_X: inputs, shape ``(n, d)``.
        input_transform: a BoTorch input transform, or None.

    Returns:
        Shape ``(n, d')``.
    """
    if input_transform is None:
        return train_X
    input_transform.to(train_X)
    with torch.no_grad():
        return input_transform.preprocess_transform(train_X)


class _Isometry(torch.nn.Module):
    """An isometry of one space, applied to points ``(*batch, n, size)``."""


class _SphereRotation(_Isometry):
    def __init__(self, sphere: Sphere, generator: torch.Generator) -> None:
        super().__init__()
        size = sphere.dim + 1
        q, r = torch.linalg.qr(torch.randn(size, size, generator=generator, dtype=torch.float64))
        self.register_buffer("rotation", q * torch.sign(torch.diagonal(r)))

    def forward(self, x: Tensor) -> Tensor:
        return x @ self.rotation.to(x).transpose(-1, -2)


class _AngleShift(_Isometry):
    def __init__(self, generator: torch.Generator) -> None:
        super().__init__()
        shift = 2 * math.pi * torch.rand(1, generator=generator, dtype=torch.float64)
        self.register_buffer("shift", shift)

    def forward(self, x: Tensor) -> Tensor:
        return torch.remainder(x + self.shift.to(x), 2 * math.pi)


class _LeftRotation(_Isometry):
    def __init__(self, group: SpecialOrthogonal, generator: torch.Generator) -> None:
        super().__init__()
        self.n = group.n
        self.register_buffer(
            "rotation", group.random(1, generator=generator)[0].reshape(group.n, -1)
        )

    def forward(self, x: Tensor) -> Tensor:
        matrices = x.unflatten(-1, (self.n, self.n))
        return (self.rotation.to(x) @ matrices).flatten(-2)


class _FactorwiseIsometry(_Isometry):
    def __init__(self, space: ProductSpace, generator: torch.Generator) -> None:
        super().__init__()
        self.slices = list(space.slices)
        self.parts = torch.nn.ModuleList(_isometry(f, generator) for f in space.factors)

    def forward(self, x: Tensor) -> Tensor:
        return torch.cat([p(x[..., s]) for p, s in zip(self.parts, self.slices, strict=True)], -1)


def _isometry(space: Space, generator: torch.Generator) -> _Isometry:
    if isinstance(space, Sphere):
        return _SphereRotation(space, generator)
    if isinstance(space, Circle):
        return _AngleShift(generator)
    if isinstance(space, SpecialOrthogonal):
        return _LeftRotation(space, generator)
    if isinstance(space, ProductSpace):
        return _FactorwiseIsometry(space, generator)
    raise ConfigurationError(
        f"SpaceIsometry knows the isometries of spheres, circles, tori, SO(n) and their products, "
        f"not of {space!r}; write an InputTransform for it."
    )


class SpaceIsometry(InputTransform):
    r"""An input transform that moves every point of a space by one seeded isometry.

    Spheres: a rotation :math:`x \mapsto Qx`; circles and tori: a shift of every angle (wrapped to
    :math:`[0, 2\pi)`); SO(n): :math:`R \mapsto QR`; products: one of these per factor. The image of
    a point lies on the space, and geodesic distances are preserved, so a surrogate with an
    isotropic kernel (``"matern"``, ``"heat"``) predicts the same with or without the transform,
    while a coordinate-based one (``"euclidean"``, ``"chart"``) does not.

    Args:
        space: a sphere, circle, torus, SO(n), or a product of these.
        seed: seed of the isometry.
        transform_on_train: apply to training inputs.
        transform_on_eval: apply to test inputs.
        transform_on_fantasize: apply to fantasy inputs.
    """

    def __init__(
        self,
        space: Space,
        seed: int = 0,
        transform_on_train: bool = True,
        transform_on_eval: bool = True,
        transform_on_fantasize: bool = True,
    ) -> None:
        super().__init__()
        self.space = space
        self.isometry = _isometry(space, torch.Generator().manual_seed(int(seed)))
        self.transform_on_train = transform_on_train
        self.transform_on_eval = transform_on_eval
        self.transform_on_fantasize = transform_on_fantasize

    def transform(self, X: Tensor) -> Tensor:
        """The moved points.

        Args:
            X: points ``(*batch, n, d)`` of the space, flattened.

        Returns:
            Shape ``(*batch, n, d)``, on the space.
        """
        return self.isometry(X)


class SpaceEmbedding(InputTransform):
    r"""An input transform from a space's points to :meth:`~manibo.spaces.base.Space.embed`.

    A coordinate-based model then sees a circle's angle as :math:`(\cos\theta, \sin\theta)`
    (no seam at 0 = 2π) and an axis of :math:`\mathbb{RP}^d` as :math:`x x^\top` (the same for
    both signs); on spheres, SO(n), SPD matrices and the hyperboloid it keeps the coordinates.

    Args:
        space: the space of the inputs.
    """

    def __init__(self, space: Space) -> None:
        super().__init__()
        self.space = space
        self.transform_on_train = True
        self.transform_on_eval = True
        self.transform_on_fantasize = True

    def transform(self, X: Tensor) -> Tensor:
        """The embedded points.

        Args:
            X: points ``(*batch, n, d)`` of the space, flattened.

        Returns:
            Shape ``(*batch, n, E)``.

        Raises:
            InputDataError: ``X`` does not hold flattened points of the space.
        """
        size = math.prod(self.space.point_shape)
        if X.dim() < 2 or X.shape[-1] != size:
            raise InputDataError(
                f"`X` must have shape (*batch, n, {size}) (points of {self.space}, flattened), "
                f"got {tuple(X.shape)}."
            )
        return self.space.embed(self.space.check(X.unflatten(-1, self.space.point_shape), "X"))

    def equals(self, other: InputTransform) -> bool:
        return isinstance(other, SpaceEmbedding) and other.space.fingerprint() == (
            self.space.fingerprint()
        )


class TransformedTrainingInputs:
    """Mixin for BoTorch models that keep their training data only in transformed form.

    BoTorch's ``Model.eval`` and ``Model.train`` swap ``train_inputs`` between raw and transformed
    inputs and warn when a model has an input transform but no ``train_inputs``. A model built on
    :func:`transformed_training_inputs` (statistics, a trained network) has nothing to swap.
    """

    def _set_transformed_inputs(self) -> None:
        """Nothing to do: the training data entered the model transformed."""

    def _revert_to_original_inputs(self) -> None:
        """Nothing to do: the model keeps no raw training inputs to restore."""
