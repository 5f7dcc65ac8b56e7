"""ctypes binding of the embeddable runtime's C API (libkiln_runtime.so.1;
compiler_core/runtime/c_api/include/kiln/kiln_runtime.h): load an artifact, run it on numpy
arrays. Needs only numpy and the library, not gRPC.

The library is looked for, in order: ``$KILN_RUNTIME_LIBRARY`` (a path); next to this package
(``kiln/libkiln_runtime.so.1``, copied there by an install with ``$KILN_BUILD_DIR`` set); the
repository's ``build/lib`` when the package is used in place; ``ctypes.util.find_library``.
"""

import ctypes
import ctypes.util
import os
import threading
from pathlib import Path

import numpy as np

from kiln._errors import KilnError

ABI_VERSION = 1
MAX_RANK = 16
LIBRARY_NAME = "libkiln_runtime.so.1"

# kiln_dtype (ONNX TensorProto.DataType values) <-> numpy. bfloat16 has no numpy dtype.
_DTYPES = {
    1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32,
    7: np.int64, 9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64,
}
_DTYPE_CODES = {np.dtype(t): code for code, t in _DTYPES.items()}
_BFLOAT16 = 16


class _LoadOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("num_threads", ctypes.c_int32),
                ("device", ctypes.c_int32)]


class _TensorInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_size_t),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("min_shape", ctypes.POINTER(ctypes.c_int64)),
                ("max_shape", ctypes.POINTER(ctypes.c_int64)),
                ("max_num_bytes", ctypes.c_size_t)]


class _Tensor(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("rank", ctypes.c_size_t),
                ("data", ctypes.c_void_p), ("num_bytes", ctypes.c_size_t)]


class _Output(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("data", ctypes.c_void_p),
                ("capacity_bytes", ctypes.c_size_t), ("dtype", ctypes.c_int),
                ("rank", ctypes.c_size_t), ("shape", ctypes.c_int64 * MAX_RANK),
                ("num_bytes", ctypes.c_size_t)]


_KILN_OK = 0
_KILN_OUT_OF_RANGE = 11
_lib = None
_lib_lock = threading.Lock()


def library_candidates():
    """The paths tried for the runtime library, in order (see the module docstring)."""
    out = []
    if os.environ.get("KILN_RUNTIME_LIBRARY"):
        out.append(os.environ["KILN_RUNTIME_LIBRARY"])
    here = Path(__file__).resolve().parent
    out.append(str(here / LIBRARY_NAME))
    out.append(str(here.parents[2] / "build" / "lib" / LIBRARY_NAME))  # client/python/kiln
    found = ctypes.util.find_library("kiln_runtime")
    if found:
        out.append(found)
    return out


def _library():
    """The loaded runtime library, its ABI version checked. Raises KilnError NOT_FOUND (no
    library) or FAILED_PRECONDITION (another ABI version)."""
    global _lib
    with _lib_lock:
        if _lib is not None:
            return _lib
        tried = library_candidates()
        lib = None
        for path in tried:
            if os.sep in path and not os.path.exists(path):
                continue
            try:
                lib = ctypes.CDLL(path)
                break
            except OSError:
                continue
        if lib is None:
            raise KilnError("NOT_FOUND", f"the Kiln runtime library ({LIBRARY_NAME}) is not in "
                            f"{', '.join(tried)}: build it (cmake --build build --target "
                            "kiln_runtime_c) or set KILN_RUNTIME_LIBRARY to its path")
        _declare(lib)
        abi = lib.kiln_runtime_abi_version()
        if abi != ABI_VERSION:
            raise KilnError("FAILED_PRECONDITION", f"{lib._name} has ABI version {abi}; this "
                            f"binding needs {ABI_VERSION}")
        _lib = lib
        return lib


def native_target():
    """This machine's CPU as a target spec, "cpu:<llvm cpu name>:+f1,-f2,..." (the runtime
    library's kiln_native_target()). Raises KilnError as _library() does."""
    return _library().kiln_native_target().decode()


def _declare(lib):
    p = ctypes.POINTER
    lib.kiln_native_target.restype = ctypes.c_char_p
    lib.kiln_runtime_abi_version.restype = ctypes.c_uint32
    lib.kiln_runtime_version.restype = ctypes.c_char_p
    lib.kiln_last_error.restype = ctypes.c_char_p
    lib.kiln_model_load_file.argtypes = [ctypes.c_char_p, p(_LoadOptions), p(ctypes.c_void_p)]
    lib.kiln_model_load_memory.argtypes = [ctypes.c_void_p, ctypes.c_size_t, p(_LoadOptions),
                                           p(ctypes.c_void_p)]
    lib.kiln_model_free.argtypes = [ctypes.c_void_p]
    lib.kiln_model_free.restype = None
    for f in (lib.kiln_model_num_inputs, lib.kiln_model_num_outputs):
        f.argtypes = [ctypes.c_void_p]
        f.restype = ctypes.c_size_t
    for f in (lib.kiln_model_input, lib.kiln_model_output):
        f.argtypes = [ctypes.c_void_p, ctypes.c_size_t, p(_TensorInfo)]
    lib.kiln_model_property.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    lib.kiln_model_property.restype = ctypes.c_char_p
    lib.kiln_model_run.argtypes = [ctypes.c_void_p, p(_Tensor), ctypes.c_size_t, p(_Output),
                                   ctypes.c_size_t]
    for f in (lib.kiln_model_load_file, lib.kiln_model_load_memory, lib.kiln_model_input,
              lib.kiln_model_output, lib.kiln_model_run):
        f.restype = ctypes.c_int


def _check(lib, status):
    if status != _KILN_OK:
        raise KilnError(status, (lib.kiln_last_error() or b"").decode("utf-8", "replace"))


def runtime_version():
    """The loaded library's version string: "1.0.0 (kiln <compiler version>)"."""
    return _library().kiln_runtime_version().decode()


def numpy_dtype(code):
    """The numpy dtype of a kiln_dtype (ONNX TensorProto.DataType value); None for bfloat16 or
    an unknown value."""
    t = _DTYPES.get(code)
    return np.dtype(t) if t is not None else None


class TensorInfo:
    """An input or output of a Model.

    Attributes:
        name (str); dtype (numpy.dtype, or None for bfloat16); shape (tuple of int, row-major;
        -1 for a dim that varies between runs); min_shape, max_shape (tuples: each dim's range,
        equal to shape for a fixed dim; max_shape -1 for a symbolic dim with no upper bound);
        max_num_bytes (int: bytes of its largest instance, 0 when some dim has no bound).
    """

    def __init__(self, info):
        rank = info.rank
        self.name = info.name.decode()
        self.dtype = numpy_dtype(info.dtype)
        self._code = info.dtype
        self.shape = tuple(info.shape[i] for i in range(rank))
        self.min_shape = tuple(info.min_shape[i] for i in range(rank)) if info.min_shape else ()
        self.max_shape = tuple(info.max_shape[i] for i in range(rank)) if info.max_shape else ()
        self.max_num_bytes = info.max_num_bytes

    def __repr__(self):
        return f"TensorInfo(name={self.name!r}, dtype={self.dtype}, shape={self.shape})"


class Model:
    """A loaded artifact (kiln_model). Create with kiln.load().

    Attributes:
        inputs, outputs (lists of TensorInfo), in the artifact's order.
        graph_hash, target_key, compiler_version, model_name, options_hash (str): the
            manifest's fields.

    run() calls on one Model run one at a time (it owns one memory arena); use one Model per
    thread to run in parallel. close() frees it (also on garbage collection; a Model is a
    context manager).
    """

    def __init__(self, lib, handle):
        self._lib = lib
        self._handle = handle
        self._lock = threading.Lock()
        self.inputs = self._infos(lib.kiln_model_num_inputs, lib.kiln_model_input)
        self.outputs = self._infos(lib.kiln_model_num_outputs, lib.kiln_model_output)

    def _infos(self, count, describe):
        out = []
        for i in range(count(self._handle)):
            info = _TensorInfo()
            _check(self._lib, describe(self._handle, i, ctypes.byref(info)))
            out.append(TensorInfo(info))
        return out

    def _property(self, key):
        value = self._lib.kiln_model_property(self._live(), key.encode())
        return value.decode() if value is not None else ""

    graph_hash = property(lambda self: self._property("graph_hash"))
    target_key = property(lambda self: self._property("target"))
    compiler_version = property(lambda self: self._property("compiler_version"))
    model_name = property(lambda self: self._property("model_name"))
    options_hash = property(lambda self: self._property("options_hash"))

    def _live(self):
        if not self._handle:
            raise KilnError("FAILED_PRECONDITION", "the model was closed")
        return self._handle

    def run(self, inputs):
        """Runs the model.

        Args:
            inputs: {input name: array}; every input once. Arrays are numpy arrays of the
                input's dtype (others are converted with numpy.asarray to it), row-major:
                they are made C-contiguous (a copy only when they are not). An input declared
                as a scalar (shape ()) also takes a one-element array (shape (1,), (1, 1), ...).

        Returns {output name: numpy array} for every output, each a fresh array of the
        output's dtype and the shape this run produced.

        Raises KilnError: INVALID_ARGUMENT naming the input and what is wrong (an unknown name,
        a missing input, a dtype, shape or byte count that does not fit), UNIMPLEMENTED for a
        bfloat16 tensor, INTERNAL for a device error.
        """
        expected = {i.name: i for i in self.inputs}
        arrays, tensors = [], (_Tensor * max(len(inputs), 1))()
        for k, (name, value) in enumerate(inputs.items()):
            info = expected.get(name)
            if not isinstance(value, np.ndarray) and info is not None and info.dtype is not None:
                value = np.asarray(value, dtype=info.dtype)
            array = np.ascontiguousarray(value)
            code = _DTYPE_CODES.get(array.dtype)
            if code is None:
                raise KilnError("INVALID_ARGUMENT", f"input '{name}': numpy dtype {array.dtype} "
                                "has no Kiln dtype")
            shape = (ctypes.c_int64 * max(array.ndim, 1))(*array.shape)
            arrays.append((array, shape))
            tensors[k] = _Tensor(name.encode(), code, shape, array.ndim,
                                 array.ctypes.data_as(ctypes.c_void_p), array.nbytes)
        for info in self.outputs:
            if info.dtype is None:
                raise KilnError("UNIMPLEMENTED", f"output '{info.name}' is bfloat16, which numpy "
                                "has no dtype for")
        with self._lock:
            handle = self._live()
            # Output buffers live across calls: an output without an upper bound (symbolic
            # dims) grows to twice what a call asked for, so a growing cache reruns O(log n)
            # calls, not every one.
            buffers = getattr(self, "_out_buffers", None)
            if buffers is None:
                buffers = [np.empty(max(info.max_num_bytes, 1), dtype=np.uint8)
                           for info in self.outputs]
            for _ in range(2):  # a second try only with the sizes an OUT_OF_RANGE asked for
                outs = (_Output * max(len(buffers), 1))()
                for o, (info, buf) in enumerate(zip(self.outputs, buffers)):
                    outs[o].name = info.name.encode()
                    outs[o].data = buf.ctypes.data
                    outs[o].capacity_bytes = buf.nbytes
                status = self._lib.kiln_model_run(handle, tensors, len(inputs), outs,
                                                  len(buffers))
                if status != _KILN_OUT_OF_RANGE:
                    break
                buffers = [b if o.num_bytes <= b.nbytes else np.empty(2 * o.num_bytes, np.uint8)
                           for o, b in zip(outs, buffers)]
            self._out_buffers = buffers
            _check(self._lib, status)
        result = {}
        for info, buf, out in zip(self.outputs, buffers, outs):
            dtype = numpy_dtype(out.dtype) or info.dtype
            shape = tuple(out.shape[d] for d in range(out.rank))
            result[info.name] = buf[:out.num_bytes].view(dtype).reshape(shape).copy()
        return result

    def close(self):
        """Frees the model (kiln_model_free); later calls raise KilnError."""
        handle, self._handle = self._handle, None
        if handle:
            self._lib.kiln_model_free(handle)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        return f"<kiln.Model inputs={self.inputs} outputs={self.outputs}>"


def load(artifact, num_threads=0):
    """Loads a compiled artifact into the runtime.

    Args:
        artifact: the path (str or os.PathLike) of a .kiln file, its bytes, or a
            kiln.Artifact (from Client.compile).
        num_threads: threads of the model's pool; <= 0: the number of online cores.

    Returns a Model. Raises KilnError with the runtime's code and message: NOT_FOUND (an
    unreadable file), INVALID_ARGUMENT (not an artifact, a checksum mismatch, a bad manifest),
    FAILED_PRECONDITION (CPU features this host lacks, another ABI), or NOT_FOUND when the
    runtime library itself cannot be found.
    """
    lib = _library()
    options = _LoadOptions(ctypes.sizeof(_LoadOptions), num_threads, 0)
    handle = ctypes.c_void_p()
    data = getattr(artifact, "data", artifact)
    if isinstance(data, (bytes, bytearray, memoryview)):
        data = bytes(data)
        status = lib.kiln_model_load_memory(data, len(data), ctypes.byref(options),
                                            ctypes.byref(handle))
    else:
        status = lib.kiln_model_load_file(os.fsencode(os.fspath(data)), ctypes.byref(options),
                                          ctypes.byref(handle))
    _check(lib, status)
    return Model(lib, handle.value)
