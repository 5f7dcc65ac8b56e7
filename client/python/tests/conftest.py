"""Fixtures of the kiln package's tests: a kilnd process and its client.

Run from the repository root (scripts/test runs them through ctest):
    python3 -m pytest -q client/python/tests
with KILN_BIN_DIR naming the binaries (default: build/bin).
"""

import os
import tempfile

import pytest

# The stubs are generated afresh for the session (the in-place path of kiln.v1), not taken from
# the user's cache: set before anything imports kiln.
_STUB_CACHE = tempfile.TemporaryDirectory(prefix="kiln-stub-cache-")
os.environ["KILN_STUB_CACHE"] = _STUB_CACHE.name

import kiln  # noqa: E402
from helpers import Kilnd, need_binaries  # noqa: E402


@pytest.fixture(scope="session")
def kilnd(tmp_path_factory):
    """A kilnd with one local compile worker, for the whole session."""
    need_binaries()
    server = Kilnd(tmp_path_factory.mktemp("kilnd"))
    try:
        with kiln.Client(server.address) as client:
            server.wait_ready(client, workers=1)
        yield server
    finally:
        status = server.stop()
        assert status == 0, f"kilnd exited with {status}:\n{server.log()}"


@pytest.fixture
def client(kilnd):
    """A kiln.Client of the session's kilnd."""
    with kiln.Client(kilnd.address) as c:
        yield c
