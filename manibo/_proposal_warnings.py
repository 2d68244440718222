"""Warnings issued while the loop proposes points: gathered, counted and reported in one summary.

A run fits a surrogate and optimises an acquisition at every step; BoTorch, GPyTorch and
linear_operator warn along the way (jitter added to a nearly singular matrix, a line search that
stopped early), often hundreds of times per run. Printed as they come they break the progress bar
and bury the warnings that matter, so the loop gathers them and reports them once: manibo's own
warnings (each names the option that fixes it) are issued again as they are, at the line of the
user's code that asked, the others are counted by kind in one
:class:`~manibo.exceptions.ProposalWarningSummary`.
"""

from __future__ import annotations

import re
import warnings

from botorch.exceptions.warnings import BadInitialCandidatesWarning, OptimizationWarning

from manibo.exceptions import ManiboWarning, ProposalWarningSummary, TruncationWarning

_NUMBER = re.compile(r"[-+]?\d+(\.\d+)?([eE][-+]?\d+)?")


def _advice(category: type[Warning], message: str) -> str:
    if "added jitter" in message:
        return (
            "the surrogate's values at points close to one another (evaluations that cluster "
            "near an optimum, and candidates among them) were singular to rounding when drawn "
            "together, so GPyTorch added jitter to the diagonal of their covariance; the "
            "proposals stay valid. On a noise-free objective, `acquisition`='qlogei' "
            "(`--acquisition qlogei` for `manibo run`) compares candidates with the best observed "
            "value instead of drawing the evaluated points' values as 'qlognei' does, and needs "
            "no jitter there."
        )
    if issubclass(category, BadInitialCandidatesWarning):
        return "few good starts were found for the acquisition ascent: raise `raw_samples`."
    if issubclass(category, OptimizationWarning):
        return (
            "a hyperparameter fit or an acquisition ascent stopped early (a failed line search or "
            "the iteration cap) and kept its best point; if proposals stall, raise "
            "`num_restarts` and `raw_samples`."
        )
    return ""


SMALL_JITTER = 1e-6
"""Jitter of at most this much (GPyTorch's first tries in float64: 1e-8, 1e-7, 1e-6) is counted
out of the summary: the draws it steadies are of the surrogate at clustered points, and the
proposals stay valid. The default qLogNEI draws such jitter at nearly every proposal near an
optimum (71 times in the 35 proposals of the quickstart example), which the summary had turned
into a warning against the default."""
_JITTER = re.compile(r"added jitter of ([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)")


def _small_jitter(message: str) -> bool:
    """Whether ``message`` reports jitter of at most :data:`SMALL_JITTER`."""
    found = _JITTER.search(message)
    return found is not None and float(found[1]) <= SMALL_JITTER


def _label(category: type[Warning], message: str) -> str:
    return "added jitter" if "added jitter" in message else category.__name__


TRUNCATED_PROPOSALS = 3
"""A :class:`~manibo.exceptions.TruncationWarning` is reported once the surrogates of this many
proposals of an optimiser (not necessarily in a row) needed more levels than their cap, or when
the last proposal of a run did: the first fits, on the few points of the initial design, often
choose a short lengthscale that the next evaluations lengthen (on S² × S¹ with the tutorial's
objective, 0.37 on 5 points, 0.84 on 6, then 1.7 to 3.1), and their warning advised a costlier
kernel that the run never needed."""


class ProposalWarnings:
    """The warnings of the proposals made since the last :meth:`report`.

    A kind of BoTorch's or GPyTorch's warnings is summarised once per optimiser: ask/tell reports
    after every proposal, and a run that clusters its evaluations near an optimum draws jitter
    warnings at nearly every one (175 summaries in 200 proposals, 44 KB of stderr).
    """

    def __init__(self) -> None:
        self._kinds: dict[tuple[type[Warning], str], list] = {}
        self._own: dict[tuple[type[Warning], str], warnings.WarningMessage] = {}
        self._summarised: set[tuple[type[Warning], str]] = set()
        self._truncation_reported = False
        self._truncation: warnings.WarningMessage | None = None  # of the latest proposal
        self._truncated_proposals = 0
        self.proposals = 0

    def add(self, caught: list[warnings.WarningMessage]) -> None:
        """Count the warnings caught during one proposal."""
        self.proposals += 1
        truncations = [w for w in caught if issubclass(w.category, TruncationWarning)]
        self._truncation = truncations[-1] if truncations else None
        self._truncated_proposals += bool(truncations)
        if self._truncated_proposals >= TRUNCATED_PROPOSALS:
            self._keep_truncation()
        for w in caught:
            text = str(w.message)
            if issubclass(w.category, TruncationWarning):
                continue
            if issubclass(w.category, ManiboWarning):
                self._own.setdefault((w.category, text), w)
                continue
            if _small_jitter(text):
                continue
            key = (w.category, _NUMBER.sub("#", text.splitlines()[0] if text else "")[:160])
            self._kinds.setdefault(key, [0, text.splitlines()[0][:300] if text else ""])
            self._kinds[key][0] += 1

    def _keep_truncation(self) -> None:
        """Hold the latest proposal's truncation warning for the next report; a new surrogate
        every step: a binding truncation is said once per optimiser."""
        if self._truncation is not None and not self._truncation_reported:
            self._truncation_reported = True
            w = self._truncation
            self._own.setdefault((w.category, str(w.message)), w)

    def report(self, stacklevel: int, activity: str | None = None, final: bool = True) -> None:
        """Issue manibo's own warnings and one summary of the others, then start afresh.

        Args:
            stacklevel: as for ``warnings.warn``, counted from the caller.
            activity: what the warnings were issued during, for the summary (default:
                ``"proposing N point(s)"``).
            final: whether no proposal follows (the end of a run, or the one fit of a result's
                model): a truncation of the latest proposal is then reported however few
                proposals were truncated (:data:`TRUNCATED_PROPOSALS`).
        """
        if final:
            self._keep_truncation()
        for w in self._own.values():  # at the caller's line, as the summary, not manibo's
            warnings.warn(w.message, stacklevel=stacklevel + 1)
        fresh = {k: v for k, v in self._kinds.items() if k not in self._summarised}
        if fresh:
            self._summarised.update(fresh)
            kinds = sorted(fresh.items(), key=lambda item: -item[1][0])
            total = sum(count for _, (count, _) in kinds)
            heading = ", ".join(
                f"{count} × {_label(category, example)}"
                for (category, _), (count, example) in kinds
            )
            activity = activity or f"proposing {self.proposals} point(s)"
            lines = [
                f"while {activity}, BoTorch and GPyTorch warned {total} time(s): {heading} "
                "(warnings of these kinds that this optimiser meets later are not summarised "
                "again)."
            ]
            for (category, _), (count, example) in kinds:
                advice = _advice(category, example)
                lines.append(f"  {count} × {category.__name__}: {example}")
                if advice:
                    lines.append(f"    {advice}")
            warnings.warn(ProposalWarningSummary("\n".join(lines)), stacklevel=stacklevel + 1)
        self._kinds.clear()
        self._own.clear()
        self.proposals = 0
