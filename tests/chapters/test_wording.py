"""The shared wording of numbers: sizes with a digit before the point."""

from annotated_transformer.chapters.wording import file_size, gap


def test_file_sizes_keep_a_digit_before_the_point():
    assert file_size(12_690_000) == "12.7 MB"
    assert file_size(1_234_567) == "1.2 MB"
    assert file_size(2_350) == "2.4 kB"
    assert file_size(318) == "318 bytes"
    assert file_size(1) == "1 byte"
    assert file_size(147_500_000_000) == "148 GB"


def test_a_gap_is_the_difference_of_the_numbers_as_printed():
    # 50.64 and 9.56 print as 50.6 and 9.6: the page can only support 41.0, not 41.08's 41.1
    assert gap(50.64, 9.56) == "41.0"
    assert (
        gap(9.56, 50.64) == "41.0"
    )  # the sentence says above or below; the gap has no sign
    assert gap(91.3, 50.64) == "40.7"
    assert gap(0.449, 0.45) == "0.1"  # 0.4 against 0.5 once printed, though 0.001 apart
    assert gap(3.14159, 2.71828, digits=2) == "0.42"
    assert gap(1.04, 1.01) == "0.0"
