"""The tables of docs/benchmarks.md are what the committed JSON in docs/figures generate."""

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import doc_tables  # noqa: E402

DOCS = ROOT / "docs"
FIGURES = DOCS / "figures"


@pytest.mark.parametrize("page", doc_tables.PAGES)
def test_committed_page_is_what_the_committed_json_generate(page):
    text = (DOCS / page).read_text()
    assert doc_tables.update_page(text, FIGURES, page=page) == text, (
        f"docs/{page} is stale: run `python benchmarks/doc_tables.py` and commit the page."
    )


def test_every_table_has_a_block_on_its_page():
    assert set(doc_tables.PAGES) == {
        "benchmarks.md",
        "comparison.md",
        "vish.md",
        "adgp.md",
        "examples.md",
    }
    for page in doc_tables.PAGES:
        found = [m.group(1) for m in doc_tables.MARKERS.finditer((DOCS / page).read_text())]
        own = [name for name, table in doc_tables.TABLES.items() if table.page == page]
        assert sorted(found) == sorted(own), page
    for name, table in doc_tables.TABLES.items():
        for input_file in table.inputs:
            assert (FIGURES / input_file).exists(), f"{name} reads {input_file}"


def test_geometric_kernels_table_reads_the_ratios_of_the_json():
    datasets = [json.loads((FIGURES / name).read_text()) for name in doc_tables.KERNEL_FILES]
    lines = doc_tables.geometric_kernels_table(datasets).splitlines()
    rows = {line.split(" | ")[0][2:]: line.split(" | ") for line in lines[2:]}
    so3 = next(d for d in datasets if d["space"] == "so3")
    ratios = [r["gk_over_manibo_time"] for r in so3["comparisons"]["cpu"]]
    ratios = [r for r in ratios if r is not None]
    row = rows[so3["label"]]
    assert row[3] == f"{doc_tables.factor(min(ratios))} to {doc_tables.factor(max(ratios))}"
    assert len(rows) == len(datasets)  # GeometricKernels ran on every space


def test_unknown_or_missing_blocks_are_errors(tmp_path):
    with pytest.raises(ValueError, match="unknown tables: nope"):
        doc_tables.update_page("<!-- BEGIN nope -->\nx\n<!-- END nope -->\n", FIGURES, [])
    with pytest.raises(ValueError, match="no <!-- BEGIN name --> .* block for: bo_time"):
        doc_tables.update_page("no markers here\n", FIGURES, ["bo_time"])


def test_only_the_named_blocks_change(tmp_path):
    text = "a\n<!-- BEGIN bo_time -->\nold\n<!-- END bo_time -->\nb\n"
    (tmp_path / "bo_time.json").write_text((FIGURES / "bo_time.json").read_text())
    new = doc_tables.update_page(text, tmp_path, ["bo_time"])
    assert new.startswith("a\n<!-- BEGIN bo_time -->\n| problem | n |") and new.endswith("b\n")
    assert doc_tables.update_page(text, tmp_path, []) == text
    assert doc_tables.available_tables(tmp_path) == ["bo_time"]


def test_number_formats():
    assert doc_tables.significant(0.012634) == "0.0126"
    assert doc_tables.significant(1.0) == "1.00"
    assert doc_tables.significant(110.4) == "110"
    assert doc_tables.significant(4.2e-7) == "4.20e-07"
    assert doc_tables.megabytes(58.4e6) == "58 MB" and doc_tables.megabytes(4.26e6) == "4.3 MB"
    assert doc_tables.factor(105.3) == "105×" and doc_tables.factor(9.33) == "9.3×"
    assert doc_tables.factor(5.0) == "5.0×" and doc_tables.factor(0.634) == "0.63×"
    assert doc_tables.factor(None) == "—" and doc_tables.difference(1.1e-11) == "1.1e-11"


def test_regret_table_reads_the_json_and_bolds_the_lowest_median():
    datasets = [
        json.loads((FIGURES / name).read_text())
        for name in ("regret_ackley-sphere3_qlognei.json", "regret_ackley.json")
    ]
    markdown = doc_tables.regret_table(datasets, "ackley-sphere3", (25, 50, 105))
    lines = markdown.splitlines()
    assert lines[0] == "| method | t = 25 | t = 50 | t = 105 | s / iteration |"
    rows = {line.split(" | ")[0][2:]: line for line in lines[2:]}
    assert set(rows) == {
        "matern (manibo), qLogNEI (the loop's default)",
        "matern (manibo)",
        "euclidean + projection",
        "random",
    }
    table = datasets[0]["problems"]["ackley-sphere3"]["table"]["matern"]
    median = doc_tables.significant(table["regret"]["25"]["median"])
    assert f"**{median}**" in rows["matern (manibo), qLogNEI (the loop's default)"]
    assert markdown.count("**") == 2 * 3  # one bold median per column


def test_regret_table_names_a_method_run_on_fewer_seeds():
    data = json.loads((FIGURES / "regret_campaign.json").read_text())
    entry = data["problems"]["ackley-sphere2"]
    full = entry["table"]["matern"]["seeds"]
    for row in entry["table"].values():  # every method at full seeds but one
        row["seeds"] = full
    entry["table"]["matern"]["seeds"] = full - 11
    lines = doc_tables.regret_table([data], "ackley-sphere2", (25, 50, 100)).splitlines()
    labels = [line.split(" | ")[0][2:] for line in lines[2:]]
    assert labels[0] == f"matern (manibo) ({full - 11} seeds)"
    assert labels[1:] and not any("seeds" in label for label in labels[1:])  # all seeds


def test_adgp_regression_tables_count_the_splits_from_the_runs():
    """The verdict columns are recounted from the per-split results, the medians are the runs'."""
    data = json.loads((FIGURES / "adgp_regression.json").read_text())
    lines = doc_tables.adgp_regression_table(data).splitlines()
    assert len(lines) == 2 + len(data["table"])
    for line in lines[2:]:
        cells = line.strip("| ").split(" | ")
        name = cells[0].split(" (")[0].lower()
        runs = [r for r in data["runs"] if r["dataset"] == name]
        wins = [
            sum(r["adgp"]["nlpd"] < r["network"]["nlpd"] for r in runs),
            sum(r["adgp"]["nlpd"] < r["dgp"]["nlpd"] for r in runs),
            sum(r["adgp"]["rmse"] <= 1.05 * r["network"]["rmse"] for r in runs),
        ]
        assert cells[5:8] == [f"{w}/{len(runs)}" for w in wins]
        assert cells[8] == ("**met**" if all(2 * w > len(runs) for w in wins) else "**not met**")
        nlpds = sorted(r["adgp"]["nlpd"] for r in runs)
        assert len(runs) % 2 == 1 and cells[3].endswith(f" / {nlpds[len(runs) // 2]:.3f}")
    splits = doc_tables.adgp_splits_table(data).splitlines()
    assert len(splits) == 2 + len(data["runs"])


def test_a_merged_campaign_names_each_runs_setup_not_the_merging_process():
    env = {
        "cpu_model": "merging CPU",
        "cpu_cores": 2,
        "torch_threads": 2,
        "gpu": None,
        "versions": {"manibo": "0.1.0", "torch": "2.13.0+cpu"},
        "timestamp_utc": "2026-11-28T00:00:00+00:00",
        "load_average_1_5_15_min": [1.0, 1.0, 1.0],
    }
    merged = {
        "environment": env,
        "cpu_models_runs": {"CPU A": 3, "CPU B": 1},
        "setups_runs": {"16 cores, 1 torch thread, torch 2.11.0": 3, "not recorded": 1},
    }
    table = doc_tables.runs_table([merged], ["campaign.json"])
    row = table.splitlines()[-1]
    assert "CPU A (3 runs); CPU B (1 runs)" in row and "merging CPU" not in row
    assert "16 cores, 1 torch thread, torch 2.11.0 (3 runs); 1 runs did not record theirs" in row
    assert "| not recorded |" in row and "2 cores" not in row  # neither its cores nor threads
