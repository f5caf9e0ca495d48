"""Package layout for setuptools (everything else is in pyproject.toml).

The repository keeps ``kernels/`` and ``eval/`` as top-level folders, but they install as ``latechunk.kernels``
and ``latechunk.eval``: the wheel puts no generic top-level name (``kernels`` is Hugging Face's package, which
transformers uses; ``eval`` is a builtin) into site-packages. ``find_packages`` runs at build time, so a new
subpackage of ``latechunk/``, ``kernels/`` or ``eval/`` needs no edit here; ``tests/test_packaging.py`` checks
the built wheel.
"""

from setuptools import find_packages, setup

MAPPED = {"latechunk.kernels": "kernels", "latechunk.eval": "eval"}
"""Installed package name -> repository folder."""

packages = find_packages(include=["latechunk", "latechunk.*"])
for name, folder in MAPPED.items():
    packages += [name] + [f"{name}.{sub}" for sub in find_packages(folder)]

setup(packages=packages, package_dir=MAPPED)
