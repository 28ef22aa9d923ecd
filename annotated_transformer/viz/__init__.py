"""The book's pictures, in two layers under each chapter's own `figures`: `display` puts a chart
or table on the page (and exports charts), `charts` builds the kinds of chart any chapter uses.
Chapters import this package as `viz`.
"""

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
    chart_spec,
    export,
    in_book_build,
    mimebundle,
    show,
    show_source,
    show_table,
    table_html,
)
