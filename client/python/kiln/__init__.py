"""Kiln's Python package: a client of the kilnd compile service and a binding of the runtime.

    import kiln
    client = kiln.Client("localhost:7878")            # or $KILN_SERVER, $KILN_TOKEN
    artifact = client.compile("model.onnx")            # target "host": the worker's CPU
    artifact.save("model.kiln")
    model = kiln.load(artifact)                        # or a path, or bytes
    outputs = model.run({"data": x})                   # {name: numpy array}

The client (kiln.Client, kiln.Artifact, kiln.JobEvent) needs grpcio and protobuf and is imported
on first use; the runtime binding (kiln.load, kiln.Model) needs only numpy and
libkiln_runtime.so.1. Every error is a kiln.KilnError.
"""

from kiln._errors import KilnError
from kiln._version import __version__
from kiln.runtime import Model, TensorInfo, load, runtime_version

__all__ = ["Artifact", "Client", "JobEvent", "JobWatch", "KilnError", "Model", "TensorInfo",
           "__version__", "load", "runtime_version"]

_CLIENT_NAMES = ("Artifact", "Client", "JobEvent", "JobWatch")


def __getattr__(name):
    if name in _CLIENT_NAMES:
        from kiln import client

        return getattr(client, name)
    raise AttributeError(f"module 'kiln' has no attribute '{name}'")
