"""How chapter 04 says what it found: one template a verdict (`verdicts`), and the words around
them."""

from __future__ import annotations

from ..wording import Phrases

# The languages' names, by the code a profile gives them; another code is written as it is.
LANGUAGES = {"en": "English", "de": "German", "fr": "French"}

say = Phrases(
    {
        "plan": """Under profile `{profile}` the chapter trains a
            {encoder_layers}+{decoder_layers}-layer model of width {d_model} on {corpus}
            {src_lang}-{tgt_lang} for {budget}{first} with batches of about {batch_tokens:,}
            tokens, on {device}.""",
        "plan.steps": "{max_steps:,} steps",
        "plan.epochs": "{max_epochs} epochs",
        "plan.minutes": "{minutes:g} minutes",
        "plan.first": ", whichever comes first,",
        "bpe": """The shared vocabulary of {vocab_size:,} pieces cuts the training text into
            {sides}: {words}, and {most} needs the most, because its rarer words (compounds,
            inflected forms) are spelled out of several.""",
        "bpe.side": "{pieces:.2f} pieces per {language} word",
        "bpe.one_piece": "most words are one piece",
        "bpe.several": "many words take several pieces in so small a vocabulary",
        "padding": """Sorting by length {verb} the padding from {random:.1%} of the batch tensors
            (random order) to {by_length:.1%}, and filling batches to a token budget leaves
            {by_tokens:.1%}: neighbours in length order have similar lengths, so there is little
            to pad. These are counts over the whole epoch, not samples, so they carry no
            interval.""",
        "padding.cuts": "cuts",
        "padding.does_not_cut": "does not cut",
        "copy": """The copy task's model copies {accuracy:.1%} of {held_out:,} held-out sequences
            exactly (95% interval {low:.1%} to {high:.1%}) after {steps:,} steps: {reading}.""",
        "copy.solved": """the masks, the shifted decoder input, the loss and the schedule work
            together""",
        "copy.unsolved": """too few steps to solve the task; the falling loss is what this run
            checks""",
        "perplexities": """The table's validation perplexity, {valid_ppl:.2f}, is of the last
            weights, measured once training stopped at step {steps:,}. {during}The test
            perplexity, {test_ppl:.2f}, is of the average of {snapshots} snapshots, on the test
            sentences.""",
        "perplexities.during": """The last measurement during training, at step
            {last_step:,}, read {last_ppl:.2f} (the trainer measures every {eval_every:,} steps,
            {after}). """,
        "perplexities.kept_learning": "and the model kept learning after it",
        "perplexities.not_lowered": "and the last steps did not lower it",
        "run": """The profile's run trained {steps:,} steps in {train_time_s:,.0f} s and ended at
            a validation perplexity of {valid_ppl:.2f} per subword; its averaged model scores
            {test_sacrebleu:.1f} sacreBLEU on the test set (chapter 05 gives its interval).""",
        "speed": """One step took {step_time_s:.3f} s for about {tokens_per_step:,.0f} target
            tokens, {rate:,.0f} tokens a second, against {paper_rate:,.0f} for the paper's base
            model on {hardware} ({times:,.0f} times as many), with a model of
            {parameters_m:.1f}M parameters against 65M.""",
        "resume.identical": """Stopped and resumed, a run ends with bit-identical weights to one
            never stopped.""",
        "resume.differs": "The resumed run did not end with the weights of the straight one.",
        "gradients": """Before any update, the top decoder layer's gradient is {post_decoder:.2f}
            times the bottom layer's in the post-norm model and {pre_decoder:.2f} times in the
            pre-norm one (encoder: {post_encoder:.2f} against {pre_encoder:.2f}).""",
        "warmup": "Without the warm-up, {post}; {pre}. {reason}",
        "warmup.same": """the {norm}-norm model ends where its twin does ({without:.2f} against
            {with_warmup:.2f}; {noise})""",
        "warmup.above": """the {norm}-norm model ends {gap:.2f} nats per token above its
            warmed-up twin ({without:.2f} against {with_warmup:.2f}; {noise})""",
        "warmup.below": """the {norm}-norm model ends {gap:.2f} nats per token below its
            warmed-up twin ({without:.2f} against {with_warmup:.2f}; {noise})""",
        "warmup.noise": "± {noise:.2f} from the batch-to-batch noise",
        "warmup.one_run": "one run each, so no interval",
        "warmup.harm": """The reason: at the first steps the post-norm model's top layers get the
            largest gradients, and a full learning rate throws them off; the pre-norm model's top
            layers get smaller ones (the ratios above), so the full rate does them less harm.""",
        "warmup.no_harm": """This run does not show the harm the warm-up guards against (its
            trainings are too short to leave the ramp behind), so it says nothing for or against
            it.""",
        "extrapolation": """Trained on 1 to {max_length} tokens and tested on {per_length}
            sequences per length, {one_more}: {sinusoidal_next} whole sequences copied with
            sinusoids, {learned_next} with learned positions (95% intervals). At {twice} tokens
            they copy {sinusoidal_twice} and {learned_twice}: a sinusoid is defined at every
            position, but the attention and feed-forward weights were fitted only to the
            positions seen in training.""",
        "extrapolation.share": "{share:.0%} ({low:.0%}-{high:.0%})",
        "extrapolation.leads": """{leader} positions copy more sequences one token past the
            training lengths""",
        "extrapolation.apart": """one token past the training lengths the two kinds cannot be
            told apart""",
    }
)
