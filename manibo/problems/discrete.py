"""Functions on the vertices of a generated surface mesh and on the nodes of a generated graph."""

from __future__ import annotations

import math

import torch
from torch import Tensor

from manibo.problems.base import SpaceProblem
from manibo.problems.registry import register_problem
from manibo.spaces.graph import Graph
from manibo.spaces.mesh import Mesh


def _bumps(positions: Tensor, centres: Tensor, widths: Tensor, heights: Tensor) -> Tensor:
    """Sum of Gaussian bumps; positions ``(n, k)`` → ``(n,)``."""
    d2 = ((positions.unsqueeze(-2) - centres) ** 2).sum(-1)
    return -(heights * torch.exp(-d2 / (2 * widths**2))).sum(-1)


class _VertexFunction(SpaceProblem):
    """A function tabulated on the points of a finite space; the minimum is found by enumeration."""

    def _set_values(self, values: Tensor) -> None:
        self.values = values
        self.optimal_value = float(values.min())

    def evaluate_true(self, x: Tensor) -> Tensor:
        return self.values.to(x)[x[..., 0].round().long()]

    @property
    def optimizers(self) -> Tensor:
        idx = torch.nonzero(self.values == self.values.min()).reshape(-1)
        return idx.to(torch.float64).unsqueeze(-1)


@register_problem("bumps-mesh")
class BumpsOnMesh(_VertexFunction):
    """Three Gaussian bumps of different depths on an icosphere (a surface generated in code)."""

    def __init__(self, subdivisions: int = 3, noise_std: float = 0.0) -> None:
        super().__init__(noise_std)
        self.name = "bumps-mesh"
        self.space = Mesh.icosphere(subdivisions)
        centres = torch.tensor(
            [[0.0, 0.6, 0.8], [0.8, -0.6, 0.0], [-0.5, -0.5, -0.7]], dtype=torch.float64
        )
        self._set_values(
            _bumps(
                self.space.vertices.to(torch.float64),
                centres / centres.norm(dim=-1, keepdim=True),
                torch.tensor([0.35, 0.25, 0.5], dtype=torch.float64),
                torch.tensor([1.0, 1.4, 0.8], dtype=torch.float64),
            )
        )


@register_problem("bumps-graph")
class BumpsOnGraph(_VertexFunction):
    """Gaussian bumps over a grid graph with some edges removed (a maze-like road network)."""

    def __init__(self, side: int = 15, noise_std: float = 0.0, seed: int = 0) -> None:
        super().__init__(noise_std)
        self.name = "bumps-graph"
        gen = torch.Generator().manual_seed(seed)
        n = side * side
        adjacency = torch.zeros(n, n, dtype=torch.float64)
        for r in range(side):
            for c in range(side):
                i = r * side + c
                for j in ([i + 1] if c + 1 < side else []) + ([i + side] if r + 1 < side else []):
                    if torch.rand(1, generator=gen) > 0.2:
                        adjacency[i, j] = adjacency[j, i] = 1.0
        self.space = Graph(adjacency)
        grid = torch.stack(
            torch.meshgrid(torch.arange(side), torch.arange(side), indexing="ij"), -1
        )
        positions = grid.reshape(n, 2).to(torch.float64) / (side - 1)
        self._set_values(
            _bumps(
                positions,
                torch.tensor([[0.2, 0.8], [0.75, 0.3]], dtype=torch.float64),
                torch.tensor([0.12, 0.2], dtype=torch.float64),
                torch.tensor([1.5, 1.0], dtype=torch.float64),
            )
            + 0.1 * torch.cos(2 * math.pi * positions[:, 0])
        )
