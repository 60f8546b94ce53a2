"""The Lightning CLI's failures told in one line, as the data commands tell theirs.

``training.run_cli`` runs through these: the configs are found by name and read as YAML
before the CLI sees them (a syntax error names the file and line); the parser's errors
(an unknown option, a wrong type, a missing reader) become one ``UserError`` line instead of
the usage and a nested report; ``--ckpt_path`` is checked before anything reads it (missing,
truncated, junk); and the trainer's ``MisconfigurationException`` (a GPU config on a machine
without one) says what to pass instead. The known noise of every run (Lightning's tips, a
deprecation inside Lightning, the checkpoint folder of a resumed run) is filtered here too.
"""

from __future__ import annotations

import contextlib
import logging
import re
import sys
import warnings
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from attentive_reader.common.errors import UserError
from attentive_reader.training.shipped_configs import config_path, configs_dir, is_config_name

# Lightning's special --ckpt_path values, which name no file.
SPECIAL_CKPT_PATHS = ("last", "best", "hpc", "registry")

# Warnings every training command printed that say nothing to a user of the toolkit: a
# deprecation inside Lightning's own code, the checkpoint folder of a resumed run being the
# new run's (wanted: each run writes its own version folder), an empty validation split
# (the data module says so itself) and the missing val_acc that follows from it (fit's last
# line names the checkpoints), the Timer of a run trained with --trainer.max_time being
# absent when its checkpoint is resumed or tested without that option (Lightning adds that
# callback for max_time only; its state, the time used, matters to nothing else), and an
# epoch shorter than log_every_n_steps (a small fit: the steps are still logged every
# log_every_n_steps, counted across epochs).
NOISE_WARNINGS = (
    r".*isinstance\(treespec, LeafSpec\)",
    r"The dirpath has changed from",
    r"Total length of .* across ranks is zero",
    r".*could not find the monitored key in the returned metrics",
    r"Be aware that when using `ckpt_path`.* Please add the following callbacks: \['Timer'\]\.$",
    r"The number of training batches \(\d+\) is smaller than the logging interval",
)
# Lightning's advertisements (``rank_zero_info``), logged at every run.
_TIP = "💡 Tip"
_RANK_ZERO_LOGGERS = (
    "pytorch_lightning.utilities.rank_zero",
    "lightning_fabric.utilities.rank_zero",
)

_GPU_ACCELERATORS = ("gpu", "cuda")
_GPU_MESSAGES = (
    "gpu backend",
    "gpuaccelerator",
    "cudaaccelerator",
    "no gpu",
    "cuda is not available",
)


class ParserMistake(Exception):
    """The CLI parser's error message, raised instead of printing the usage and exiting
    (``run_cli`` turns it into one line with ``parser_error_line``)."""

    def __init__(self, message: str, prog: str) -> None:
        super().__init__(message)
        self.message = message
        self.prog = prog


def _drop_tips(record: logging.LogRecord) -> bool:
    return not str(record.msg).startswith(_TIP)


@contextlib.contextmanager
def quiet_lightning() -> Iterator[None]:
    """Filter the noise of a Lightning run (``NOISE_WARNINGS``, the tips) for the body."""
    loggers = [logging.getLogger(name) for name in _RANK_ZERO_LOGGERS]
    with warnings.catch_warnings():
        for pattern in NOISE_WARNINGS:
            warnings.filterwarnings("ignore", message=pattern)
        for logger in loggers:
            logger.addFilter(_drop_tips)
        try:
            yield
        finally:
            for logger in loggers:
                logger.removeFilter(_drop_tips)


def checked_configs(argv: Sequence[str]) -> list[str]:
    """``argv`` with each ``--config NAME`` replaced by the shipped config's path, every
    config file read as YAML first.

    Raises:
        UserError: a config that does not exist, or is not valid YAML (file, line and
            column), or is not a mapping of sections.
    """
    out: list[str] = []
    args = iter(argv)
    for arg in args:
        if arg == "--config":
            value = next(args, None)
            if value is None:
                raise UserError("--config needs a value: a shipped config's name or a YAML file")
            out += [arg, str(_read_config(value))]
        elif arg.startswith("--config="):
            out.append(f"--config={_read_config(arg.split('=', 1)[1])}")
        else:
            out.append(arg)
    return out


def _read_config(value: str) -> Path:
    import yaml

    path = config_path(value)
    if not is_config_name(value) and Path(value) != path:
        _say(f"note: no {value} in this folder; reading the shipped copy {path}")
    try:
        content = yaml.safe_load(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise UserError(f"{path} is not a text file; a config is YAML") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"{path}, line {mark.line + 1}, column {mark.column + 1}" if mark else str(path)
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise UserError(f"{where}: not valid YAML: {problem}; fix that line") from None
    if content is not None and not isinstance(content, dict):
        raise UserError(
            f"{path}: a config is a mapping of sections (model:, data:, trainer:, ...), not a "
            f"{type(content).__name__}"
        )
    return path


def _say(line: str) -> None:
    """Print ``line`` on standard error once a run (by rank 0 of several processes)."""
    from pytorch_lightning.utilities.rank_zero import rank_zero_only

    if rank_zero_only.rank == 0:
        print(line, file=sys.stderr, flush=True)


def check_ckpt_path(ckpt_path: str | None) -> None:
    """A ``--ckpt_path`` that names no readable checkpoint, refused before anything reads it.

    Raises:
        UserError: the file is missing, or is not a checkpoint (a truncated copy, another
            kind of file): a checkpoint is a zip archive (``torch.save``).
    """
    if ckpt_path is None or ckpt_path in SPECIAL_CKPT_PATHS:
        return
    path = Path(ckpt_path)
    if not path.is_file():
        what = "a folder, not a checkpoint file" if path.is_dir() else "no such file"
        raise UserError(
            f"--ckpt_path {path}: {what}; a run's checkpoints are in its checkpoints/ folder "
            "(last.ckpt, best-*.ckpt)"
        )
    if not zipfile.is_zipfile(path):
        raise UserError(
            f"--ckpt_path {path} is not a readable checkpoint ({path.stat().st_size:,} bytes: "
            "truncated, or not a checkpoint); use another one of the run (last.ckpt, "
            "best-*.ckpt) or copy it again"
        )


def misconfiguration_line(error: Exception, argv: Sequence[str] = ()) -> str:
    """The one line for a trainer that cannot be built as configured; a GPU asked for on a
    machine without one names what asked (the option or the config in ``argv``) and says to
    drop it."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    if not any(word in text.lower() for word in _GPU_MESSAGES):
        return f"the trainer cannot run as configured: {text}; fix the trainer options (see --help)"
    found = f"torch finds none here ({text.split('. ')[0].rstrip('.!')})"
    asker = _gpu_asker(argv)
    if asker is not None and asker.startswith("--trainer."):
        return (
            f"{asker} asks for a GPU and {found}; drop {asker}: the reader configs train on "
            "the CPU as they are"
        )
    asked = f"{asker} asks" if asker else "the config asks"
    drop = f"drop {asker}" if asker else "drop the config that sets trainer.accelerator gpu"
    return (
        f"{asked} for a GPU and {found}; {drop} (the reader configs train on the CPU as they "
        "are), or put --trainer.accelerator cpu --trainer.devices 1 --trainer.strategy auto "
        "--trainer.precision 32-true after it"
    )


def _gpu_asker(argv: Sequence[str]) -> str | None:
    """What in ``argv`` asks for a GPU, as a user wrote it: ``--trainer.accelerator gpu`` or
    ``--config trainer/ddp_gpu`` (the last setting wins, as in the parser); ``None`` when
    nothing does."""
    import yaml

    asker = None
    for index, arg in enumerate(argv):
        name, equals, value = arg.partition("=")
        if not equals:
            value = argv[index + 1] if index + 1 < len(argv) else ""
        if name == "--trainer.accelerator":
            asker = f"{name} {value}" if value.lower() in _GPU_ACCELERATORS else None
        elif name == "--config" and value and Path(value).is_file():
            config = yaml.safe_load(Path(value).read_text(encoding="utf-8")) or {}
            trainer = config.get("trainer") if isinstance(config, dict) else None
            accelerator = trainer.get("accelerator") if isinstance(trainer, dict) else None
            if accelerator is not None:
                gpu = str(accelerator).lower() in _GPU_ACCELERATORS
                asker = f"--config {_config_name(Path(value))}" if gpu else None
    return asker


def _config_name(path: Path) -> str:
    """A shipped config's name (``trainer/ddp_gpu``), else the path as given."""
    root = configs_dir().resolve()
    resolved = path.resolve()
    if resolved.is_relative_to(root):
        return resolved.relative_to(root).with_suffix("").as_posix()
    return str(path)


def parser_error_line(message: str, prog: str, argv: Sequence[str]) -> str:
    """One line for a message of the CLI's parser (``jsonargparse``): what is wrong, where
    (the option; the config file and line of a key when a config holds it), what to do."""
    files = _config_files(argv)
    keys = re.findall(r'Parser key "([^"]+)"', message)
    unknown = re.search(r"Option '([^']+)' is not accepted", message)
    expected = re.search(r"Expected a (.+?)\. Got value: (.*)", message)
    required = re.search(r"arguments are required: (.+)", message)
    if argv:  # the command's own help, named as a user types it (not the top-level parser's)
        prog = f"attentive-reader {argv[0]}"
    help_hint = f"'{prog} --help' lists the options"
    if unknown:
        name = unknown.group(1)
        if not keys:
            return f"unknown option {name!r}{_where_in_configs(name, files)}; {help_hint}"
        return (
            f"{keys[0]} has no option {name!r}{_where_in_configs(name, files)}; {help_hint} "
            f"(and '{prog} --{keys[0]}.help CLASS' those of a class)"
        )
    if expected:
        kind, value = expected.group(1), expected.group(2).strip()
        choices = re.fullmatch(r"typing\.Literal\[(.*)\]", kind)
        kind = (
            "one of " + choices.group(1).replace("'", "")
            if choices
            else re.sub(r"<class '(?:\w+\.)*(\w+)'>", r"\1", kind)
        )
        key = ".".join(keys) if keys else "a value"
        found = _where_in_configs(keys[-1], files, value) if keys else ""
        return f"--{key}: expected {kind}, got {value!r}{found}"
    if "arguments are required" in message and ".model" in message:
        return (
            "no reader given: put a reader config first (--config attentive_reader; "
            "'attentive-reader configs' lists them) or pass --model.class_path"
        )
    if required:
        return _required_line(required.group(1), argv, help_hint)
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    first = lines[0] if lines else "cannot parse the arguments"
    first = first.replace('"<unicode string>"', "the command line")
    if first.lower().startswith("unrecognized arguments"):
        return f"{first}; {help_hint}"
    if len(lines) > 1 and lines[-1] != first:
        first = f"{first.rstrip(':')}: {lines[-1]}"
    return f"{first}; {help_hint}"


def _required_line(names: str, argv: Sequence[str], help_hint: str) -> str:
    """``--data.path is required ...`` for the parser's ``fit.data.path`` (its keys carry
    the subcommand's name, which a user never types)."""
    prefix = f"{argv[0]}." if argv else ""
    options = [f"--{name.strip().removeprefix(prefix)}" for name in names.rstrip(". ").split(",")]
    what = " and ".join(options)
    if options == ["--data.path"]:
        what += " (the processed dataset folder, from 'attentive-reader preprocess')"
    return f"{what} {'is' if len(options) == 1 else 'are'} required; {help_hint}"


def _config_files(argv: Sequence[str]) -> list[Path]:
    files = []
    for index, arg in enumerate(argv):
        if arg == "--config" and index + 1 < len(argv):
            files.append(Path(argv[index + 1]))
        elif arg.startswith("--config="):
            files.append(Path(arg.split("=", 1)[1]))
    return [path for path in files if path.is_file()]


def _where_in_configs(name: str, files: Sequence[Path], value: str | None = None) -> str:
    """`` (in FILE, line N)`` for the last config that sets ``name`` (to ``value`` when
    given; later configs win); empty when none does (the command line set it)."""
    given = "" if value is None else rf"\s*['\"]?{re.escape(value)}['\"]?\s*(#.*)?$"
    pattern = re.compile(rf"^\s*{re.escape(name)}\s*:{given}")
    for path in reversed(files):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pattern.match(line):
                return f" (in {path}, line {number})"
    return ""


# The model options a run resumed from a checkpoint may change (the reader applies them to the
# restored optimizer: ``ClozeReader.on_load_checkpoint``); the others shape the weights or
# what they mean.
RESUMABLE_OPTIONS = ("lr",)


def given_model_options(args: Sequence[str] | None, config: Any) -> dict[str, Any]:
    """The reader options the command line set (``--model.X`` or ``--model.init_args.X``),
    with their parsed values."""
    init_args = config.get("model", {}).get("init_args") or {}
    given = {}
    for arg in args or ():
        name = arg.split("=", 1)[0]
        if not name.startswith("--model."):
            continue
        key = name.removeprefix("--model.").removeprefix("init_args.")
        if key not in ("class_path", "help") and "." not in key and key in init_args:
            given[key] = init_args[key]
    return given


def resumed_model_options(config: Any, given: dict[str, Any]) -> None:
    """A resumed run keeps the checkpoint's reader options (Lightning lays them over the
    config), except those the command line changed: the learning rate is applied; any other
    change is refused in one line.

    Raises:
        UserError: a changed option other than ``RESUMABLE_OPTIONS``.
    """
    init_args = config.model.init_args
    for key, value in given.items():
        stored = init_args.get(key)
        if stored == value:
            continue
        if key in RESUMABLE_OPTIONS:
            init_args[key] = value
            continue
        raise UserError(
            f"--model.{key} {value}: {config.ckpt_path} was trained with {key} {stored}, and "
            f"a resumed run keeps the checkpoint's reader (only --model.{', --model.'.join(RESUMABLE_OPTIONS)} "
            "can change); drop the option, or start a new run without --ckpt_path"
        )
