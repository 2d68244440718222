"""Tutorial: a sparse GP on a million flight records with VISH, streamed in chunks.

VISH (variational inducing spherical harmonics) lifts inputs from R^8 onto S^8 and uses spherical
harmonics as inducing features: the prior covariance of the features is diagonal and the data
enter only through M x M sufficient statistics, gathered in one pass over chunks. Nothing of size
N x M is ever held, so N is limited by the time of one pass, not by memory.

The data are the synthetic airline-shaped records of ``manibo.problems.datasets.airline_like``
(eight covariates, a heavy-tailed delay in minutes), generated chunk by chunk as a reader of a large
file would deliver them. The fit is compared with the best constant predictor on held-out records.
Run with ``SMOKE_TEST=1`` for a quick check (20,000 records).
"""

import math
import os
import time

import torch

from manibo.kernels import ChordalMaternKernel, HomogeneousLiftKernel
from manibo.models.vish import fit_vish_streaming
from manibo.problems.datasets import airline_like
from manibo.spaces import Sphere

SMOKE_TEST = os.environ.get("SMOKE_TEST") == "1"
num_chunks, chunk_size = (2, 10_000) if SMOKE_TEST else (20, 50_000)

# Standardise with the moments of a first sample (a real pipeline would read them from the file).
sample_X, sample_y = airline_like(3_000, generator=torch.Generator().manual_seed(0))
x_mean, x_std = sample_X.mean(0), sample_X.std(0)
y_mean, y_std = sample_y.mean(), sample_y.std()


def standardised_chunks():
    """Yield ``(X (chunk_size, 8), y (chunk_size,))`` chunks in standard units."""
    for index in range(num_chunks):
        X, y = airline_like(chunk_size, generator=torch.Generator().manual_seed(1 + index))
        yield (X - x_mean) / x_std, (y - y_mean) / y_std


kernel = HomogeneousLiftKernel(ChordalMaternKernel(Sphere(8), nu=1.5), 8)  # R^8 lifted onto S^8
start = time.perf_counter()
model = fit_vish_streaming(
    standardised_chunks(),
    kernel,
    num_features=210,  # degrees 0..3 of the harmonics on S^8
    lift_sample=((sample_X - x_mean) / x_std, (sample_y - y_mean) / y_std),
    compute_dtype=torch.float32,
)
seconds = time.perf_counter() - start

test_X, test_y = airline_like(20_000, generator=torch.Generator().manual_seed(10_000))
test_X, test_y = (test_X - x_mean) / x_std, (test_y - y_mean) / y_std
mean, variance = model.predict(test_X, observation_noise=True)
mse = float(((mean - test_y) ** 2).mean())
nlpd = float(
    (
        0.5 * math.log(2 * math.pi) + 0.5 * variance.log() + 0.5 * (test_y - mean) ** 2 / variance
    ).mean()
)
constant_nlpd = 0.5 * math.log(2 * math.pi * float(test_y.var())) + 0.5
print(f"VISH on {num_chunks * chunk_size:,} records, M = 210: {seconds:.1f} s")
print(f"held-out standardised MSE {mse:.3f} (constant predictor: {float(test_y.var()):.3f})")
print(f"held-out NLPD {nlpd:.3f} (constant Gaussian: {constant_nlpd:.3f})")
assert mse < float(test_y.var()) and nlpd < constant_nlpd
