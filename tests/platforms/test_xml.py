"""Platform XML: bad files give one InputError naming file, line and attribute.

The reading of good platforms (Batsim's numbering, roles, clusters, cabinets, pstates)
is checked against every recorded transcript's SIMULATION_BEGINS in tests/sim.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from batpolicy.errors import InputError
from batpolicy.platforms.xml import read_platform

HEAD = '<?xml version="1.0"?>\n<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'


def _platform(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "p.xml"
    path.write_text(HEAD + '<platform version="4.1">\n<zone id="z" routing="Full">\n' + body
                    + '\n</zone>\n</platform>\n')
    return path


@pytest.mark.parametrize(("body", "line", "field", "needle"), [
    ('<host id="h0" speed="1Gf"/>\n<host id="h1" speed="1Gf">', 7, None, "not well-formed"),
    ('<host id="h0" speed="1Gf"/>\n<host id="h1"/>', 6, "speed", "missing attribute"),
    ('<host speed="1Gf"/>', 5, "id", "missing attribute"),
    ('<host id="h0" speed="-1Gf"/>', 5, "speed", "not a SimGrid speed"),
    ('<host id="h0" speed="nan"/>', 5, "speed", "not a SimGrid speed"),
    ('<host id="h0" speed="1Gf,2Gf" pstate="5"/>', 5, "speed", "pstate 5"),
    ('<cluster id="c" prefix="h" suffix="" radical="3-1" speed="1Gf" bw="1GBps" lat="0"/>',
     5, "radical", "ranges"),
    ('<link id="l" bandwidth="fast"/>', 5, "bandwidth/latency", "fast"),
    ('<host id="h0" speed="1Gf"/>\n<host id="h0" speed="2Gf"/>', 6, "id", "two hosts"),
    ('<host id="h0" speed="1Gf"/>\n<host id="h1" speed="0Gf"/>', 6, "speed",
     "host 'h1' computes at 0 flop/s: a compute host's speed must be positive"),
    ('<cluster id="c" prefix="c_" suffix="" radical="0-1" speed="2Gf,0f" pstate="1" bw="1GBps" '
     'lat="0"/>', 5, "speed", "host 'c_0' computes at 0 flop/s"),
])
def test_bad_platform_names_file_line_and_field(tmp_path: Path, body: str, line: int,
                                                field: str | None, needle: str) -> None:
    path = _platform(tmp_path, body)
    with pytest.raises(InputError) as err:
        read_platform(path)
    assert (err.value.path, err.value.line, err.value.field) == (str(path), line, field)
    assert f"{path}:{line}" in str(err.value) and needle in str(err.value)
    assert "\n" not in str(err.value)


def test_no_compute_host_missing_file_and_not_a_platform(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no compute host"):
        read_platform(_platform(tmp_path, '<host id="master_host" speed="1Gf"/>'))
    with pytest.raises(InputError, match="cannot read"):
        read_platform(tmp_path / "none.xml")
    other = tmp_path / "o.xml"
    other.write_text("<html></html>")
    with pytest.raises(InputError, match="no <platform>"):
        read_platform(other)


def test_duplicated_hosts_between_a_cluster_and_a_host(tmp_path: Path) -> None:
    path = _platform(tmp_path, '<cluster id="c" prefix="h" suffix="" radical="0-3" speed="1Gf" '
                     'bw="1GBps" lat="0"/>\n<host id="h2" speed="1Gf"/>')
    with pytest.raises(InputError, match="two hosts are named 'h2'") as err:
        read_platform(path)
    assert err.value.line == 6
