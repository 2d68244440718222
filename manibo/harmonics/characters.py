r"""Characters of SO(3) as a level recurrence in :math:`t = \cos\theta`, for streaming kernel sums.

The irreducible representation of SO(3) of signature :math:`p` has dimension :math:`2p+1` and
character

.. math::
    \chi_p(\theta) = \frac{\sin((2p+1)\theta/2)}{\sin(\theta/2)}
    = 1 + 2\sum_{k=1}^{p} T_k(\cos\theta),

a polynomial in :math:`t = \cos\theta`, with :math:`\chi_p'(t) = 2\sum_{k=1}^{p} k\, U_{k-1}(t)`
(:math:`T_k' = k U_{k-1}`). Both are accumulated with Chebyshev three-term recurrences, which are
bounded on :math:`[-1, 1]` and stable in float32 and float64.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch import Tensor


class SO3CharacterLevels:
    r"""SO(3) levels: :math:`b_p(t) = \chi_p(t)`, :math:`s_p = 2p+1`, :math:`G_p = (2p+1)\chi_p`.

    Implements :class:`~manibo.harmonics.series.LevelRecurrence` with :math:`t = \cos\theta`,
    :math:`\theta` the angle of the relative rotation :math:`R_1^\top R_2`.
    """

    def scales(self, num_levels: int) -> list[float]:
        return [float(2 * p + 1) for p in range(num_levels)]

    def iter_values(self, t: Tensor) -> Iterator[Tensor]:
        r"""Yield :math:`\chi_0(t), \chi_1(t), \dots` as one reused buffer, shape of ``t``."""
        chi = torch.ones_like(t)
        yield chi
        previous, current = torch.ones_like(t), t.clone()  # T_0, T_1
        while True:
            chi.add_(current, alpha=2.0)
            yield chi
            previous.mul_(-1.0).addcmul_(t, current, value=2.0)  # T_{k+1} = 2t T_k - T_{k-1}
            previous, current = current, previous

    def iter_derivatives(self, t: Tensor) -> Iterator[Tensor]:
        r"""Yield :math:`\chi_0'(t), \chi_1'(t), \dots` as one reused buffer, shape of ``t``."""
        slope = torch.zeros_like(t)
        yield slope
        previous, current = torch.zeros_like(t), torch.ones_like(t)  # U_{-1}, U_0
        k = 1
        while True:
            slope.add_(current, alpha=2.0 * k)
            yield slope
            previous.mul_(-1.0).addcmul_(t, current, value=2.0)  # U_k = 2t U_{k-1} - U_{k-2}
            previous, current = current, previous
            k += 1
