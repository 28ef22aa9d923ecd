"""How chapter 03 says what it found: one template a verdict (`verdicts`), and the words around
them."""

from __future__ import annotations

from ..wording import Phrases

say = Phrases(
    {
        "exponents": """Measured on {where}, the fitted exponents of time against n are
            {attention_n:.2f} for self-attention (Table 1: 2), {recurrent_n:.2f} for the
            recurrent layer (1) and {convolution_n:.2f} for the convolution (1); against d they
            are {attention_d:.2f} (1), {recurrent_d:.2f} (2) and {convolution_d:.2f} (2). The
            memory that self-attention keeps for its backward pass grows with exponent
            {attention_memory_n:.2f} over the larger half of the lengths.""",
        "exponents.last": """Measured on {where}, the fitted exponents of time against n are
            {attention_n:.2f} for self-attention (Table 1: 2), {recurrent_n:.2f} for the
            recurrent layer (1) and {convolution_n:.2f} for the convolution (1); against d they
            are {attention_d:.2f} (1), {recurrent_d:.2f} (2) and {convolution_d:.2f} (2). The
            memory that self-attention keeps for its backward pass grows with exponent
            {attention_memory_n:.2f} over the larger half of the lengths and
            {attention_memory_last:.2f} between the two longest.""",
        "order.holds": """As Table 1 says, self-attention's time grows faster with the length
            than the other layers', and theirs faster with the width.""",
        "order.missed": "This run does not show {parts}, as Table 1 has it.",
        "order.n": """self-attention's time growing faster with the length than that of
            {layers}""",
        "order.d": "the time of {layers} growing faster with the width than self-attention's",
        "layer.self-attention": "self-attention",
        "layer.recurrent": "the recurrent layer",
        "layer.convolutional": "the convolution",
        "crossover": "On {where}, with batch {batch}, {measured}, against $n = d = {d}$ in FLOPs.",
        "crossover.never": """self-attention's mixing step is the faster at every length
            measured, up to {longest:,}""",
        "crossover.already": """self-attention's mixing step is the slower already at the
            shortest length measured, {shortest:,}""",
        "crossover.at": "the mixing steps take the same time at n = {crossover_n:,.0f}",
        "lstm": """The full attention sub-layer, projections included, is cheaper in FLOPs than
            an LSTM for every n below {lstm_crossover:,}{twice}.""",
        "lstm.cost": """An LSTM costs ${per_position_d2:.0f} d^2$ FLOPs per position, and the
            full attention sub-layer, projections included, is cheaper in FLOPs than an LSTM for
            every n below {lstm_crossover:,}{twice}.""",
        "lstm.twice": "($2d$ at $d = {d}$)",
        "lengths.every_set": """Real sentences satisfy n < d: in each of the {sets} test sets
            {how_many} shorter than $d_\\text{{model}} = {d_model}$ subwords (the longest, in
            {longest_corpus}, has {longest:,}).""",
        "lengths.every_sentence": "every sentence is",
        "lengths.or_more": "{least} or more are",
        "lengths.not_every_set": """Not every test set satisfies n < d: in {failing_sets} of
            {sets}, no more than {most} of the sentences are shorter than
            $d_\\text{{model}} = {d_model}$ subwords ({failing}).""",
        "lengths.not_every_set_others": """Not every test set satisfies n < d: in
            {failing_sets} of {sets}, no more than {most} of the sentences are shorter than
            $d_\\text{{model}} = {d_model}$ subwords ({failing}); in {others} more are.""",
        "lengths.failing": "{corpus}: {share}",
        "paths": """Counted on the graphs of positions at n = {n:,} (k = r = {kernel_size}), the
            maximum path length is {lengths}.""",
        "paths.kind": "{length:,} for {kind}",
    }
)
