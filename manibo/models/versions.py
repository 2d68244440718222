"""Has a module changed since a posterior or a fantasy model read it?

A model whose posterior computes lazily, or whose fantasy models share its network, would
otherwise mix two states of the model once it changes: :func:`tensor_versions` fingerprints every
parameter and buffer (its identity, storage and in-place version counter, which fitting steps and
``load_state_dict`` advance and dtype or device moves replace), and :func:`check_unchanged`
refuses a read after a change. Writes through ``.data`` (GPyTorch's setters, such as
``likelihood.noise = 0.2``) keep the version counter and are not seen.
"""

from __future__ import annotations

from torch import nn

from manibo.exceptions import StaleModelError


def tensor_versions(module: nn.Module) -> tuple[tuple[int, int, int], ...]:
    """``(id, data_ptr, version)`` of every parameter and buffer of ``module``."""
    return tuple(
        (id(t), t.data_ptr(), _version(t)) for t in (*module.parameters(), *module.buffers())
    )


def check_unchanged(module: nn.Module, versions: tuple, what: str) -> None:
    """Raise :class:`~manibo.exceptions.StaleModelError` unless ``module`` is as ``versions``
    (from :func:`tensor_versions`) found it; ``what`` names the reader in the message."""
    if tensor_versions(module) != versions:
        raise StaleModelError(
            f"this {what} was made before its model changed (a fit, load_state_dict, or a move to "
            "another dtype or device) and would mix the two states; take a new one from the "
            "model as it is now."
        )


def _version(t) -> int:
    try:
        return t._version
    except RuntimeError:  # an inference tensor keeps no version counter, and cannot change
        return -1


_FRESH = "fresh"  # a copied reader's versions: to be taken anew, on the copy's own module
_STALE = ("stale",)  # matches no module's versions


class KeepsVersions:
    """Mixin (before the other bases) of an object that keeps :func:`tensor_versions` of one of
    its modules in an attribute: copied or pickled, a reader that was current is current for the
    copy's module (its own copy, or the one a ``deepcopy`` memo shares), and a stale one stays
    stale (the fingerprint names tensors, which a copy replaces).

    Attributes:
        _versions_attr: the attribute holding the versions (when it holds None, nothing is kept).
        _versions_of: the attribute holding the module.
    """

    _versions_attr: str
    _versions_of: str

    def __getstate__(self):
        state = dict(super().__getstate__())
        versions = state.get(self._versions_attr)
        if versions is not None:
            current = tensor_versions(getattr(self, self._versions_of)) == versions
            state[self._versions_attr] = _FRESH if current else _STALE
        return state

    def __setstate__(self, state) -> None:
        restore = getattr(super(), "__setstate__", None)
        if restore is None:
            self.__dict__.update(state)
        else:
            restore(state)
        if state.get(self._versions_attr) == _FRESH:
            module = getattr(self, self._versions_of)
            setattr(self, self._versions_attr, tensor_versions(module))
