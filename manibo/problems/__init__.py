"""Benchmark problems on spaces, with known optima, by name (``make_problem("ackley-sphere5")``).

``register_problem`` adds a problem or a family of problems with an integer parameter;
``available_problems()`` lists the names, plug-ins included.
"""

from manibo.problems import discrete, pose, rotation, sphere, torus  # noqa: F401  (registrations)
from manibo.problems.base import SpaceProblem
from manibo.problems.registry import available_problems, make_problem, register_problem

__all__ = ["SpaceProblem", "available_problems", "make_problem", "register_problem"]
