"""Batsim JSON workloads: Batsim 4.2.1's rules, error locations, lenient skipping."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from batpolicy.errors import InputError
from batpolicy.io import read_workload
from batpolicy.io.batsim_json import full_job_id, read_batsim_workload

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"
TRANSCRIPTS = SHARED / "transcripts"


def _write(tmp_path: Path, jobs: list[Any], profiles: dict[str, Any] | None = None,
           **top: Any) -> Path:
    doc = {"nb_res": 4, "jobs": jobs,
           "profiles": {"p": {"type": "delay", "delay": 10}} if profiles is None else profiles,
           **top}
    path = tmp_path / "w.json"
    path.write_text(json.dumps(doc, indent=1))
    return path


def _job(**fields: Any) -> dict[str, Any]:
    return {"id": 1, "subtime": 0, "res": 1, "profile": "p", **fields}


def test_ids_sorting_and_raw_as_batsim_forwards_it(tmp_path: Path) -> None:
    jobs = [_job(id=2, subtime=5.0, walltime=60, user="alice"),
            _job(id=10, subtime=5.0), _job(id="x", subtime=1, walltime=-1),
            _job(id="w0!a", subtime=0.0, walltime=2.5)]
    w = read_batsim_workload(_write(tmp_path, jobs))
    assert [j.id for j in w.jobs] == ["w0!a", "w0!x", "w0!10", "w0!2"]  # "w0!10" < "w0!2"
    two = w.jobs[3]
    assert (two.subtime, two.res, two.profile, two.walltime) == (5.0, 1, "p", 60.0)
    assert two.raw == {"id": "w0!2", "subtime": 5.0, "res": 1, "profile": "p", "walltime": 60,
                       "user": "alice"}
    assert list(two.raw) == ["id", "subtime", "res", "profile", "walltime", "user"]
    assert isinstance(two.raw["walltime"], int)  # numbers as in the file
    assert w.jobs[1].walltime is None and w.jobs[2].walltime is None
    assert w.nb_res == 4 and w.name == "w0" and w.profiles == {"p": {"type": "delay", "delay": 10}}
    assert not w.skipped


def test_workload_name_prefixes_ids(tmp_path: Path) -> None:
    w = read_batsim_workload(_write(tmp_path, [_job(id=3)]), name="trace")
    assert w.jobs[0].id == "trace!3" and w.jobs[0].raw["id"] == "trace!3"


@pytest.mark.parametrize(("job", "field"), [
    (_job(res=2.0), "res"), (_job(res=-1), "res"), (_job(res=True), "res"), (_job(res="2"), "res"),
    (_job(res=2**31), "res"), ({"id": 1, "subtime": 0, "profile": "p"}, "res"),
    (_job(subtime=-1), "subtime"), (_job(subtime="0"), "subtime"),
    ({"id": 1, "res": 1, "profile": "p"}, "subtime"),
    (_job(walltime=0), "walltime"), (_job(walltime=-2), "walltime"),
    (_job(walltime="10"), "walltime"),
    (_job(profile="nope"), "profile"), (_job(profile=3), "profile"),
    ({"subtime": 0, "res": 1, "profile": "p"}, "id"), (_job(id=1.5), "id"), (_job(id=None), "id"),
    (_job(id="w1!3"), "id"), (_job(id="w0!3!4"), "id"), (_job(id=""), "id"),
    (_job(id=2**40), "id"),
])
def test_bad_job_names_file_job_and_field(tmp_path: Path, job: dict[str, Any], field: str) -> None:
    path = _write(tmp_path, [_job(id=0), job])
    with pytest.raises(InputError) as err:
        read_batsim_workload(path)
    assert err.value.field == field and err.value.path == str(path)
    assert err.value.job is not None and err.value.job.startswith("#1")
    assert str(path) in str(err.value) and field in str(err.value)


def test_duplicated_id_is_an_error_even_between_int_and_string(tmp_path: Path) -> None:
    path = _write(tmp_path, [_job(id=7), _job(id="7")])
    with pytest.raises(InputError, match="duplicated job id 'w0!7'") as err:
        read_batsim_workload(path)
    assert err.value.job == "#1 (id '7')"


def test_lenient_skips_and_counts(tmp_path: Path) -> None:
    path = _write(tmp_path, [_job(id=0), _job(id=1, res=1.5), _job(id=2, profile="nope"),
                             _job(id=0), _job(id=3, walltime=0), "junk", _job(id=4)])
    w = read_batsim_workload(path, lenient=True)
    assert [j.id for j in w.jobs] == ["w0!0", "w0!4"]
    assert w.skipped == {"invalid_res": 1, "unknown_profile": 1, "duplicate_id": 1,
                         "invalid_walltime": 1, "not_an_object": 1}


def test_profiles_are_checked(tmp_path: Path) -> None:
    bad = {"p": {"type": "delay", "delay": -3}}
    with pytest.raises(InputError, match="delay") as err:
        read_batsim_workload(_write(tmp_path, [_job()], bad))
    assert err.value.field == "profiles.p.delay"
    with pytest.raises(InputError, match="unknown profiles"):
        read_batsim_workload(_write(tmp_path, [_job()], {
            "p": {"type": "composed", "seq": ["q"]}}))
    with pytest.raises(InputError, match="string 'type'"):
        read_batsim_workload(_write(tmp_path, [_job()], {"p": {"delay": 3}}))
    w = read_batsim_workload(_write(tmp_path, [_job()], {"p": {"delay": 3}}), lenient=True)
    assert not w.jobs and w.skipped == {"invalid_profile": 1, "unknown_profile": 1}


def test_invalid_json_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{\n "jobs": [\n  {"id": 1,, "res": 1}\n ]\n}\n')
    with pytest.raises(InputError, match="invalid JSON") as err:
        read_batsim_workload(path)
    assert err.value.line == 3 and f"{path}:3" in str(err.value)
    path.write_text('{"jobs": [], "profiles": {}, "nb_res": NaN}')
    with pytest.raises(InputError, match="NaN"):
        read_batsim_workload(path)


@pytest.mark.parametrize(("doc", "field"), [
    ([], None), ({"profiles": {}}, "jobs"), ({"jobs": {}, "profiles": {}}, "jobs"),
    ({"jobs": [], "profiles": []}, "profiles"), ({"jobs": [], "nb_res": -2}, "nb_res"),
])
def test_bad_top_level(tmp_path: Path, doc: Any, field: str | None) -> None:
    path = tmp_path / "w.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError) as err:
        read_batsim_workload(path)
    assert err.value.field == field


def test_missing_file_and_bad_name(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read"):
        read_batsim_workload(tmp_path / "none.json")
    with pytest.raises(InputError, match="no '!'"):
        read_batsim_workload(_write(tmp_path, [_job()]), name="a!b")


def test_full_job_id_rules() -> None:
    assert full_job_id(-3, "w0") == "w0!-3"
    with pytest.raises(ValueError):
        full_job_id("w0!", "w0")


def _six_decimals(job: dict[str, Any]) -> dict[str, Any]:
    return {k: round(v, 6) if isinstance(v, float) else v for k, v in job.items()}


def test_transcript_inputs_match_batsim_submissions(shared_data: Path) -> None:
    """Jobs in the order and with the objects Batsim 4.2.1 sent in JOB_SUBMITTED.

    Batsim prints floats with 6 decimals when it forwards them; ``raw`` keeps the file's
    numbers (the codec formats them), so floats are compared rounded; ints stay ints.
    """
    inputs = {"walltime120": "walltime_mix_120.json", "hpc250":
              "example_workload_hpc_seed1_jobs250.json", "samesubmit": "test_same_submit_time.json"}
    for tag, name in inputs.items():
        transcript = next(TRANSCRIPTS.glob(f"*{tag}.jsonl"))
        submitted = []
        for line in transcript.read_text().splitlines():
            for ev in json.loads(line)["batsim"]["events"]:
                if ev["type"] == "JOB_SUBMITTED":
                    submitted.append(ev["data"]["job"])
        w = read_batsim_workload(TRANSCRIPTS / "inputs" / name)
        assert [_six_decimals(j.raw) for j in w.jobs] == submitted, tag
        assert [[type(v) for v in j.raw.values()] for j in w.jobs] == \
            [[type(v) for v in job.values()] for job in submitted]
        assert read_workload(TRANSCRIPTS / "inputs" / name).jobs == w.jobs


def test_every_shared_workload_reads_or_names_its_fault(shared_data: Path) -> None:
    counts = {}
    for path in sorted((shared_data / "batsim" / "workloads").glob("*.json")):
        try:
            counts[path.name] = len(read_batsim_workload(path).jobs)
        except InputError as err:
            # hcmut's jobs name profile '61' while only '1'..'6' exist: Batsim aborts too
            assert path.name.startswith("hcmut") and err.field == "profile"
    assert counts["test_batsim_paper_workload_seed1.json"] == 800
    assert counts["test_walltime.json"] == 44
