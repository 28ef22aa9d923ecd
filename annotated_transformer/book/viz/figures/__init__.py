"""The figures of one chapter each, one module a chapter, built from `charts` and shown with
`display.show`."""

from .attention import (  # noqa: F401
    attention_uses_chart,
    mask_chart,
    relative_cost_chart,
    softmax_saturation_chart,
)
from .introduction import (  # noqa: F401
    cost_quality_chart,
    profiles_table,
    sizes_table,
)
from .model import (  # noqa: F401
    FIGURE1_BOXES,
    FIGURE1_COLORS,
    block_diagram,
    figure1_chart,
    figure1_layout,
    parameter_count_chart,
    positional_encoding_chart,
)
from .training import (  # noqa: F401
    extrapolation_chart,
    label_smoothing_chart,
)
from .translation import (  # noqa: F401
    averaging_chart,
    table2_panels,
)
from .variations import (  # noqa: F401
    overfitting_chart,
    table3_differences_chart,
    validation_curves_chart,
)
from .why_self_attention import (  # noqa: F401
    crossover_chart,
    path_length_charts,
    scaling_charts,
    sentence_lengths_chart,
)
