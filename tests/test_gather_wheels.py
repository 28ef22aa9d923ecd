"""scripts/gpu/gather_wheels.py: which wheels an offline GPU machine is sent (no network here)."""

import zipfile
from pathlib import Path

import pytest

from tests.support.scripts import imported_script

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "gpu" / "gather_wheels.py"


@pytest.fixture(scope="module")
def gw():
    with imported_script(SCRIPT) as module:
        yield module


FAKE_LOCK = """\
# a header comment
appnope==1.0.0 ; sys_platform == 'darwin' \\
    --hash=sha256:aa
    # via ipykernel
debugpy==1.8.0 \\
    --hash=sha256:dd
    # via ipykernel
ipykernel==7.0.0 \\
    --hash=sha256:11 \\
    --hash=sha256:12
    # via
    #   -r requirements.txt
    #   papermill
jinja2==3.1.6 \\
    --hash=sha256:jj
    # via altair
markupsafe==3.0.0 \\
    --hash=sha256:mm
    # via jinja2
numpy==2.4.6 \\
    --hash=sha256:nn
    # via
    #   -r requirements.txt
    #   pandas
    #   scipy
nvidia-cublas==13.0 \\
    --hash=sha256:cc
    # via papermill
pandas==3.1.1 \\
    --hash=sha256:pp
    # via -r requirements.txt
papermill==2.7.0 \\
    --hash=sha256:p1
    # via -r requirements.txt
python-dateutil==4.0.0 \\
    --hash=sha256:du
    # via pandas
pyzmq==27.3.0 \\
    --hash=sha256:zz
    # via ipykernel
scipy==1.17.1 ; python_full_version < '3.12' \\
    --hash=sha256:s1
    # via statsmodels
scipy==1.18.1 ; python_full_version >= '3.12' \\
    --hash=sha256:s2
    # via statsmodels
statsmodels==0.15.0 \\
    --hash=sha256:st
    # via -r requirements.txt
sympy==1.14.0 \\
    --hash=sha256:sy
torch==2.13.0 \\
    --hash=sha256:tt
    # via papermill
triton==3.6.0 \\
    --hash=sha256:tr
    # via ipykernel
"""
ROOTS = ("papermill", "pandas", "statsmodels", "torch", "triton")


def lock312(gw):
    return gw.lock_for(gw.parse_lock(FAKE_LOCK), gw.target_environment("3.12"))


def test_the_lock_is_read_with_hashes_markers_and_via(gw):
    pins = {(p.name, p.version): p for p in gw.parse_lock(FAKE_LOCK)}
    assert pins["ipykernel", "7.0.0"].hashes == ["sha256:11", "sha256:12"]
    # "-r requirements.txt" is no package: it makes the pin direct
    assert pins["ipykernel", "7.0.0"].via == {"papermill"}
    assert pins["ipykernel", "7.0.0"].direct and not pins["debugpy", "1.8.0"].direct
    assert pins["numpy", "2.4.6"].via == {"pandas", "scipy"}
    assert pins["appnope", "1.0.0"].marker == "sys_platform == 'darwin'"
    assert pins["sympy", "1.14.0"].via == set()
    assert pins["ipykernel", "7.0.0"].line() == (
        "ipykernel==7.0.0 --hash=sha256:11 --hash=sha256:12"
    )
    # one pin per package for a target: the marker decides between scipy's two
    assert lock312(gw)["scipy"].version == "1.18.1"
    env311 = gw.target_environment("3.11")
    assert gw.lock_for(gw.parse_lock(FAKE_LOCK), env311)["scipy"].version == "1.17.1"
    assert "appnope" not in lock312(gw)


def test_a_bare_target_gets_the_closure_but_never_torch_or_its_cuda_libraries(gw):
    chosen = gw.select(lock312(gw), {}, ROOTS)
    assert set(chosen.ship) == {
        "papermill",
        "ipykernel",
        "debugpy",
        "pyzmq",
        "pandas",
        "numpy",
        "python-dateutil",
        "statsmodels",
        "scipy",
    }
    assert chosen.ship["scipy"].version == "1.18.1"
    for name in chosen.ship:
        assert not gw.NEVER.match(name)
    # named as roots, required through via lines, or asked for by a wheel: still never
    chosen = gw.select(
        lock312(gw), {}, ROOTS, also={"torch": "x", "nvidia-cublas": "y", "triton": "z"}
    )
    assert not {"torch", "triton", "nvidia-cublas"} & set(chosen.ship)


@pytest.mark.parametrize(
    "name",
    ["torch", "triton", "pytorch-triton-rocm", "nvidia-cudnn-cu12", "cuda-bindings"],
)
def test_never_matches_torch_and_what_it_brings(gw, name):
    assert gw.NEVER.match(name)


def test_what_the_target_has_is_used_and_not_descended_into(gw):
    have = gw.parse_have("pandas==2.2.0\nipykernel\nnumpy==2.5.2\n")
    chosen = gw.select(lock312(gw), have, ROOTS)
    # pandas at another version, ipykernel at a version not known: the target's copies stand,
    # and what only they require (python-dateutil, pyzmq, debugpy) comes with them
    assert set(chosen.ship) == {"papermill", "statsmodels", "scipy"}
    assert chosen.kept == {"pandas": "2.2.0", "ipykernel": None, "numpy": "2.5.2"}
    assert not chosen.notes


def test_a_target_version_below_requirements_txt_is_replaced_and_said(gw):
    have = gw.parse_have("pandas==1.5.3\nnumpy==2.5.2\n")
    bounds = gw.lower_bounds("torch>=2.2\npandas>=2.0\nnumpy>=1.24\n")
    chosen = gw.select(lock312(gw), have, ROOTS, bounds=bounds)
    assert chosen.ship["pandas"].version == "3.1.1"
    assert "python-dateutil" in chosen.ship  # the shipped pandas brings its requirements
    assert "numpy" not in chosen.ship  # 2.5.2 meets >=1.24
    assert any("pandas 3.1.1 shadows the target's" in n for n in chosen.notes)


def test_exact_and_also_ship_the_locks_version_and_leave_out_drops_a_package(gw):
    have = gw.parse_have("numpy==2.5.2\npandas\nsympy==1.0\n")
    chosen = gw.select(lock312(gw), have, ROOTS, exact=["NumPy"])
    assert chosen.ship["numpy"].version == "2.4.6"
    assert "pandas" not in chosen.ship
    chosen = gw.select(lock312(gw), have, ROOTS, also={"pandas": "a wheel needs it"})
    assert "pandas" in chosen.ship and "python-dateutil" in chosen.ship
    chosen = gw.select(lock312(gw), {}, ROOTS, leave_out=["debugpy"])
    assert "debugpy" not in chosen.ship and "ipykernel" in chosen.ship


def test_torch_requirements_count_as_the_targets(gw):
    # jinja2 and markupsafe are torch's: a target with torch has them
    chosen = gw.select(lock312(gw), {}, ("jinja2",))
    assert not chosen.ship and chosen.with_torch == {"jinja2"}


def test_the_have_file_takes_pip_freeze_lines_and_bare_names(gw):
    have = gw.parse_have(
        "# comment\n"
        "Jinja2==3.1.6\n"
        "typing_extensions==4.16.0\n"
        "torch==2.11.0+cu130\n"
        "mypkg @ file:///build/mypkg\n"
        "-e git+https://example.invalid/x.git#egg=x\n"
        "  absl-py  \n"
        "\n"
    )
    assert have == {
        "jinja2": "3.1.6",
        "typing-extensions": "4.16.0",
        "torch": "2.11.0+cu130",
        "mypkg": None,
        "absl-py": None,
    }


def test_platform_tags_list_every_manylinux_a_glibc_runs(gw):
    tags = gw.platform_tags("x86_64", "2.28")
    for tag in (
        "manylinux_2_28_x86_64",
        "manylinux_2_26_x86_64",
        "manylinux_2_17_x86_64",
        "manylinux2014_x86_64",
        "manylinux2010_x86_64",
        "manylinux1_x86_64",
        "manylinux_2_5_x86_64",
    ):
        assert tag in tags
    assert "manylinux_2_29_x86_64" not in tags and tags[0] == "manylinux_2_28_x86_64"
    assert gw.platform_tags("aarch64", "2.17")[0] == "manylinux_2_17_aarch64"
    with pytest.raises(ValueError):
        gw.platform_tags("x86_64", "3.1")


def make_wheel(folder: Path, name: str, version: str, requires: list[str]) -> Path:
    path = folder / f"{name}-{version}-py3-none-any.whl"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires
    )
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr(f"{name}-{version}.dist-info/METADATA", meta)
        wheel.writestr(f"{name}/__init__.py", "")
    return path


def test_unmet_reads_the_wheels_requirements_for_the_target(gw, tmp_path):
    make_wheel(
        tmp_path,
        "papermill",
        "2.7.0",
        [
            "click",
            "nbclient>=0.2.0",
            "aiohttp>=3.9; python_version == '3.12'",
            "boto3; extra == 's3'",
            "appnope; sys_platform == 'darwin'",
            "torch>=2",
            "nvidia-cublas",
            "jinja2",
            "debugpy",
        ],
    )
    make_wheel(tmp_path, "nbclient", "0.11.0", ["jupyter-client>=6.1.12"])
    found = gw.folder_wheels(tmp_path)
    assert found["papermill"][1] == "2.7.0"
    wheels = {n: (v, r) for n, (_, v, r) in found.items()}
    have = gw.parse_have("click\naiohttp==3.8.0\njupyter-client==8.0.0\n")
    missing = gw.unmet(wheels, have, gw.target_environment("3.12"), leave_out=["debugpy"])
    # aiohttp is too old on 3.12; extras, other platforms, torch's own and left-out names are not
    # asked for; jinja2 comes with torch
    assert set(missing) == {"aiohttp"}
    assert "3.8.0" in missing["aiohttp"]
    missing = gw.unmet(wheels, {}, gw.target_environment("3.11"))
    assert set(missing) == {"click", "jupyter-client", "debugpy"}


def test_download_asks_pip_for_binary_wheels_of_the_target_and_falls_back_per_package(
    gw, tmp_path, monkeypatch
):
    commands = []

    def run(command):
        commands.append(command)
        requirements = Path(command[command.index("-r") + 1]).read_text()

        class Done:
            # the lock's sympy has no wheel for this target; a newer one has
            returncode = 1 if "sympy==" in requirements else 0

        return Done()

    monkeypatch.setattr(gw.subprocess, "run", run)
    lock = lock312(gw)
    platforms = gw.platform_tags()
    fallbacks = gw.download([lock["numpy"], lock["sympy"]], tmp_path, "3.12", platforms)
    assert fallbacks == ["sympy"]
    first = commands[0]
    for flag in ("--only-binary=:all:", "--no-deps", "--require-hashes"):
        assert flag in first
    assert first[first.index("--python-version") + 1] == "3.12"
    assert first[first.index("--implementation") + 1] == "cp"
    assert "manylinux2014_x86_64" in first and "manylinux_2_28_x86_64" in first
    # the batch, then numpy alone, sympy alone (fails), then sympy unpinned without hashes
    assert len(commands) == 4 and "--require-hashes" not in commands[-1]


# The repository's own lock, lists and README.


def test_roots_and_left_out_cover_requirements_txt(gw):
    names = set(gw.lower_bounds((REPO / "requirements.txt").read_text()))
    roots = set(gw.ROOTS)
    assert names - roots - set(gw.LEFT_OUT) == set(), "classify it in ROOTS or LEFT_OUT"
    assert not roots & set(gw.LEFT_OUT)


def test_the_real_lock_for_the_device_ships_the_runner_and_nothing_of_torch_or_the_site(
    gw,
):
    env = gw.target_environment("3.12")
    lock = gw.lock_for(gw.parse_lock((REPO / "requirements.lock").read_text()), env)
    assert set(gw.ROOTS) <= set(lock)
    # pins with no `via` are torch's own requirements (scripts/lock.sh)
    assert {p.name for p in lock.values() if not (p.via or p.direct)} <= gw.TORCH_REQUIRES
    have = gw.parse_have((REPO / "scripts" / "gpu" / "device_packages.txt").read_text())
    bounds = gw.lower_bounds((REPO / "requirements.txt").read_text())
    chosen = gw.select(lock, have, bounds=bounds)
    shipped = set(chosen.ship)
    assert {"papermill", "ipykernel", "jupytext", "nbformat", "altair", "nltk"} <= shipped
    assert not {n for n in shipped if gw.NEVER.match(n)}
    assert not shipped & {"jupyter-book", "vl-convert-python", "sphinx", "pytest", "ruff"}
    # the device's own compiled packages stand, whatever their versions
    assert not shipped & {"numpy", "scipy", "pandas", "onnxruntime", "sentencepiece"}
    assert chosen.kept["numpy"] == "2.5.2"
    lean = gw.select(lock, have, bounds=bounds, leave_out=sorted(gw.OPTIONAL))
    assert shipped - set(lean.ship) == {"debugpy", "jedi", "parso"}


def test_dry_run_prints_the_selection(gw, capsys):
    assert (
        gw.main(
            [
                "--python-version",
                "3.12",
                "--have",
                str(REPO / "scripts" / "gpu" / "device_packages.txt"),
                "--dry-run",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "papermill==2.7.0" in out and "the target's numpy 2.5.2" in out
    assert "torch" not in out.replace("the target's torch", "")


def test_the_wheel_folder_is_ignored_by_git():
    assert "/.whl/" in (REPO / ".gitignore").read_text().splitlines()
