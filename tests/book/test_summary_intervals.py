"""The introduction's summary carries every interval and cost a chapter or a committed comparison
reports, and says what kind of cost it shows."""

import json

from annotated_transformer.book import summary
from annotated_transformer.evaluation.results import write_result

F1 = next(c for c in summary.CLAIMS if c.label.startswith("F1"))
SACREBLEU = next(c for c in summary.CLAIMS if c.label.startswith("sacreBLEU"))
COST = next(c for c in summary.CLAIMS if c.label.startswith("training cost"))


def cell(claim, profile, root):
    return summary._measured(claim, [profile], root, {})[0]


def test_an_interval_given_as_low_and_high_is_printed_beside_the_number(tmp_path):
    write_result(
        "constituency_parsing",
        {"f1": 50.6, "f1_ci95": [47.17, 54.17]},
        profile="cpu",
        root=tmp_path,
    )
    assert cell(F1, "cpu", tmp_path) == "50.6 (95%: 47.2-54.2)"


def test_a_record_without_its_interval_takes_the_one_a_comparison_computed_for_it(
    tmp_path,
):
    write_result("recipe_seed1", {"sacrebleu": 39.43}, profile="gpu", root=tmp_path)
    assert cell(SACREBLEU, "gpu", tmp_path) == "39.4"
    systems = {
        "seed 1": {"record": "results/gpu/recipe_seed1.json", "ci95": 1.6},
        "another": {"record": "results/gpu/other.json", "ci95": 9.9},
    }
    write_result(
        "compared_translations", {"systems": systems}, profile="gpu", root=tmp_path
    )
    assert cell(SACREBLEU, "gpu", tmp_path) == "39.4 ± 1.6"


def test_a_cost_without_a_measured_rate_is_said_to_be_counted(tmp_path):
    write_result(
        "translation_x", {"training_flops": 1.06e15}, profile="gpu", root=tmp_path
    )
    assert (
        cell(COST, "gpu", tmp_path)
        == "1.1e15 (operations counted; the run measured no rate)"
    )
    write_result(
        "translation",
        {"training_flops": 1.26e14, "training_flops_how": "paper's way: ..."},
        profile="cpu",
        root=tmp_path,
    )
    assert cell(COST, "cpu", tmp_path) == "1.3e14"


def test_a_gpu_run_s_cost_is_priced_the_paper_s_way_as_chapter_05_prices_it(tmp_path):
    """The introduction's cost row is Table 2's way in every column: a run's own record, which
    holds its training time, devices and GPU, is priced at the GPU's data-sheet peak, the number
    chapter 05 draws for the committed gpu run, never its count of operations."""
    from annotated_transformer.chapters.translation_results import table2
    from annotated_transformer.model import flops

    metrics = {
        "training_flops": 1.05e15,  # counted while it trained
        "train_time_s": 326.5,
        "world_size": 1,
        "precision": "bf16",
    }
    path = write_result("recipe_seed1", metrics, profile="gpu", root=tmp_path)
    record = json.loads(path.read_text())
    record["provenance"]["device_name"] = "NVIDIA H100 80GB HBM3"
    path.write_text(json.dumps(record))
    peak = flops.peak_flops_by_name("NVIDIA H100 80GB HBM3", "bf16")
    assert table2.recorded_paper_way(record) == 326.5 * 1 * peak
    assert cell(COST, "gpu", tmp_path) == f"{326.5 * peak:.1e}".replace("e+", "e")
    assert cell(COST, "gpu", tmp_path) == "3.2e17"


def test_the_committed_gpu_run_costs_the_same_in_the_introduction_and_chapter_05():
    from annotated_transformer.chapters.translation_results import table2

    record, _, _ = table2.committed_gpu_run("cpu")
    if record is None:
        return  # a clone without the committed run
    shown = summary.summary_table("cpu").set_index("claim")[summary.profile_column("gpu")]
    assert shown[COST.label] == summary._flops(table2.recorded_paper_way(record))
