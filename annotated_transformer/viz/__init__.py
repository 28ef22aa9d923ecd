"""The book's pictures, in three layers: `display` puts a chart or table on the page (and exports
charts), `charts` builds the kinds of chart any chapter uses, `figures` the figures of one chapter
each. Chapters import this package as `viz` and call every public name from here.
"""

from ...experiments.wording import file_size, plus_minus  # noqa: F401  (tables and captions alike)
from .charts import (  # noqa: F401
    bar_chart,
    heatmap,
    legend_below,
    line_chart,
    loglog_with_reference,
    loglog_with_rules,
    side_by_side,
    tighten,
)
from .display import (  # noqa: F401
    CHART_CLASS,
    EXPORT_FORMATS,
    TABLE_CLASS,
    book_html,
    chart_spec,
    export,
    in_book_build,
    mimebundle,
    show,
    show_source,
    show_table,
    table_html,
)
from .figures import (  # noqa: F401
    FIGURE1_BOXES,
    FIGURE1_COLORS,
    attention_uses_chart,
    averaging_chart,
    block_diagram,
    cost_quality_chart,
    crossover_chart,
    extrapolation_chart,
    figure1_chart,
    figure1_layout,
    label_smoothing_chart,
    mask_chart,
    overfitting_chart,
    parameter_count_chart,
    path_length_charts,
    positional_encoding_chart,
    profiles_table,
    relative_cost_chart,
    scaling_charts,
    sentence_lengths_chart,
    sizes_table,
    softmax_saturation_chart,
    table2_panels,
    table3_differences_chart,
    validation_curves_chart,
)
