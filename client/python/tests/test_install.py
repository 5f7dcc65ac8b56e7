"""The package installs offline into a venv (Debian's setuptools as the build backend, the
system's grpcio, protobuf and numpy), with the stubs generated at build time and the runtime
library copied in from KILN_BUILD_DIR."""

import shutil
import subprocess
import venv

import pytest

import kiln
from helpers import REPO, bin_dir


def test_venv_install(tmp_path):
    # pip builds in the source tree (build/, kiln.egg-info): build a copy, with proto/ beside it
    # as in the repository.
    source = tmp_path / "src"
    shutil.copytree(REPO / "client" / "python", source / "client" / "python",
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__",
                                                  "*_pb2.py", "*_pb2_grpc.py", "*.so*"))
    shutil.copytree(REPO / "proto", source / "proto")
    env_dir = tmp_path / "venv"
    try:
        venv.create(env_dir, system_site_packages=True, with_pip=True)
    except subprocess.CalledProcessError as e:
        pytest.fail(f"python3 -m venv failed (apt-get install python3-venv): {e}")
    python = env_dir / "bin" / "python"
    library = bin_dir().parent / "lib" / "libkiln_runtime.so.1"
    build_env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PIP_NO_INDEX": "1",
                 "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    if library.is_file():
        build_env["KILN_BUILD_DIR"] = str(library.parent.parent)
    pip = subprocess.run([python, "-m", "pip", "install", "--no-build-isolation",
                          str(source / "client" / "python")],
                         env=build_env, capture_output=True, text=True, cwd=tmp_path)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    check = """
import kiln, kiln.v1, sys
from kiln.v1 import artifact_pb2, service_pb2, service_pb2_grpc, tuning_pb2
assert kiln.__file__.startswith(sys.prefix), kiln.__file__
assert kiln.v1.__path__ == [kiln.v1.__path__[0]], kiln.v1.__path__  # no cache dir needed
assert service_pb2_grpc.KilnServiceStub and kiln.Client
print(kiln.__version__)
"""
    if library.is_file():
        check += "print(kiln.runtime_version())\n"
    # Outside the repository, without the proto dir or the runtime library's usual places.
    run = subprocess.run([python, "-c", check], capture_output=True, text=True, cwd=tmp_path,
                         env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
                              "KILN_PROTO_DIR": str(tmp_path / "nowhere")})
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.split()
    assert lines[0] == kiln.__version__
    if library.is_file():
        assert lines[1].startswith("1.")
