"""The Docker recipes: images that build, and compose runs equal to ``batpolicy simulate``.

Two kinds of tests here:

- static ones (always run, milliseconds): the Dockerfiles copy what exists, compose's
  defaults name files that are in docker/inputs, and ``docker-compose config`` accepts the
  file where compose is installed;
- ``docker``-marked ones that use a Docker engine: build the scheduler image and the Batsim
  4.2.1 image, check the images (non-root, no build tools), then run compose on the bundled
  workload with EASY, with redirection (dynamic jobs) and with the ``fake`` profile, and
  compare the containers' jobs.csv with ``batpolicy simulate``'s on the same inputs.

When the engine tests run (decided once per session, in well under a second when there is
no engine):

- ``BATPOLICY_DOCKER_TESTS=1``: always, building whatever is missing (the Batsim image takes
  10-20 min on 2 cores the first time; its layers are cached after that);
- ``BATPOLICY_DOCKER_TESTS=0``: never;
- unset: when an engine answers AND both test images already exist (built once by an opt-in
  run). The run then costs about a minute on 2 busy cores (layer-cached rebuilds, four
  compose runs at once), so a machine that has the images keeps checking them on every
  suite run, and one that does not never pays for building Batsim by surprise.

Inputs of the images (environment): ``BATPOLICY_DOCKER_SCHEDULER_BASE`` and
``BATPOLICY_DOCKER_BATSIM_BASE`` (default: local/python:3.11 and local/debian:12 when they
exist, from docker/local-base.sh, else python:3.11-slim and debian:12), and
``BATPOLICY_BATSIM_ARCHIVES``, a folder of source archives for the Batsim image (default
the shared folder's Batsim archives beside the repository when there, else they are fetched).
"""

from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCKER = REPO / "docker"
INPUTS = DOCKER / "inputs"
WORKLOAD = "example_workload_hpc_seed1_jobs250.json"
PLATFORM = "zero_lat_cluster128.xml"
SCHEDULER_IMAGE = "batpolicy-test/scheduler:latest"
BATSIM_IMAGE = "batpolicy-test/batsim:4.2.1"
#: Redirection with a low threshold, so that the bundled workload has kills and restarts.
REDIRECTION_PARAMS = ["theta=2"]

docker_engine = pytest.mark.docker


# ---- static checks ---------------------------------------------------------------------------

def test_scheduler_dockerfile_copies_existing_paths_and_serves() -> None:
    text = (DOCKER / "Dockerfile").read_text()
    sources = [m.group(1) for m in re.finditer(r"^COPY (?!--from)(\S+)", text, re.M)]
    assert sources, "Dockerfile copies nothing"
    for src in sources:
        assert (REPO / src).exists(), f"Dockerfile copies missing path {src}"
        assert _dockerignore_keeps(src), f".dockerignore leaves {src} out of the context"
    assert 'ENTRYPOINT ["batpolicy"]' in text
    assert re.search(r'^CMD \["serve", .*28000', text, re.M)
    assert re.search(r"^USER 1000", text, re.M), "the image must not run as root by default"


def _dockerignore_keeps(path: str) -> bool:
    """Whether the repository's .dockerignore (deny-all, then ``!path`` lines) keeps *path*."""
    lines = (REPO / ".dockerignore").read_text().splitlines()
    kept = {line[1:].rstrip("/") for line in lines if line.startswith("!")}
    return path.rstrip("/").removeprefix("./") in kept


def test_batsim_dockerfile_builds_the_pinned_sources() -> None:
    text = (DOCKER / "batsim" / "Dockerfile").read_text()
    assert "ARG BASE=debian:12" in text
    assert "libsimgrid-dev" in text, "Batsim must build against Debian's SimGrid"
    for name in ("batsim-4.2.1.tar.gz", "redox-e7904da.tar.gz", "intervalset-1.2.0"):
        assert name in text
    # The commit pins are those of the archives the lead verified against real Batsim.
    assert "b5463dba818d6e8109e1bfd218d51c720fbdb30f" in text
    assert re.search(r"^USER 1000", text, re.M)


def test_default_inputs_are_in_the_mounted_folder() -> None:
    text = (DOCKER / "compose.yaml").read_text()
    defaults = re.findall(r"\$\{(?:PLATFORM|WORKLOAD):-([^}]+)\}", text)
    assert sorted(defaults) == sorted([PLATFORM, WORKLOAD])
    for default in defaults:
        assert (INPUTS / default).is_file(), f"docker/inputs/{default}"


def test_compose_file_is_valid() -> None:
    compose = _compose_command()
    if compose is None:
        pytest.skip("neither `docker compose` nor docker-compose is installed here")
    result = subprocess.run([*compose, "-f", str(DOCKER / "compose.yaml"), "--profile", "fake",
                             "config"], capture_output=True, text=True, timeout=60,
                            env={**os.environ, "POLICY": "redirection", "PARAMS": "theta=2"})
    assert result.returncode == 0, result.stderr
    for text in ("tcp://scheduler:28000", "set -- serve --policy", "POLICY: redirection",
                 "PARAMS: theta=2", "exec batpolicy fake-batsim", ":/inputs:ro", ":/out"):
        assert text in result.stdout, text


# ---- with a Docker engine --------------------------------------------------------------------

def _compose_command() -> list[str] | None:
    """``docker compose`` (v2) when the plugin answers, else ``docker-compose`` (v1.29+)."""
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True,
                               timeout=30)
        if probe.returncode == 0:
            return ["docker", "compose"]
    legacy = shutil.which("docker-compose")
    return [legacy] if legacy else None


def _engine_answers() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        info = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"],
                              capture_output=True, timeout=15)
    except subprocess.TimeoutExpired:
        return False
    return info.returncode == 0


def _image_exists(image: str) -> bool:
    return subprocess.run(["docker", "image", "inspect", image], capture_output=True,
                          timeout=30).returncode == 0


def _run(cmd: list[str], *, timeout: float, env: dict[str, str] | None = None,
         check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run *cmd*; on failure, fail the test with the end of its output."""
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                            env={**os.environ, **(env or {})})
    if check and result.returncode != 0:
        tail = (result.stdout + result.stderr)[-4000:]
        pytest.fail(f"{' '.join(cmd)} exited {result.returncode}:\n{tail}")
    return result


@pytest.fixture(scope="session")
def docker_images() -> dict[str, str]:
    """Build (or refresh from the layer cache) both images; skip per the module's rules."""
    wanted = os.environ.get("BATPOLICY_DOCKER_TESTS", "")
    if wanted == "0":
        pytest.skip("BATPOLICY_DOCKER_TESTS=0")
    if not _engine_answers():
        if wanted == "1":
            pytest.fail("BATPOLICY_DOCKER_TESTS=1 but no Docker engine answers `docker info`")
        pytest.skip("no Docker engine answers `docker info`")
    if wanted != "1" and not (_image_exists(SCHEDULER_IMAGE) and _image_exists(BATSIM_IMAGE)):
        pytest.skip(f"{SCHEDULER_IMAGE} / {BATSIM_IMAGE} not built yet: set "
                    "BATPOLICY_DOCKER_TESTS=1 to build them (Batsim takes 10-20 min)")
    if _compose_command() is None:
        pytest.fail("a Docker engine answers but neither `docker compose` nor docker-compose "
                    "is installed")

    def base(var: str, local: str, default: str) -> str:
        return os.environ.get(var) or (local if _image_exists(local) else default)

    archives = Path(os.environ.get("BATPOLICY_BATSIM_ARCHIVES")
                    or REPO.parent / "shared" / "batsim")
    context = archives if (archives / "batsim-4.2.1.tar.gz").is_file() else DOCKER / "batsim"
    _run(["docker", "build", "--network", "host", "-t", SCHEDULER_IMAGE,
          "--build-arg", "BASE=" + base("BATPOLICY_DOCKER_SCHEDULER_BASE",
                                        "local/python:3.11", "python:3.11-slim"),
          "-f", str(DOCKER / "Dockerfile"), str(REPO)], timeout=1800)
    # Batsim 4.2.1 is a fixed source build: rebuilt only when asked (or missing), so a clone
    # without the archives beside it (no ../shared) does not try to fetch them again
    if wanted == "1" or not _image_exists(BATSIM_IMAGE):
        _run(["docker", "build", "--network", "host", "-t", BATSIM_IMAGE,
              "--build-arg", "BASE=" + base("BATPOLICY_DOCKER_BATSIM_BASE",
                                            "local/debian:12", "debian:12"),
              "-f", str(DOCKER / "batsim" / "Dockerfile"), str(context)], timeout=3600)
    return {"SCHEDULER_IMAGE": SCHEDULER_IMAGE, "BATSIM_IMAGE": BATSIM_IMAGE}


#: The compose runs of the tests, as the README gives them: name -> (simulator, environment).
SCENARIOS: dict[str, tuple[str, dict[str, str]]] = {
    "easy": ("batsim", {"POLICY": "easy"}),
    "easy-fake": ("fake-batsim", {"POLICY": "easy"}),
    "redir": ("batsim", {"POLICY": "redirection", "PARAMS": " ".join(REDIRECTION_PARAMS),
                         "BATSIM_FLAGS": "--enable-dynamic-jobs"}),
    "bad-param": ("batsim", {"POLICY": "easy", "PARAMS": "no_such_parameter=1"}),
}
#: ``batpolicy simulate`` options giving the same run as each scenario.
SIMULATE_ARGS = {
    "easy": [],
    "easy-fake": [],
    "redir": ["--policy", "redirection", "--enable-dynamic-jobs",
              *[arg for p in REDIRECTION_PARAMS for arg in ("--param", p)]],
}


@dataclass
class ComposeRun:
    """One finished ``compose up``: its exit code, its log and its outputs folder."""

    returncode: int
    log: str
    out: Path

    def jobs_csv(self, name: str) -> Path:
        return self.out / f"{name}_jobs.csv"


@pytest.fixture(scope="session")
def compose_runs(docker_images: dict[str, str],
                 tmp_path_factory: pytest.TempPathFactory) -> dict[str, ComposeRun]:
    """Every scenario's ``compose up`` at once (they wait on Docker more than on the CPU)."""
    compose = _compose_command()
    assert compose is not None
    root = tmp_path_factory.mktemp("compose")
    started = {}
    for name, (simulator, scenario_env) in SCENARIOS.items():
        out = root / name
        out.mkdir()
        env = {**os.environ, **docker_images, "OUTPUTS": str(out), "EXPORT_PREFIX": name,
               "HOST_UID": str(os.getuid()), "HOST_GID": str(os.getgid()),
               "STOP_GRACE_PERIOD": "5s", "SCHED_TIMEOUT": "120", **scenario_env}
        base = [*compose, "-f", str(DOCKER / "compose.yaml"), "-p", f"bptest{os.getpid()}{name}"]
        if simulator == "fake-batsim":
            base += ["--profile", "fake"]
        up = subprocess.Popen([*base, "up", "--exit-code-from", simulator, "scheduler",
                               simulator], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
        started[name] = (base, env, out, up)
    runs = {}
    for name, (base, env, out, up) in started.items():
        try:
            log, _ = up.communicate(timeout=900)
        finally:
            up.kill()
            subprocess.run([*base, "down", "--volumes"], env=env, capture_output=True,
                           timeout=300)
        runs[name] = ComposeRun(up.returncode, log, out)
    return runs


@pytest.fixture(scope="session")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``batpolicy simulate``'s jobs.csv for each scenario that should succeed."""
    root = tmp_path_factory.mktemp("simulate")
    jobs = {}
    for name, args in SIMULATE_ARGS.items():
        _run([sys.executable, "-m", "batpolicy", "simulate", "-q", "-w", str(INPUTS / WORKLOAD),
              "-p", str(INPUTS / PLATFORM), "-e", str(root / name), *args], timeout=300)
        jobs[name] = root / f"{name}_jobs.csv"
    return jobs


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


@docker_engine
def test_scheduler_image_is_lean_and_not_root(docker_images: dict[str, str]) -> None:
    image = docker_images["SCHEDULER_IMAGE"]
    user = _run(["docker", "image", "inspect", "-f", "{{.Config.User}}", image], timeout=60)
    assert user.stdout.strip() == "1000:1000"
    probe = _run(["docker", "run", "--rm", "--entrypoint", "/bin/sh", image, "-c",
                  "id -u; for t in gcc cc g++ make pip pip3; do command -v $t; done; "
                  "python3 -m pip --version 2>/dev/null; ls /src 2>/dev/null; true"],
                 timeout=120)
    assert probe.stdout.split() == ["1000"], f"build tools or sources left: {probe.stdout}"


@docker_engine
def test_batsim_image_is_batsim_4_2_1(docker_images: dict[str, str]) -> None:
    image = docker_images["BATSIM_IMAGE"]
    version = _run(["docker", "run", "--rm", image, "--version"], timeout=120)
    assert version.stdout.strip() == "4.2.1", version.stdout
    probe = _run(["docker", "run", "--rm", "--entrypoint", "/bin/sh", image, "-c",
                  "id -u; for t in gcc cc g++ make meson cmake; do command -v $t; done; true"],
                 timeout=120)
    assert probe.stdout.split() == ["1000"], f"build tools left: {probe.stdout}"


@docker_engine
def test_docker_run_simulate_writes_the_same_jobs_csv(docker_images: dict[str, str],
                                                     tmp_path: Path) -> None:
    out = tmp_path / "container"
    out.mkdir()
    _run(["docker", "run", "--rm", "--user", f"{os.getuid()}:{os.getgid()}",
          "-v", f"{out}:/work/out", docker_images["SCHEDULER_IMAGE"], "simulate", "-q"],
         timeout=300)
    local = tmp_path / "local"
    _run([sys.executable, "-m", "batpolicy", "simulate", "-q", "-o", str(local)], timeout=300)
    assert (out / "jobs.csv").read_bytes() == (local / "jobs.csv").read_bytes()
    assert len(_rows(out / "jobs.csv")) == 250


@docker_engine
@pytest.mark.parametrize("name", ["easy", "easy-fake"])
def test_compose_easy_equals_simulate(compose_runs: dict[str, ComposeRun],
                                      simulated: dict[str, Path], name: str) -> None:
    run = compose_runs[name]
    assert run.returncode == 0, run.log[-4000:]
    assert run.jobs_csv(name).read_bytes() == simulated[name].read_bytes()
    rows = _rows(run.jobs_csv(name))
    assert len(rows) == 250 and {r["final_state"] for r in rows} == {"COMPLETED_SUCCESSFULLY"}
    assert (run.out / f"{name}_transcript.msgpack").stat().st_size > 0
    # HOST_UID/HOST_GID: the outputs belong to whoever ran compose.
    assert {(p.stat().st_uid, p.stat().st_gid) for p in run.out.iterdir()} == {
        (os.getuid(), os.getgid())}


@docker_engine
def test_compose_redirection_with_dynamic_jobs_equals_simulate(
        compose_runs: dict[str, ComposeRun], simulated: dict[str, Path]) -> None:
    run = compose_runs["redir"]
    assert run.returncode == 0, run.log[-4000:]
    assert run.jobs_csv("redir").read_bytes() == simulated["redir"].read_bytes()
    rows = _rows(run.jobs_csv("redir"))
    killed = [r for r in rows if r["final_state"] == "COMPLETED_KILLED"]
    copies = [r for r in rows if r["workload_name"] != "w0"]
    assert killed and len(copies) == len(killed), "no job was redirected (dynamic jobs unused)"


@docker_engine
def test_compose_exit_code_says_the_run_failed(compose_runs: dict[str, ComposeRun]) -> None:
    run = compose_runs["bad-param"]
    assert run.returncode != 0
    assert "no_such_parameter" in run.log
    # Batsim opens its jobs.csv when it starts: nothing ran, so no job is in it.
    jobs = run.jobs_csv("bad-param")
    assert not jobs.exists() or _rows(jobs) == []
