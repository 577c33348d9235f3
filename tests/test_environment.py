"""mla_cupy.environment: the one list of variables, read as os.environ.get would."""
import os
import re
import pathlib

import pytest

from mla_cupy import environment

NAMES = [getattr(environment, n) for n in dir(environment) if n.isupper() and not n.startswith("_")
         and isinstance(getattr(environment, n), str)]


@pytest.mark.parametrize("name", NAMES)
def test_get_follows_os_environ_through_set_change_and_delete(monkeypatch, name):
    monkeypatch.delenv(name, raising=False)
    assert environment.get(name) is None
    monkeypatch.setenv(name, "a")
    assert environment.get(name) == "a" == os.environ.get(name)
    os.environ[name] = "b é"          # non-ASCII survives the encode/decode
    assert environment.get(name) == "b é"
    del os.environ[name]
    assert environment.get(name) is None


def test_every_variable_the_package_reads_is_listed_there():
    """No module reads an MLA_CUPY_* variable by its literal name except through
    environment.py (one list: docs and the memo keys depend on it)."""
    pkg = pathlib.Path(environment.__file__).parent
    listed = set(NAMES)
    for path in pkg.glob("*.py"):
        if path.name == "environment.py":
            continue
        for m in re.finditer(r"os\.environ(?:\.get)?\(?\[?[\"'](MLA_CUPY_\w+)", path.read_text()):
            raise AssertionError(f"{path.name} reads {m.group(1)} directly")
        for name in re.findall(r"[\"'](MLA_CUPY_\w+)[\"']", path.read_text()):
            assert name in listed, f"{path.name} names {name}, which environment.py does not list"
