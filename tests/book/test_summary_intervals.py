"""The introduction's summary carries every interval and cost a chapter or a committed comparison
reports, and says what kind of cost it shows."""

from annotated_transformer.book import summary
from annotated_transformer.evaluation.results import write_result

F1 = next(c for c in summary.CLAIMS if c.key == "f1")
SACREBLEU = next(c for c in summary.CLAIMS if c.key == "sacrebleu")
COST = next(c for c in summary.CLAIMS if c.key == "training_flops")


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
