"""Package layout: the top-level folders are the architecture, installed as ``batpolicy.*``.

``protocol/``, ``scheduler/``, ``policies/`` and ``platforms/`` (and every package below
them) install as ``batpolicy.protocol`` ... ; metadata and dependencies are in
pyproject.toml. Sub-packages are found, not listed, so adding one touches no list.
"""

from setuptools import find_packages, setup

TOP = ("protocol", "scheduler", "policies", "platforms")

setup(
    packages=["batpolicy"] + [f"batpolicy.{name}" for name in find_packages(
        include=[*TOP, *(f"{top}.*" for top in TOP)])],
    package_dir={"batpolicy": "batpolicy", **{f"batpolicy.{top}": top for top in TOP}},
)
