"""Generates the Python protobuf and gRPC stubs of proto/kiln/v1/*.proto.

The stubs are never committed. They are made by ``protoc --python_out --grpc_python_out`` with
Debian's ``grpc_python_plugin``:

* at build time, by setup.py's ``build_py`` (an installed package holds them in ``kiln/v1/``);
* in place (``PYTHONPATH=client/python``), on the first ``import kiln.v1``, into a cache
  directory keyed by the protos' contents (see :func:`ensure_cached`);
* by hand: ``python3 client/python/kiln/_protogen.py OUT_DIR`` writes ``OUT_DIR/kiln/v1/``.

This module imports only the standard library, so that setup.py can load it by path.
"""

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

PROTO_FILES = ("kiln/v1/artifact.proto", "kiln/v1/tuning.proto", "kiln/v1/service.proto")
GENERATED = ("artifact_pb2", "tuning_pb2", "service_pb2", "service_pb2_grpc")


def find_proto_root():
    """The directory holding ``kiln/v1/*.proto``: ``$KILN_PROTO_DIR``, else the repository's
    ``proto/`` (two levels above ``client/python``). Raises FileNotFoundError naming both."""
    candidates = []
    if os.environ.get("KILN_PROTO_DIR"):
        candidates.append(Path(os.environ["KILN_PROTO_DIR"]))
    candidates.append(Path(__file__).resolve().parents[3] / "proto")
    for root in candidates:
        if all((root / p).is_file() for p in PROTO_FILES):
            return root
    raise FileNotFoundError(
        "cannot find kiln/v1/*.proto in " + " or ".join(str(c) for c in candidates)
        + " (set KILN_PROTO_DIR to the repository's proto/ directory)")


def _tool(env, name, fallback):
    path = os.environ.get(env) or shutil.which(name) or fallback
    if not Path(path).is_file():
        raise FileNotFoundError(
            f"{name} not found (set {env}, or apt-get install protobuf-compiler "
            "protobuf-compiler-grpc)")
    return path


def generate(proto_root, out_dir):
    """Runs protoc on PROTO_FILES under ``proto_root``, writing ``out_dir/kiln/v1/*_pb2*.py``.

    ``$KILN_PROTOC`` and ``$KILN_GRPC_PYTHON_PLUGIN`` override the tools found on PATH.
    Raises FileNotFoundError (a missing tool) or RuntimeError (protoc failed, with its stderr).
    """
    protoc = _tool("KILN_PROTOC", "protoc", "/usr/bin/protoc")
    plugin = _tool("KILN_GRPC_PYTHON_PLUGIN", "grpc_python_plugin", "/usr/bin/grpc_python_plugin")
    out_dir = Path(out_dir).resolve()
    (out_dir / "kiln" / "v1").mkdir(parents=True, exist_ok=True)
    cmd = [protoc, f"--plugin=protoc-gen-grpc_python={plugin}", f"-I{proto_root}",
           f"--python_out={out_dir}", f"--grpc_python_out={out_dir}", *PROTO_FILES]
    result = subprocess.run(cmd, cwd=proto_root, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"protoc failed ({' '.join(cmd)}):\n{result.stderr}")


def _cache_base():
    if os.environ.get("KILN_STUB_CACHE"):
        return Path(os.environ["KILN_STUB_CACHE"])
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(xdg) / "kiln" / "python-stubs"


def ensure_cached(proto_root=None):
    """The directory ``D`` such that ``D/kiln/v1/`` holds the generated stubs, made if needed.

    ``D`` is ``<cache>/<key>``: ``<cache>`` is ``$KILN_STUB_CACHE``, else
    ``$XDG_CACHE_HOME/kiln/python-stubs`` (``~/.cache/...``), falling back to a per-user
    directory under the system temp dir when that is not writable; ``<key>`` is a SHA-256 over
    the protos and the protobuf runtime's version, so an edited proto gets fresh stubs. Made in
    a temp directory and renamed into place, so concurrent first imports are safe.
    """
    root = Path(proto_root) if proto_root else find_proto_root()
    digest = hashlib.sha256()
    try:
        from google.protobuf import __version__ as protobuf_version
    except ImportError:  # protobuf missing: the stubs' import fails later with a clear error
        protobuf_version = "none"
    digest.update(protobuf_version.encode())
    for name in PROTO_FILES:
        digest.update(name.encode() + b"\0" + (root / name).read_bytes() + b"\0")
    key = digest.hexdigest()[:24]
    bases = [_cache_base(), Path(tempfile.gettempdir()) / f"kiln-python-stubs-{os.getuid()}"]
    last_error = None
    for base in bases:
        final = base / key
        if all((final / "kiln" / "v1" / f"{m}.py").is_file() for m in GENERATED):
            return final
        try:
            base.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=base))
        except OSError as e:
            last_error = e
            continue
        try:
            generate(root, tmp)
            try:
                os.rename(tmp, final)
            except OSError:
                if not (final / "kiln" / "v1" / "service_pb2.py").is_file():
                    raise  # not a lost race with another process: a real failure
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return final
    raise OSError(f"no writable cache directory for the generated stubs: {last_error}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python3 _protogen.py OUT_DIR   (writes OUT_DIR/kiln/v1/*_pb2*.py)")
    generate(find_proto_root(), sys.argv[1])
    print(f"wrote {Path(sys.argv[1]) / 'kiln' / 'v1'}")
