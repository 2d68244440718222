r"""VISH: sparse GPs whose inducing features are spherical harmonics (Dutordoir et al. 2020).

Modules, in dependency order:

* :mod:`~manibo.models.vish.spectrum`: eigenvalues, prior variance, residual, levels per budget.
* :mod:`~manibo.models.vish.features`: harmonic features on the sphere or of lifted inputs.
* :mod:`~manibo.models.vish.prior`: kernel + spectrum + features; which parameters are cacheable.
* :mod:`~manibo.models.vish.statistics`: the sufficient statistics and the streaming pass.
* :mod:`~manibo.models.vish.distributed`: the pass as a Dask map-reduce.
* :mod:`~manibo.models.vish.collapsed`: the collapsed bound and the weight posterior.
* :mod:`~manibo.models.vish.variational`: the whitened uncollapsed bound (non-Gaussian likelihoods).
* :mod:`~manibo.models.vish.model`: the BoTorch model.
* :mod:`~manibo.models.vish.fit`: lift on a sample, one pass, hyperparameters on the cache.
* :mod:`~manibo.models.vish.surrogate`: the ``"vish"`` surrogate of the registry.
"""

from manibo.models.vish.collapsed import WeightPosterior, collapsed_bound, weight_posterior
from manibo.models.vish.distributed import dask_statistics
from manibo.models.vish.features import VISHFeatures
from manibo.models.vish.fit import fit_lift, fit_vish, fit_vish_streaming, initialise_lift
from manibo.models.vish.model import VISHModel, default_likelihood
from manibo.models.vish.prior import VISHPrior
from manibo.models.vish.spectrum import ZonalSpectrum
from manibo.models.vish.statistics import (
    SufficientStatistics,
    gather_statistics,
    statistics_from_chunks,
)
from manibo.models.vish.surrogate import vish_surrogate
from manibo.models.vish.variational import VariationalVISH, fit_variational

__all__ = [
    "SufficientStatistics",
    "VISHFeatures",
    "VISHModel",
    "VISHPrior",
    "VariationalVISH",
    "WeightPosterior",
    "ZonalSpectrum",
    "collapsed_bound",
    "dask_statistics",
    "default_likelihood",
    "fit_lift",
    "fit_variational",
    "fit_vish",
    "fit_vish_streaming",
    "gather_statistics",
    "initialise_lift",
    "statistics_from_chunks",
    "vish_surrogate",
    "weight_posterior",
]
