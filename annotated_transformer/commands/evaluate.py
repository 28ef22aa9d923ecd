"""`python -m annotated_transformer evaluate`: BLEU and perplexity of a checkpoint on a test set.

The checkpoint says what it is: its corpus, direction, tokenizer and profile come from it, so a
German->English test set is never fed to an English->German model, and the scores are filed with
the run (`<run folder>/evaluation_<corpus>_<split>.json`), or with `--publish` under the
checkpoint's own profile in `results/`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from .. import pipeline
from ..evaluation.results import check_name, check_replaceable, results_path, write_result
from ..evaluation.scoring import translations_text
from ..profiles import PROFILE_NAMES
from ..runtime.collisions import check_outputs
from ..runtime.devices import resolve_device
from ..runtime.files import atomic_write_text
from ..runtime.ownership import check_output, owner_of_folder
from .arguments import (
    add_data_and_device,
    add_decoding_arguments,
    decoding_overrides,
    setting,
)
from .translate import check_writable


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description = (
        "Translate a test set with beam search and report sacreBLEU (with its signature), the paper's\n"
        "tokenized BLEU (compound-split for German) and per-subword perplexity. The checkpoint's own\n"
        "profile picks the corpus, direction, test split and beam settings; the result is filed with\n"
        "the run (<run folder>/evaluation_<corpus>_<split>.json), and with --publish in\n"
        "results/<profile>/<name>.json, with provenance.\n\n"
        "  python -m annotated_transformer evaluate --checkpoint runs/cpu/averaged.pt\n"
        "  python -m annotated_transformer evaluate --checkpoint runs/cpu --average-last 5"
    )
    parser.add_argument(
        "--checkpoint",
        required=True,
        help="a .pt file, or a run folder (the average of its last snapshots, see --average-last)",
    )
    parser.add_argument(
        "--profile",
        default=None,
        choices=PROFILE_NAMES,
        help="only for a checkpoint that records none (default: the checkpoint's own profile, "
        "else cpu); one of another corpus or direction is refused",
    )
    add_data_and_device(parser)
    parser.add_argument(
        "--split",
        default=None,
        help="test split (default: the profile's, e.g. test_2016_flickr)",
    )
    add_decoding_arguments(parser)
    parser.add_argument(
        "--max-sentences",
        type=setting("eval_max_sentences"),
        default=None,
        help="score only the first N sentences",
    )
    parser.add_argument(
        "--publish",
        action="store_true",
        help="also file the result in results/<the checkpoint's profile>/<name>.json (never "
        "over a committed result of another run)",
    )
    parser.add_argument(
        "--name",
        default=None,
        help="with --publish: the results file's stem (default: evaluation_<corpus>_<split>)",
    )
    parser.add_argument(
        "--hypotheses", default=None, help="also write the translations to this file"
    )


def run(args: argparse.Namespace) -> int:
    # Everything that can be wrong with the arguments is found before the model decodes.
    if args.name is not None:
        if not args.publish:
            raise ValueError(
                "--name names the file --publish writes into results/<profile>/: add "
                "--publish, or leave --name out"
            )
        check_name(args.name, "--name")
    check_output("--hypotheses", args.hypotheses, command="evaluate")
    if args.hypotheses:
        check_writable(Path(args.hypotheses), "--hypotheses")
    device = resolve_device(args.device)
    checkpoint, source = pipeline.load_for_evaluation(args.checkpoint, args.average_last)
    profile, warning = pipeline.checkpoint_profile(checkpoint, args.profile, source)
    if warning:
        print(f"warning: {warning}", file=sys.stderr)
    profile = profile.replace(**decoding_overrides(args))
    split = args.split or profile.test_split
    run_folder = pipeline.run_folder_of(args.checkpoint)
    if args.publish:
        name = args.name or f"evaluation_{profile.corpus}_{split}"
        out = results_path(name, profile.results_folder)
        check_output("--publish --name", out, command="evaluate", publish=True)
        check_replaceable(out, run_folder)
    else:
        # The one file `evaluate` files inside a run folder of `train`: the run it scores (README).
        out = run_folder / f"evaluation_{profile.corpus}_{split}.json"
        owner = owner_of_folder(run_folder)
        scored = owner is not None and owner.maker == "train"
        check_output(
            "the evaluation file", out, command="evaluate", mine=[out] if scored else []
        )
        check_writable(out, "the evaluation file")
    check_outputs(
        [("--hypotheses", args.hypotheses), ("the results file", out)],
        pipeline.checkpoint_inputs(args.checkpoint)
        + pipeline.data_inputs(profile, args.data_dir, [split]),
    )
    print(
        f"evaluating {source} ({pipeline.what_it_translates(checkpoint)}) on "
        f"{profile.corpus}/{split}",
        file=sys.stderr,
    )
    started = time.perf_counter()
    scores = pipeline.evaluate(
        checkpoint,
        profile,
        data_dir=args.data_dir,
        device=device,
        split=split,
        max_sentences=args.max_sentences,
        progress=True,
        cuda_graphs=args.cuda_graphs,
    )
    hypotheses = scores.pop("hypotheses")
    if args.hypotheses:
        atomic_write_text(args.hypotheses, translations_text(hypotheses))
    scores["checkpoint"] = source
    written = write_result(
        out.stem,
        scores,
        profile=profile.results_folder,
        config=checkpoint.get("config"),
        wall_time_s=round(time.perf_counter() - started, 1),
        device=device,
        path=out,
        run_folder=run_folder,
    )
    print(json.dumps(scores, indent=2))
    print(f"results -> {written}")
    return 0
