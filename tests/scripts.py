"""The scripts under scripts/ as modules, for the tests that call their functions (scripts/ is not a package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def load_script(name: str) -> ModuleType:
    """Load ``scripts/<name>.py`` as the module ``name`` (registered in ``sys.modules``: dataclasses look their
    module up by name).

    Raises:
        FileNotFoundError: if the script does not exist.
    """
    path = SCRIPTS / f"{name}.py"
    if not path.is_file():
        raise FileNotFoundError(path)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
