"""The generated protobuf and gRPC stubs of proto/kiln/v1 (``artifact_pb2``, ``tuning_pb2``,
``service_pb2``, ``service_pb2_grpc``).

An installed package has them here (setup.py's build_py generates them). Used in place, they are
generated on first import into a cache directory (kiln._protogen.ensure_cached), which is
appended to this package's ``__path__`` so that ``kiln.v1.service_pb2`` and the stubs' own
``from kiln.v1 import ...`` imports find them. Raises ImportError when they can be neither found
nor generated (no protoc, no proto/ directory).
"""

from pathlib import Path as _Path

if not (_Path(__file__).parent / "service_pb2.py").is_file():
    from kiln import _protogen

    try:
        __path__.append(str(_protogen.ensure_cached() / "kiln" / "v1"))
    except (OSError, RuntimeError) as _e:
        raise ImportError(f"kiln: cannot generate the gRPC stubs: {_e}") from _e
