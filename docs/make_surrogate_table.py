"""Write the tables of what works with what into ``docs/concepts.md``.

The rows are the registered surrogates; the columns are the spaces their registry entries accept
and the checks and acquisitions of the contract suite (``manibo.testing.model_contract``). A cell
says "yes" where the suite's checks run and pass (``tests/models/test_contract.py`` runs every
one of them on S², T² and SO(3)), and gives the surrogate's declared reason where it is refused.
``tests/models/test_contract.py`` checks that the committed tables are what this script writes.

    python docs/make_surrogate_table.py          # rewrite the tables in docs/concepts.md
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from manibo.models import available_surrogates, unsupported_feature, unsupported_reason
from manibo.spaces import Box, Circle, Graph, Mesh, ProductSpace, SpecialOrthogonal, Sphere, Torus
from manibo.testing.model_contract import (
    ACQUISITIONS,
    BATCH_SIZES,
    MODEL_CHECKS,
    acquisition_features,
)

PAGE = Path(__file__).with_name("concepts.md")
BEGIN, END = "<!-- contract-table:begin -->", "<!-- contract-table:end -->"


def _spaces() -> dict[str, object]:
    path = torch.tensor([[0.0, 1.0, 0.0], [1.0, 0.0, 1.0], [0.0, 1.0, 0.0]], dtype=torch.float64)
    return {
        "S²": Sphere(2),
        "S⁵": Sphere(5),
        "circle": Circle(),
        "T²": Torus(2),
        "SO(3)": SpecialOrthogonal(3),
        "S²×S¹": ProductSpace(Sphere(2), Circle()),
        "graph": Graph(path),
        "mesh": Mesh.icosphere(0),
        "box": Box([0.0], [1.0]),
        "S²×box": ProductSpace(Sphere(2), Box([0.0], [1.0])),
    }


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return [_row(header), _row(["---"] * len(header)), *(_row(r) for r in rows)]


def render_tables() -> str:
    """The markdown between the markers: spaces, model checks, acquisitions."""
    names = available_surrogates()
    spaces = _spaces()
    # (surrogate, key) -> reason, shown once below the tables: a surrogate's first space refusal
    # (key "space") and each distinct reason it gives for a feature (the reason is its own key)
    refusals: dict[tuple[str, str], str] = {}

    def cell(name: str, reason: str | None, key: str | None = None) -> str:
        if reason is None:
            return "yes"
        refusals.setdefault((name, reason if key is None else key), reason)
        return "no"

    space_rows = [
        [f"`{n}`", *(cell(n, unsupported_reason(n, s), "space") for s in spaces.values())]
        for n in names
    ]
    check_rows = [
        [
            f"`{n}`",
            *(
                cell(n, None if f is None else unsupported_feature(n, f))
                for _, f in MODEL_CHECKS.values()
            ),
        ]
        for n in names
    ]

    def acquisition_cell(n: str, a: str) -> str:
        sizes = [q for q in BATCH_SIZES if q == 1 or not ACQUISITIONS[a].analytic]
        reasons = {
            q: [r for f in acquisition_features(a, q) if (r := unsupported_feature(n, f))]
            for q in sizes
        }
        allowed = [q for q in sizes if not reasons[q]]
        if not allowed:
            return cell(n, reasons[sizes[0]][0])
        return "q = " + ", ".join(map(str, allowed))

    acquisition_rows = [[f"`{n}`", *(acquisition_cell(n, a) for a in ACQUISITIONS)] for n in names]
    lines = [
        "Spaces each surrogate accepts (its registry check; the loop refuses the others when it is "
        "built):",
        "",
        *_table(["surrogate", *spaces], space_rows),
        "",
        "Model contract (each check runs on S², T² and SO(3) where the surrogate accepts them):",
        "",
        *_table(["surrogate", *MODEL_CHECKS], check_rows),
        "",
        "Acquisitions optimised on the space by `optimize_acqf_on_space` (analytic ones at q = 1):",
        "",
        *_table(["surrogate", *ACQUISITIONS], acquisition_rows),
    ]
    if refusals:
        ordered = sorted(refusals.items(), key=lambda item: item[0][0])  # stable: spaces first
        lines += ["", "Why not:", "", *(f"- `{n}`: {reason}" for (n, _), reason in ordered)]
    return "\n".join(lines)


def render_page(page: str) -> str:
    """``page`` with the text between the markers replaced by :func:`render_tables`."""
    head, rest = page.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{render_tables()}\n{END}{tail}"


if __name__ == "__main__":
    PAGE.write_text(render_page(PAGE.read_text()))
    sys.stdout.write(f"wrote the surrogate tables of {PAGE}\n")
