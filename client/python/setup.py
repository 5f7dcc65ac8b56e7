"""Builds the kiln package; the metadata is in pyproject.toml.

build_py also generates the gRPC stubs (kiln/v1/*_pb2*.py) from the repository's
proto/kiln/v1/*.proto (or $KILN_PROTO_DIR) with protoc and grpc_python_plugin, and, when
$KILN_BUILD_DIR names a CMake build directory holding lib/libkiln_runtime.so.1, copies that
library into the package (kiln.load finds it there).
"""

import importlib.util
import os
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def _protogen():
    spec = importlib.util.spec_from_file_location("kiln_protogen", HERE / "kiln" / "_protogen.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BuildPyWithStubs(build_py):
    """build_py, then the generated stubs (and the runtime library) into build_lib."""

    def run(self):
        super().run()
        protogen = _protogen()
        protogen.generate(protogen.find_proto_root(), self.build_lib)
        build_dir = os.environ.get("KILN_BUILD_DIR")
        if build_dir:
            lib = Path(build_dir) / "lib" / "libkiln_runtime.so.1"
            if not lib.is_file():
                raise FileNotFoundError(f"KILN_BUILD_DIR is set but {lib} does not exist "
                                        "(cmake --build build --target kiln_runtime_c)")
            shutil.copy2(lib, Path(self.build_lib) / "kiln" / lib.name)


def _version():
    namespace = {}
    exec((HERE / "kiln" / "_version.py").read_text(), namespace)
    return namespace["__version__"]


setup(version=_version(), packages=["kiln", "kiln.v1"], cmdclass={"build_py": BuildPyWithStubs})
