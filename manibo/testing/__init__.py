"""Contract checks every space and kernel must pass.

Shipped so that users test their own spaces too.
"""

from manibo.testing.contracts import check_kernel_contract, check_space_contract

__all__ = ["check_kernel_contract", "check_space_contract"]
