"""The shared wording of numbers: sizes with a digit before the point."""

from annotated_transformer.experiments.wording import file_size


def test_file_sizes_keep_a_digit_before_the_point():
    assert file_size(12_690_000) == "12.7 MB"
    assert file_size(1_234_567) == "1.2 MB"
    assert file_size(2_350) == "2.4 kB"
    assert file_size(318) == "318 bytes"
    assert file_size(1) == "1 byte"
    assert file_size(147_500_000_000) == "148 GB"
