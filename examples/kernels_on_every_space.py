"""Tutorial: one Matérn kernel class on the sphere, circle, torus, SO(3), Gr(2, 4), a mesh, a graph.

Gr(2, 4) is the Grassmann manifold of planes in R⁴.

Run it with ``python examples/kernels_on_every_space.py``; ``SMOKE_TEST=1`` uses fewer points.
"""

import os

import torch

from manibo.kernels import GeometricMaternKernel
from manibo.spaces import Circle, Graph, Grassmann, Mesh, SpecialOrthogonal, Sphere, Torus

SMOKE_TEST = os.environ.get("SMOKE_TEST") == "1"
N = 20 if SMOKE_TEST else 200

cycle = torch.zeros(30, 30, dtype=torch.float64)
for i in range(30):
    cycle[i, (i + 1) % 30] = cycle[(i + 1) % 30, i] = 1.0

spaces = {
    "globe S²": Sphere(2),
    "hypersphere S⁵": Sphere(5),
    "circle": Circle(),
    "torus T²": Torus(2),
    "rotations SO(3)": SpecialOrthogonal(3),
    "planes Gr(2, 4)": Grassmann(2, 4),
    "icosphere mesh": Mesh.icosphere(2),
    "30-cycle graph": Graph(cycle),
}

# levels are chosen from the spectrum, up to a cap set by their cost; on a torus, where that cap
# would leave out spectral mass (the default lengthscale 0.693 needs 791 levels on T², the cap is
# 421), the kernel sums the periodic images of the Euclidean Matérn kernel instead: it is exact
generator = torch.Generator().manual_seed(0)
for name, space in spaces.items():
    kernel = GeometricMaternKernel(space, nu=2.5).double()
    x = space.random(N, generator=generator)
    with torch.no_grad():
        K = kernel(x).to_dense()
    smallest = float(torch.linalg.eigvalsh(K).min())
    images = kernel.periodic_images(kernel.lengthscale)
    if images is None:
        terms = f"{kernel.levels_for(kernel.lengthscale):4d} levels"
    else:
        terms = f"{images[1].shape[0]:4d} images"
    print(
        f"{name:18s} K {tuple(K.shape)}, {terms}, "
        f"mean k(x,x) = {float(K.diagonal().mean()):.3f}, "
        f"min eigenvalue {smallest:.1e}"
    )
    assert torch.allclose(K, K.T) and smallest > -1e-8
