"""Orientation costs on SO(3) and SO(n).

The cost is Ackley of the rotation vector (SO(3)) or of the logarithm coordinates (SO(n)) of the
rotation that takes a target orientation to R.
"""

from __future__ import annotations

import math

import torch
from botorch.test_functions.synthetic import Ackley
from torch import Tensor

from manibo.problems.base import SpaceProblem, evaluate_on_device
from manibo.problems.registry import register_problem
from manibo.spaces.special_orthogonal import SpecialOrthogonal


def rotation_vector(r: Tensor) -> Tensor:
    """Axis times angle of rotation matrices; ``(*batch, 3, 3)`` → ``(*batch, 3)``."""
    skew = torch.stack(
        [r[..., 2, 1] - r[..., 1, 2], r[..., 0, 2] - r[..., 2, 0], r[..., 1, 0] - r[..., 0, 1]], -1
    )
    sin2 = skew.norm(dim=-1)  # = 2 sin(theta)
    cos2 = r.diagonal(dim1=-2, dim2=-1).sum(-1) - 1  # = 2 cos(theta)
    theta = torch.atan2(sin2, cos2)
    small = sin2 < 1e-7
    factor = torch.where(small, 0.5 + theta**2 / 12, theta / sin2.clamp_min(1e-300))
    vec = skew * factor.unsqueeze(-1)
    near_pi = theta > math.pi - 1e-4  # the skew part vanishes: read the axis off the symmetric part
    if near_pi.any():
        # (R + Rᵀ)/2 - cos(θ) I = (1 - cos θ) n nᵀ: its column with the largest diagonal entry is
        # n up to sign; the skew part, 2 sin(θ) n, gives the sign where it is non-zero.
        near = r[near_pi]
        eye = torch.eye(3, dtype=r.dtype, device=r.device)
        outer = (near + near.transpose(-1, -2)) / 2 - (cos2[near_pi] / 2)[..., None, None] * eye
        col = outer.diagonal(dim1=-2, dim2=-1).argmax(-1)
        axis = outer[torch.arange(outer.shape[0], device=r.device), :, col]
        axis = axis / axis.norm(dim=-1, keepdim=True)
        flip = (axis * skew[near_pi]).sum(-1, keepdim=True) < 0
        axis = torch.where(flip, -axis, axis)
        vec[near_pi] = axis * theta[near_pi].unsqueeze(-1)
    return vec


@register_problem("orientation-so3")
class OrientationAckley(SpaceProblem):
    """Ackley of the rotation vector of ``R_targetᵀ R``; minimum 0 at ``R_target``."""

    optimal_value = 0.0

    def __init__(self, noise_std: float = 0.0) -> None:
        super().__init__(noise_std)
        self.name = "orientation-so3"
        self.space = SpecialOrthogonal(3)
        axis = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
        angle = 1.2
        k = axis / axis.norm()
        skew = torch.tensor(
            [[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]], dtype=torch.float64
        )
        self.target = torch.linalg.matrix_exp(angle * skew)
        self._ackley = Ackley(dim=3)

    def evaluate_true(self, x: Tensor) -> Tensor:
        r = x.reshape(*x.shape[:-1], 3, 3)
        relative = self.target.to(x).transpose(-1, -2) @ r
        return evaluate_on_device(self._ackley, rotation_vector(relative))

    @property
    def optimizers(self) -> Tensor:
        return self.target.reshape(1, 9)


def log_coordinates(r: Tensor) -> Tensor:
    r"""Coordinates :math:`(\Omega_{ij})_{i<j}` of a real logarithm :math:`\Omega` of rotations.

    :math:`\Omega` is skew-symmetric with :math:`\exp(\Omega) = R`, built from SciPy's real Schur
    decomposition :math:`R = Q T Q^\top` on the CPU in float64: for a rotation :math:`T` is
    block-diagonal with 2×2 rotation blocks, whose angles :math:`\theta_j \in (0, \pi]` come from
    ``atan2``, and ±1 entries; the −1 entries come in pairs, each pair taken as a rotation by
    :math:`\pi`. Where no angle is :math:`\pi` this is the principal logarithm (SciPy's ``logm``
    to rounding); at angle :math:`\pi` the logarithm is not unique and one of them is returned.
    ``(*batch, n, n)`` → ``(*batch, n(n-1)/2)`` in the dtype and on the device of ``r``, with norm
    :math:`\sqrt{\sum_j \theta_j^2}`, the geodesic distance from the identity.

    Raises:
        ValueError: if a matrix has an odd number of −1 entries in ``T`` (determinant −1).
    """
    import numpy as np
    from scipy.linalg import schur

    n = r.shape[-1]
    flat = r.detach().cpu().to(torch.float64).reshape(-1, n, n).numpy()
    logs = np.zeros((len(flat), n, n))
    for index, m in enumerate(flat):
        t, q = schur(m, output="real")
        omega = np.zeros((n, n))
        negative = []
        i = 0
        while i < n:
            if i + 1 < n and t[i + 1, i] != 0.0:  # a 2×2 block [[cos, -sin], [sin, cos]]
                angle = math.atan2((t[i + 1, i] - t[i, i + 1]) / 2, (t[i, i] + t[i + 1, i + 1]) / 2)
                omega[i + 1, i], omega[i, i + 1] = angle, -angle
                i += 2
                continue
            if t[i, i] < 0:
                negative.append(i)
            i += 1
        if len(negative) % 2:
            raise ValueError(f"log_coordinates: matrix {index} has determinant -1, not a rotation")
        for a, b in zip(negative[::2], negative[1::2], strict=True):
            omega[b, a], omega[a, b] = math.pi, -math.pi
        logs[index] = q @ omega @ q.T
    rows, cols = np.triu_indices(n, 1)
    coords = torch.from_numpy(logs[:, rows, cols].copy()).to(r)
    return coords.reshape(*r.shape[:-2], len(rows))


@register_problem("orientation-so", parameter="n", minimum=4)
class OrientationAckleySO(SpaceProblem):
    r"""Ackley of the logarithm coordinates of :math:`R_\star^\top R` on SO(n); minimum 0 at
    :math:`R_\star`, a fixed rotation by angles (1.0, 0.6, ...) in successive coordinate planes.

    Args:
        n: the matrix size (``orientation-so4`` is ``n = 4``).
        noise_std: observation noise.
    """

    optimal_value = 0.0

    def __init__(self, n: int, noise_std: float = 0.0) -> None:
        super().__init__(noise_std)
        self.name = f"orientation-so{n}"
        self.space = SpecialOrthogonal(n)
        skew = torch.zeros(n, n, dtype=torch.float64)
        for k, (i, j) in enumerate(zip(range(n - 1), range(1, n), strict=True)):
            skew[i, j], skew[j, i] = -(1.0 - 0.4 * k / n), 1.0 - 0.4 * k / n
        skew[0, n - 1], skew[n - 1, 0] = -0.3, 0.3
        self.target = torch.linalg.matrix_exp(skew)
        self._ackley = Ackley(dim=n * (n - 1) // 2)

    def evaluate_true(self, x: Tensor) -> Tensor:
        n = self.space.n
        r = x.reshape(*x.shape[:-1], n, n)
        relative = self.target.to(x).transpose(-1, -2) @ r
        return evaluate_on_device(self._ackley, log_coordinates(relative))

    @property
    def optimizers(self) -> Tensor:
        return self.target.reshape(1, -1)
