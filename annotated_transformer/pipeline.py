"""The translation pipeline, top to bottom: corpus -> shared BPE -> encoded pairs -> token batches ->
training -> the average of the last snapshots -> beam search on the test set -> BLEU -> results file.

This is what `train`, `evaluate` and the book's chapters call; a command is argument parsing plus one
call here. Every default comes from a `Profile` (profiles/). Following one batch: `prepare_data`
reads the corpus (data/reading.py via `load_parallel`), encodes it with the corpus's tokenizer
(data/tokenizer.py) into `EncodedPairs` (data/batching.py); the `Trainer` (training/trainer.py) packs
them into token batches (`TokenBatcher`) and trains on them through `teacher_forcing.batch_loss`
(model/transformer.py, training/loss.py); `average_last` merges snapshots (training/checkpoint.py); `evaluate` translates the
test set (evaluation/scoring.py, model/decoding.py) and scores it; `write_results` stamps provenance (evaluation/results.py).
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from .data import EncodedPairs, Tokenizer, load_parallel, tokenizer_for_corpus
from .evaluation.results import check_replaceable, results_path, write_result
from .evaluation.scoring import evaluate_translation, paired_bootstrap, translations_text
from .model import flops
from .model.transformer import count_parameters
from .profiles import Profile, get_profile, profile_from_record
from .runtime import attention_kernels
from .runtime.collisions import check_outputs
from .runtime.distributed import (
    DistributedContext,
    barrier,
    init_distributed,
    shutdown_distributed,
)
from .runtime.files import atomic_write_text
from .training import derived, stopping
from .training.checkpoint import (
    RESUME_NAME,
    atomic_torch_save,
    average_last,
    list_snapshots,
    load_checkpoint,
    model_from_checkpoint,
)
from .training.fit import fit
from .training.run_folder import (
    AVERAGED_NAME,
    METRICS_NAME,
    RESULTS_NAME,
    TRANSLATIONS_NAME,
    claim_run_folder,
)
from .training.trainer import Trainer

logger = logging.getLogger(__name__)


# ------------------------------------------------------------------------------------------ data
@dataclass
class PreparedData:
    tokenizer: Tokenizer
    train: EncodedPairs
    valid: EncodedPairs
    # split -> reason -> pairs left out: "empty", "over_long" (max_sentence_words) and
    # "over_positions" (longer than the model's max_len)
    dropped: dict[str, dict[str, int]] = field(default_factory=dict)


def corpus_tokenizer(profile: Profile, data_dir=None) -> Tokenizer:
    """The profile's shared BPE: trained on its training split the first time, then read from the
    cache."""
    return tokenizer_for_corpus(
        profile.corpus, profile.vocab_size, split=profile.train_split, data_dir=data_dir
    )


def prepare_data(
    profile: Profile,
    data_dir=None,
    context: DistributedContext | None = None,
    max_positions: int | None = None,
) -> PreparedData:
    """The profile's corpus, its BPE (trained once on the training split only, then cached) and the
    encoded training and validation pairs, without pairs too long for the model's positions
    (`max_positions`, default the profile's model's)."""
    is_main = context is None or context.is_main

    # rank 0 trains (or finds) the tokenizer; the others then load it from the cache
    if is_main:
        shared = corpus_tokenizer(profile, data_dir)
    if context is not None:
        barrier(context)
    if not is_main:
        shared = corpus_tokenizer(profile, data_dir)
    if max_positions is None:
        max_positions = profile.model_config().max_len

    dropped: dict[str, dict[str, int]] = {}

    def encode(split: str, limit: int | None) -> EncodedPairs:
        # Training text may hold empty lines (WMT14's sample has one): they are dropped and counted.
        corpus = load_parallel(
            profile.corpus,
            split,
            profile.src_lang,
            profile.tgt_lang,
            data_dir,
            max_words=profile.max_sentence_words,
            drop_empty=True,
        )
        src, tgt = (
            (corpus.src[:limit], corpus.tgt[:limit])
            if limit is not None
            else (corpus.src, corpus.tgt)
        )
        if not src:
            raise ValueError(
                f"{corpus.src_path} and {corpus.tgt_path} hold no usable sentence pair "
                f"(skipped: {corpus.skipped}): fix or replace these files"
            )
        pairs, too_long = EncodedPairs.from_texts(shared, src, tgt).fitting(max_positions)
        dropped[split] = {**corpus.skipped, "over_positions": too_long}
        if too_long:
            logger.warning(
                "dropped %d pairs of %s longer than the model's %d positions",
                too_long,
                split,
                max_positions,
            )
        return pairs

    return PreparedData(
        shared,
        encode(profile.train_split, profile.max_train_pairs),
        encode(profile.valid_split, profile.max_valid_pairs),
        dropped,
    )


# ------------------------------------------------------------------------------------------ training
def _dropped_note(dropped: dict[str, dict[str, int]]) -> str:
    """The start line's "; pairs left out: train 1 empty, ..." ("" when no pair was)."""
    parts = [
        f"{split} "
        + ", ".join(
            f"{n} {reason.replace('_', '-')}" for reason, n in counts.items() if n
        )
        for split, counts in dropped.items()
        if any(counts.values())
    ]
    return f"; pairs left out: {'; '.join(parts)}" if parts else ""


def train(
    profile: Profile,
    out_dir: str | Path,
    *,
    data_dir=None,
    resume: bool | str | Path = False,
    context: DistributedContext,
    show_progress: bool = True,
    on_step=None,
    data: PreparedData | None = None,
) -> dict:
    """Train (or resume) under `profile` into `out_dir`; returns a summary of the run.

    resume: True continues from `out_dir/last.pt`; a path names another checkpoint to continue from.
    data: what `prepare_data` made for this profile (default: prepared here).
    The caller makes sure the folder is this run's (`run` does, through `claim_run_folder`).
    """
    if profile.threads:
        # On a busy machine one thread per process beats two that wait for each other.
        torch.set_num_threads(profile.threads)
    out_dir = Path(out_dir)
    config = profile.model_config()
    if data is None:
        data = prepare_data(profile, data_dir, context, config.max_len)

    def announce(trainer: Trainer) -> None:
        if context.is_main:
            step = trainer.progress.step
            print(
                f"training {count_parameters(trainer.model) / 1e6:.1f}M parameters on {len(data.train):,} pairs "
                f"({profile.corpus} {profile.src_lang}->{profile.tgt_lang}), {trainer.precision} on "
                f"{context.device}, world size {context.world_size}"
                + (f", resumed at step {step}" if resume else "")
                + _dropped_note(data.dropped)
            )
            print(f"precision {trainer.precision}: {trainer.execution.precision_reason}")
            if context.device.type == "cuda":
                print(f"attention: {attention_kernels.describe(context.device)}")
            if (
                trainer.settings.compile == "auto"
                and not trainer.execution.compile_failed
            ):
                # (a failure was logged already, in one line)
                state = "compiled" if trainer.compiled else "eager"
                print(f"{state}: {trainer.execution.compile_reason}")

    fitted = fit(
        config,
        data.tokenizer,
        data.train,
        data.valid,
        profile.train_settings(),
        out_dir,
        context=context,
        resume=resume,
        metadata={
            "profile": profile.to_dict(),
            "train_pairs": len(data.train),
            "test_data": test_digest(profile, data_dir),
        },
        show_progress=show_progress,
        on_step=on_step,
        on_start=announce,
    )
    model, trainer, result = fitted.model, fitted.trainer, fitted.result
    progress = result.progress
    summary = {
        "out_dir": str(out_dir),
        "steps": progress.step,
        "epochs": trainer.epochs_done(),
        "stopped_by": result.stopped_by,
        "train_time_s": round(progress.train_time_s, 1),
        "train_cpu_s_per_thread": round(progress.train_cpu_s, 1),
        "cpu_share": stopping.cpu_share(
            progress.train_time_s, progress.train_cpu_s, context.device
        ),
        "threads": torch.get_num_threads(),
        "target_tokens": progress.target_tokens,
        "target_tokens_per_s": round(
            progress.target_tokens / max(progress.train_time_s, 1e-9), 1
        ),
        "valid": result.valid,
        "parameters": count_parameters(model),
        "precision": trainer.precision,
        "precision_reason": trainer.execution.precision_reason,
        "compiled": trainer.compiled,
        "compile_reason": trainer.execution.compile_reason,
        "attention_kernels": attention_kernels.describe(context.device),
        "world_size": context.world_size,
        "model_config": config.to_dict(),
        "dropped_pairs": data.dropped,
    }
    # Training FLOPs counted from the model (section 6.1 estimates them from time x GPUs x FLOP/s instead).
    per_token = flops.training_flops_per_target_token(
        config,
        data.tokenizer.vocab_size,
        float(data.train.src_lengths.mean()) + 1,
        float(data.train.tgt_lengths.mean()) + 1,
    )
    summary["flops_per_target_token"] = per_token
    summary["training_flops"] = per_token * progress.target_tokens
    # target_tokens_per_s counts every rank's tokens; MFU is per device.
    per_device = per_token * summary["target_tokens_per_s"] / context.world_size
    summary["mfu"] = flops.mfu(per_device, context.device, trainer.precision)
    return summary


# ------------------------------------------------------------------------------------------ averaging
def load_for_evaluation(
    path: str | Path, average_last_k: int | None = None
) -> tuple[dict, str]:
    """What `--checkpoint PATH` means in every command, with a description of what was used.

    A .pt file is used as it is (a run's `averaged.pt` only while it still averages the run's last
    snapshots: `derived.check_current`). A run folder means the run's model, the one `run` scored:
    the average of its newest `average_last_k` snapshots (default: the run's own profile's
    `average_last`, as in its `averaged.pt`), or its `averaged.pt` when it keeps no snapshots.
    """
    path = Path(path)
    if not path.is_dir():
        checkpoint = load_checkpoint(path)
        derived.check_current(path, checkpoint)
        return checkpoint, str(path)
    snapshots = list_snapshots(path)
    if snapshots:
        if average_last_k is None:
            average_last_k = derived.run_average_last(path)
        checkpoint, used = average_last(path, average_last_k)
        names = ", ".join(p.name for p in used)
        return (
            checkpoint,
            f"{path}: the average of its last {len(used)} snapshots ({names})",
        )
    if (path / AVERAGED_NAME).is_file():
        return load_checkpoint(path / AVERAGED_NAME), str(path / AVERAGED_NAME)
    raise FileNotFoundError(
        f"{path} holds no snapshots (checkpoints/step_*.pt) and no {AVERAGED_NAME}: pass a .pt "
        "file or a `train --out` folder"
    )


def checkpoint_inputs(path: str | Path) -> list[tuple[str, Path]]:
    """The files `load_for_evaluation(path)` may read, named for `check_outputs`: the file itself,
    or a run folder's snapshots and run files."""
    path = Path(path)
    if not path.is_dir():
        return [("the checkpoint", path)]
    files = [*list_snapshots(path), *(path / n for n in (AVERAGED_NAME, RESUME_NAME))]
    return [("a checkpoint of the run", p) for p in files if p.exists()]


def data_inputs(profile: Profile, data_dir, splits) -> list[tuple[str, Path]]:
    """The corpus files of `splits` that are on this machine already (a download cannot be an
    output of the user's), named for `check_outputs`."""
    from .data.corpora import split_files

    found = []
    for split in splits:
        try:
            files = split_files(
                profile.corpus,
                split,
                profile.src_lang,
                profile.tgt_lang,
                data_dir,
                download=False,
            )
        except (OSError, ValueError):
            continue
        found += [(f"the {split} corpus file", f) for f in files]
    return found


def test_digest(profile: Profile, data_dir) -> str | None:
    """A sha256 of the test split's files as they are on this machine (None: not here yet): a
    resumed run is scored on the test set it was started for, or refused."""
    import hashlib

    files = [path for _, path in data_inputs(profile, data_dir, (profile.test_split,))]
    if not files:
        return None
    h = hashlib.sha256()
    for path in files:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                h.update(block)
        h.update(b"\0")
    return h.hexdigest()


def what_it_translates(checkpoint: dict) -> str:
    """'multi30k en->de, profile cpu, step 2166' from what a checkpoint records (or less)."""
    stored = checkpoint.get("profile") or {}
    parts = []
    if stored.get("corpus"):
        parts.append(
            f"{stored['corpus']} {stored.get('src_lang')}->{stored.get('tgt_lang')}"
        )
        parts.append(f"profile {stored.get('name')}")
    if checkpoint.get("step") is not None:
        parts.append(f"step {checkpoint['step']}")
    return ", ".join(parts) or "no profile recorded"


def run_folder_of(checkpoint_path: str | Path) -> Path:
    """The run folder a --checkpoint belongs to: the folder itself, a file's folder, or the run
    above `checkpoints/` for a snapshot."""
    path = Path(checkpoint_path)
    if path.is_dir():
        return path
    folder = path.parent
    return folder.parent if folder.name == "checkpoints" else folder


def checkpoint_profile(
    checkpoint: dict, asked: str | None = None, source: str = "the checkpoint"
) -> tuple[Profile, str | None]:
    """The profile a checkpoint was trained under (its corpus, direction, test split, beam and
    results folder), and a warning when `asked` (a --profile) names another one.

    A checkpoint without a profile (not trained by `run`) takes `asked`, default "cpu". A profile
    of another corpus or direction is refused: its test set is in another language.
    """
    stored = checkpoint.get("profile")
    if not isinstance(stored, dict):
        return get_profile(asked or "cpu"), None
    own = profile_from_record(stored)
    if asked is None or asked == own.name:
        return own, None
    other = get_profile(asked)
    theirs = (own.corpus, own.src_lang, own.tgt_lang)
    if (other.corpus, other.src_lang, other.tgt_lang) != theirs:
        raise ValueError(
            f"--profile {asked} is {other.corpus} {other.src_lang}->{other.tgt_lang}, but {source} "
            f"was trained on {own.corpus} {own.src_lang}->{own.tgt_lang} (profile {own.name}): "
            f"leave out --profile, or pass --profile {own.name}"
        )
    return own, (
        f"{source} was trained under profile {own.name}, not {asked}: using {own.name}'s test "
        f"split, beam settings and results folder"
    )


def check_resumable(profile: Profile, checkpoint_path: str | Path, data_dir=None) -> None:
    """Refuse, before any data is prepared, to resume `checkpoint_path` under a profile that
    changes its data, tokenizer, model, batches or schedule, or with other test files than the
    run started with (`test_digest`); the message names the flag. (Other validation pairs are
    refused when the trainer resumes: `training.resume_state.check_resumable`.)"""
    state = load_checkpoint(checkpoint_path, mmap=True)
    saved_test = state.get("test_data")
    if saved_test is not None:
        mine = test_digest(profile, data_dir)
        if mine is not None and mine != saved_test:
            raise ValueError(
                f"--resume: {checkpoint_path} was started with other {profile.test_split} "
                "(test) files than this run's (other files or --data-dir): a resumed run is "
                "scored on its own test set; resume with the run's own data, or start afresh "
                "with --overwrite or another --out"
            )
    stored = state.get("profile")
    if isinstance(stored, dict):
        for name in (
            "corpus",
            "src_lang",
            "tgt_lang",
            "train_split",
            "max_train_pairs",
            "max_sentence_words",
            "vocab_size",
        ):
            if name in stored and stored[name] != getattr(profile, name):
                raise ResumeConflict(
                    checkpoint_path, name, stored[name], getattr(profile, name)
                )
    theirs, mine = state.get("config", {}), profile.model_config().to_dict()
    for name in sorted(set(theirs) | set(mine)):
        if theirs.get(name) != mine.get(name):
            raise ResumeConflict(checkpoint_path, name, theirs.get(name), mine.get(name))
    for name, old, new in profile.train_settings().resume_conflicts(
        state.get("settings", {})
    ):
        raise ResumeConflict(checkpoint_path, name, old, new)


class ResumeConflict(ValueError):
    """A resumed run asks for another value of a setting its checkpoint fixed. `setting` is the
    field's name; the command line names its flag too (`with_setting_label`)."""

    def __init__(self, path, setting: str, old, new, label: str | None = None):
        self.path, self.setting, self.old, self.new = path, setting, old, new
        super().__init__(
            f"--resume: {path} was trained with {label or setting} {old!r}, this run asks for "
            f"{new!r}; a resumed run keeps its data, model, batches and schedule: drop the "
            "change, or start afresh with --overwrite or another --out"
        )

    def with_setting_label(self, label: str) -> "ResumeConflict":
        """The same refusal naming the setting as `label` (e.g. 'warmup_steps (--warmup)')."""
        return ResumeConflict(self.path, self.setting, self.old, self.new, label)


# ------------------------------------------------------------------------------------------ evaluation
def evaluate(
    checkpoint: dict,
    profile: Profile,
    *,
    data_dir=None,
    device: str | torch.device = "cpu",
    split: str | None = None,
    max_sentences: int | None = None,
    progress: bool = False,
    cuda_graphs: bool = False,
) -> dict:
    """Translate the profile's test split (or `split`) with its beam settings and score it: sacreBLEU with
    its signature and its 95% interval ("sacrebleu_ci95", the bootstrap's half-width), tokenized
    BLEU, perplexity and the test pairs it leaves out ("ppl_pairs_left_out": too long for the
    model's positions). The "hypotheses" entry holds the translations. `cuda_graphs`: as
    `scoring.translate`."""
    device = torch.device(device)
    model, tokenizer = model_from_checkpoint(checkpoint, device)
    test = load_parallel(
        profile.corpus,
        split or profile.test_split,
        profile.src_lang,
        profile.tgt_lang,
        data_dir,
    )
    limit = max_sentences or profile.eval_max_sentences
    sources, references = (
        (test.src[:limit], test.tgt[:limit]) if limit else (test.src, test.tgt)
    )
    scores = evaluate_translation(
        model,
        tokenizer,
        sources,
        references,
        profile.decode_settings(device),
        target_language=profile.tgt_lang,
        progress=progress,
        cuda_graphs=cuda_graphs,
    )
    scores["test_set"] = test.name
    scores["step"] = checkpoint.get("step")
    # The score's 95% interval over the test sentences (sacreBLEU's bootstrap, seeded): a number
    # compared with another run's needs it.
    scores["sacrebleu_ci95"] = paired_bootstrap(
        {"run": scores["hypotheses"]}, references
    )["run"]["ci95"]
    return scores


# ------------------------------------------------------------------------------------------ results
def default_results_name(profile: Profile) -> str:
    return f"translation_{profile.corpus}_{profile.src_lang}_{profile.tgt_lang}"


def write_results(
    summary: dict,
    profile: Profile,
    name: str | None = None,
    device=None,
    *,
    path: str | Path | None = None,
) -> Path:
    """`results/<profile>/<name>.json` (or `path`): the run's numbers with provenance (git commit,
    device, torch, date) and its run folder. The test scores are also copied to the top level,
    where the book's summary table reads them."""
    metrics = {
        k: v
        for k, v in summary.items()
        if k
        not in (
            "out_dir",
            "wall_time_s",
            "model_config",
            "results_path",
            "run_results_path",
        )
    }
    for key in (
        "sacrebleu",
        "sacrebleu_ci95",
        "bleu_tokenized",
        "ppl",
        "ppl_pairs_left_out",
        "sacrebleu_signature",
    ):
        if key in summary.get("test", {}):
            metrics[key] = summary["test"][key]
    config = {"model": summary["model_config"], "profile": profile.to_dict()}
    return write_result(
        name or default_results_name(profile),
        metrics,
        profile=profile.results_folder,
        config=config,
        wall_time_s=summary.get("wall_time_s"),
        device=device,
        path=path,
        run_folder=summary["out_dir"],
    )


# ------------------------------------------------------------------------------------------ all of it
@contextlib.contextmanager
def _this_runs_folder(
    out_dir: Path, context: DistributedContext, *, resume: bool, overwrite: bool
):
    """Rank 0 claims the folder (lock, no mixing of runs) and yields it; the other ranks wait until
    it has, and get None."""
    if not context.is_main:
        barrier(context)
        yield None
        return
    with claim_run_folder(out_dir, resume=resume, overwrite=overwrite) as folder:
        barrier(context)
        yield folder


def publish_path(profile: Profile, results_name: str | None, out_dir: Path) -> Path:
    """Where `run(publish=True)` files the scores, after checking that the name is a plain stem
    and that the file there is not a committed result of another run."""
    path = results_path(
        results_name or default_results_name(profile), profile.results_folder
    )
    check_replaceable(path, out_dir)
    return path


def _check_test_split(profile: Profile, data_dir) -> None:
    test = load_parallel(
        profile.corpus, profile.test_split, profile.src_lang, profile.tgt_lang, data_dir
    )
    if not len(test):
        raise ValueError(
            f"the test split {test.name} ({test.src_path}, {test.tgt_path}) holds no usable "
            "sentence pair, so the run could not be scored: fix the files, or pass --no-eval"
        )


def run(
    profile: Profile,
    out_dir: str | Path | None = None,
    *,
    data_dir=None,
    resume: bool | str | Path = False,
    overwrite: bool = False,
    device: str = "auto",
    evaluate_test: bool = True,
    results_name: str | None = None,
    publish: bool = False,
    show_progress: bool = True,
    on_step=None,
) -> dict:
    """Train, average the last snapshots, score the test set and file the results.

    The run folder must hold no other run (`overwrite=True` replaces it; `resume=True` continues
    the one there), and no other process may be writing into it. Everything that can be checked
    before training is checked before anything is deleted or trained: the device, the results
    name, the data and tokenizer, the test split, and on resume that nothing that shapes the run
    changed.

    The scores are filed with the run, in `out_dir/results.json`. `publish=True` (the book's
    chapters, `train --publish`) also writes `results/<profile>/<results_name>.json` (default
    `translation_<corpus>_<src>_<tgt>`), which the book and the README read; it never replaces a
    committed file of another run. Returns the training summary, with "test" (the scores),
    "results_path" (the published file, else the run's) and "run_results_path" when evaluated.
    An interrupted run (Ctrl-C, SIGTERM) is neither averaged nor scored: resume it first.
    """
    started = time.perf_counter()
    out_dir = Path(out_dir) if out_dir is not None else Path("runs") / profile.name
    if results_name is not None and not publish:
        raise ValueError(
            "--results-name names the file --publish writes into results/<profile>/: add "
            "--publish, or leave --results-name out (the run's own file is results.json)"
        )
    if publish and not evaluate_test:
        raise ValueError(
            "--publish files the test scores and --no-eval skips them: leave out one of the two"
        )
    published = publish_path(profile, results_name, out_dir) if publish else None
    resume_from = None if resume in (True, False) else Path(resume)
    check_outputs(
        [
            (f"the run file {name}", out_dir / name)
            for name in (
                RESUME_NAME,
                METRICS_NAME,
                AVERAGED_NAME,
                TRANSLATIONS_NAME,
                RESULTS_NAME,
            )
        ]
        + [("the published results file", published)],
        data_inputs(
            profile,
            data_dir,
            (profile.train_split, profile.valid_split, profile.test_split),
        )
        + (
            [("the --resume checkpoint", resume_from)]
            if resume_from is not None
            and resume_from.resolve() != (out_dir / RESUME_NAME).resolve()
            else []
        ),
    )
    if resume_from is not None:  # an input: checked before the folder is claimed
        check_resumable(profile, resume_from, data_dir)
    context = init_distributed(device)
    try:
        with _this_runs_folder(
            out_dir, context, resume=resume is True, overwrite=overwrite
        ) as folder:
            if resume is True:  # the folder's own last.pt, there once it is claimed
                check_resumable(profile, out_dir / RESUME_NAME, data_dir)
            data = prepare_data(
                profile, data_dir, context, profile.model_config().max_len
            )
            if context.is_main:
                if evaluate_test:
                    _check_test_split(profile, data_dir)
                folder.clear_old_run()  # only now: every check above has passed
            try:
                summary = train(
                    profile,
                    out_dir,
                    data_dir=data_dir,
                    resume=resume,
                    context=context,
                    show_progress=show_progress,
                    on_step=on_step,
                    data=data,
                )
                if (
                    evaluate_test
                    and summary["stopped_by"] != "interrupted"
                    and context.is_main
                ):
                    _evaluate_and_file(
                        summary,
                        profile,
                        out_dir,
                        data_dir,
                        context,
                        published,
                        started,
                        show_progress,
                    )
            finally:
                # Derived files that do not describe the run's last snapshots (not refreshed:
                # --no-eval, a Ctrl-C, a failure) are set aside; after a scored run none are.
                if context.is_main:
                    derived.set_aside_stale(out_dir)
        return summary
    finally:
        shutdown_distributed()


def _evaluate_and_file(
    summary, profile, out_dir, data_dir, context, published, started, show_progress
) -> None:
    """Average the last snapshots, score the test set, and file averaged.pt, the translations and
    the results, each naming the snapshots they came from."""
    averaged, used = average_last(out_dir, profile.average_last)  # section 6.1
    atomic_torch_save(averaged, out_dir / AVERAGED_NAME)
    scores = evaluate(
        averaged,
        profile,
        data_dir=data_dir,
        device=context.device,
        progress=show_progress,
    )
    atomic_write_text(
        out_dir / TRANSLATIONS_NAME,
        translations_text(scores.pop("hypotheses")),
    )
    scores["averaged_checkpoints"] = [p.name for p in used]
    summary["test"] = scores
    summary["wall_time_s"] = round(time.perf_counter() - started, 1)
    _file_results(summary, profile, out_dir, context, published)


def _file_results(
    summary: dict, profile: Profile, out_dir: Path, context, published: Path | None
) -> None:
    """The run's results.json, and the published copy when asked for."""
    own = write_results(
        summary, profile, device=context.device, path=out_dir / RESULTS_NAME
    )
    summary["run_results_path"] = str(own)
    summary["results_path"] = str(own)
    if published is not None:
        check_replaceable(published, out_dir)  # still true after the training
        write_results(summary, profile, published.stem, context.device, path=published)
        summary["results_path"] = str(published)
