"""A client of kilnd's KilnService, following the C++ client's protocol (client/remote.cc).

Compiling a model: FindMissingBlobs (is the model on the server?) → UploadModel in chunks of at
most 1 MiB if it is not → Compile → FetchArtifact, whose bytes are checked against the
artifact's SHA-256 digest as they arrive, then parsed (header, checksum, manifest) and checked
to name the key the server answered with.
"""

import hashlib
import os
import struct
import tempfile
from pathlib import Path

import grpc

from kiln._errors import CODE_NAMES, KilnError
from kiln.v1 import artifact_pb2, service_pb2, service_pb2_grpc

CHUNK_BYTES = 1 << 20  # at most 1 MiB of data per message, as the C++ client sends
DEFAULT_TIMEOUT_S = 600.0
_TERMINAL = {"SUCCEEDED", "FAILED", "CANCELLED"}


def digest_of(data):
    """The kiln.v1.Digest of ``data`` (bytes): lowercase hex SHA-256 and size in bytes."""
    return service_pb2.Digest(hash=hashlib.sha256(data).hexdigest(), size_bytes=len(data))


def read_model(model):
    """The bytes of ``model`` as they are uploaded.

    ``model`` is the bytes of a serialized onnx.ModelProto or the path (str or os.PathLike) of
    a .onnx file. As the C++ client does (ReadModelForUpload), tensors stored as external data
    (files relative to the model's directory; the working directory for bytes) are inlined,
    since kilnd refuses models with external data; other models are sent unchanged. This needs
    the ``onnx`` package (python3-onnx); without it, models are sent unchanged.

    Raises KilnError NOT_FOUND ("cannot read 'PATH'") for an unreadable file, INVALID_ARGUMENT
    for bytes that are not a serialized onnx.ModelProto (only checked with ``onnx``).
    """
    if isinstance(model, (bytes, bytearray, memoryview)):
        data, base_dir = bytes(model), "."
    else:
        path = os.fspath(model)
        try:
            data = Path(path).read_bytes()
        except OSError as e:
            raise KilnError("NOT_FOUND", f"cannot read '{path}': {e.strerror}") from None
        base_dir = os.path.dirname(path) or "."
    try:
        import onnx
        from onnx import external_data_helper
    except ImportError:
        return data
    proto = onnx.ModelProto()
    try:
        proto.ParseFromString(data)
    except Exception:  # protobuf's DecodeError, or a RuntimeWarning turned error
        raise KilnError("INVALID_ARGUMENT", "not a serialized onnx.ModelProto") from None
    tensors = list(proto.graph.initializer)
    tensors += [a.t for node in proto.graph.node for a in node.attribute if a.HasField("t")]
    if not any(t.data_location == onnx.TensorProto.EXTERNAL for t in tensors):
        return data
    external_data_helper.load_external_data_for_model(proto, base_dir)
    return proto.SerializeToString()


def input_shapes_proto(input_shapes):
    """kiln.v1.InputShape messages for ``input_shapes`` (as ``kiln compile --input-shape``).

    ``input_shapes`` is a dict ``{input name: dims}`` (one shape profile) or a list of such
    dicts (several profiles: the artifact runs each). A dim is an int >= 1, or a ``(min, max)``
    pair for a bounded dim (one profile only). Entries are written profile by profile, each in
    name order (the C++ client's importer::GivenShapes). Raises KilnError INVALID_ARGUMENT.
    """
    if not input_shapes:
        return []
    profiles = [input_shapes] if isinstance(input_shapes, dict) else list(input_shapes)
    out = []
    for profile in profiles:
        for name in sorted(profile):
            dims, mins = [], []
            for d in profile[name]:
                lo, hi = (d, d) if isinstance(d, int) else tuple(d)
                if not (isinstance(lo, int) and isinstance(hi, int) and 1 <= lo <= hi):
                    raise KilnError("INVALID_ARGUMENT",
                                    f"input_shapes['{name}']: dim {d!r} is not an int >= 1 or "
                                    "a (min, max) pair with 1 <= min <= max")
                dims.append(hi)
                mins.append(lo)
            bounded = mins != dims
            if bounded and len(profiles) > 1:
                raise KilnError("INVALID_ARGUMENT", "input_shapes: bounded dims (min, max) and "
                                "several shape profiles cannot be combined")
            out.append(service_pb2.InputShape(name=name, dims=dims,
                                              min_dims=mins if bounded else []))
    return out


def constant_inputs_proto(constant_inputs):
    """kiln.v1.ConstantInput messages for ``{name: TensorProto bytes or numpy array}``, in name
    order (as ``kiln compile --constant-input NAME=FILE.pb``)."""
    out = []
    for name in sorted(constant_inputs or {}):
        tensor = constant_inputs[name]
        if not isinstance(tensor, (bytes, bytearray)):
            from onnx import numpy_helper

            tensor = numpy_helper.from_array(tensor, name).SerializeToString()
        out.append(service_pb2.ConstantInput(name=name, tensor=bytes(tensor)))
    return out


def wire_target(target):
    """The target spec sent to kilnd: ``target`` as given, except "native" (this machine's
    CPU, which only the client knows), sent as "cpu:<name>:<features>" from the runtime
    library's kiln_native_target(), as ``kiln --target native`` does. Raises KilnError
    NOT_FOUND if "native" is asked for and the runtime library cannot be loaded."""
    if target != "native":
        return target
    from kiln import runtime

    return runtime.native_target()


def message_to_dict(message):
    """A protobuf message as a plain dict: every field by its proto name, enums by name, int64
    as int, nested messages as dicts (None when unset), repeated fields as lists."""
    out = {}
    for field in message.DESCRIPTOR.fields:
        value = getattr(message, field.name)
        repeated = field.label == field.LABEL_REPEATED
        if field.type == field.TYPE_MESSAGE:
            if repeated:
                value = [message_to_dict(v) for v in value]
            elif message.HasField(field.name):
                value = message_to_dict(value)
            else:
                value = None
        elif field.type == field.TYPE_ENUM:
            name = field.enum_type.values_by_number
            value = ([name[v].name if v in name else v for v in value] if repeated
                     else (name[value].name if value in name else value))
        elif repeated:
            value = list(value)
        out[field.name] = value
    return out


def parse_artifact(data):
    """Parses and verifies artifact bytes as the runtime does (runtime/artifact.h): magic
    "KILNART\\0", format version 1, section sizes, the SHA-256 of the payload; returns the
    kiln.v1.Manifest. Raises KilnError INVALID_ARGUMENT naming what is wrong."""
    header = 72
    if len(data) < header:
        raise KilnError("INVALID_ARGUMENT", f"artifact is too short: {len(data)} bytes, "
                        f"the header alone is {header}")
    magic, version, reserved, m, c, w = struct.unpack_from("<8sIIQQQ", data, 0)
    if magic != b"KILNART\0":
        raise KilnError("INVALID_ARGUMENT", "artifact has bad magic: not a kiln artifact file")
    if version != 1 or reserved != 0:
        raise KilnError("INVALID_ARGUMENT", f"unsupported artifact format version {version} "
                        f"(reserved {reserved}): this client reads version 1")
    if header + m + c + w != len(data):
        raise KilnError("INVALID_ARGUMENT", f"artifact sizes disagree: header says "
                        f"{header + m + c + w} bytes, file has {len(data)}")
    if hashlib.sha256(memoryview(data)[header:]).digest() != data[40:72]:
        raise KilnError("INVALID_ARGUMENT", "artifact checksum mismatch: file is corrupted")
    manifest = artifact_pb2.Manifest()
    try:
        manifest.ParseFromString(data[header:header + m])
    except Exception:
        raise KilnError("INVALID_ARGUMENT", f"artifact manifest ({m} bytes) does not parse as "
                        "kiln.v1.Manifest") from None
    return manifest


class Artifact:
    """A compiled artifact fetched from kilnd, digest-verified.

    Attributes:
        graph_hash, target_key, compiler_version, options_hash (str): the artifact cache key
            the server answered with.
        cache_hit (bool): the server had it compiled already.
        data (bytes): the artifact file's bytes (load them with kiln.load, or save()).
        digest (str): their SHA-256, lowercase hex.
        compile_ms (float): the compile that produced it (from the cache on a hit), ms.
        server_ms (float): the time the Compile call spent in kilnd, ms.
        job_id, worker (str): the job and worker that compiled it; empty on a cache hit.
        uploaded (bool): the model was sent (the server did not have it).
        manifest (kiln.v1.artifact_pb2.Manifest): the parsed manifest (inputs, outputs, ...).
    """

    def __init__(self, response, data, manifest, uploaded):
        key = response.key
        self.graph_hash = key.graph_hash
        self.target_key = key.target_key
        self.compiler_version = key.compiler_version
        self.options_hash = key.options_hash
        self.cache_hit = response.cache_hit
        self.data = data
        self.digest = response.artifact_digest.hash
        self.compile_ms = response.compile_ms
        self.server_ms = response.server_ms
        self.job_id = response.job_id
        self.worker = response.worker
        self.uploaded = uploaded
        self.manifest = manifest

    @property
    def size(self):
        """The artifact's size in bytes."""
        return len(self.data)

    def __len__(self):
        return len(self.data)

    def __repr__(self):
        return (f"<kiln.Artifact {self.size} bytes graph {self.graph_hash[:16]} target "
                f"{self.target_key.split(':')[1] if ':' in self.target_key else self.target_key}"
                f" cache_hit={self.cache_hit}>")

    def save(self, path):
        """Writes the artifact to ``path`` atomically: a temp file in the same directory,
        fsync, rename (mode 0644). Raises OSError."""
        path = os.fspath(path)
        directory = os.path.dirname(path) or "."
        fd, tmp = tempfile.mkstemp(prefix=f".tmp-{os.path.basename(path)}-", dir=directory)
        try:
            with os.fdopen(fd, "wb") as f:
                os.fchmod(f.fileno(), 0o644)
                f.write(self.data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise


class JobEvent:
    """One progress event of a job (kiln.v1.JobEvent).

    Attributes:
        job_id (str), state (str: "QUEUED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"),
        message (str), time_ms (int, Unix time in ms),
        error_code (str: a status code name, "OK" unless FAILED), error_message (str),
        result (dict or None): a compile job's CompileResponse, with SUCCEEDED,
        tune_progress (dict or None): a tune job's TuneProgress after each measured round
            (hardware_key, round, trials, trial_budget, workloads: [{workload_key, fused_ops,
            weight, flops, default_ms, best_ms, trials, stopped}], estimated_ms,
            default_estimated_ms, elapsed_s, records_written),
        tune_result (dict or None): a tune job's TuneResult, with SUCCEEDED,
        raw: the kiln.v1.JobEvent message.
    """

    def __init__(self, event):
        d = message_to_dict(event)
        self.job_id = event.job_id
        self.state = d["state"]
        self.message = event.message
        self.time_ms = event.time_ms
        self.error_code = CODE_NAMES.get(event.error_code, "UNKNOWN")
        self.error_message = event.error_message
        self.result = d["result"]
        self.tune_progress = d["tune_progress"]
        self.tune_result = d["tune_result"]
        self.raw = event

    @property
    def terminal(self):
        """The job has ended (SUCCEEDED, FAILED or CANCELLED)."""
        return self.state in _TERMINAL

    def __repr__(self):
        return f"<kiln.JobEvent {self.job_id} {self.state} {self.message!r}>"


class JobWatch:
    """The events of one job, as an iterator of JobEvent (WatchJob), ending after the event of
    a terminal state. No deadline (a tune may run for hours).

    Attributes: job_id (str); last (the last JobEvent seen, or None).
    Iterating raises KilnError: the server's (NOT_FOUND for an unknown job), or UNAVAILABLE
    when the stream ends before the job does (kilnd restarting). close() stops watching (the
    job goes on; Client.cancel stops it).
    """

    def __init__(self, client, job_id):
        self.job_id = job_id
        self.last = None
        self._call = client._stub.WatchJob(service_pb2.WatchJobRequest(job_id=job_id),
                                           metadata=client._metadata)
        self._closed = False

    def __iter__(self):
        return self

    def __next__(self):
        if self._closed:
            raise StopIteration
        try:
            event = next(self._call)
        except StopIteration:
            self._closed = True
            if self.last is None or not self.last.terminal:
                raise KilnError("UNAVAILABLE", f"WatchJob: the stream of job {self.job_id} "
                                "ended before the job did (kilnd restarting?)") from None
            raise
        except grpc.RpcError as e:
            self._closed = True
            raise _from_rpc("WatchJob", e) from None
        self.last = JobEvent(event)
        return self.last

    def close(self):
        """Stops watching (cancels the stream, not the job)."""
        self._closed = True
        self._call.cancel()


def _from_rpc(rpc, error):
    code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
    details = error.details() if hasattr(error, "details") else str(error)
    return KilnError(code.name, f"{rpc}: {details}")


class Client:
    """A connection to one kilnd (thread-safe, as gRPC channels are).

    Args:
        addr: "HOST:PORT"; None reads $KILN_SERVER.
        token: the bearer token every call carries (sent as ``authorization: Bearer <token>``
            metadata, as the C++ client does); None reads $KILN_TOKEN (surrounding whitespace
            stripped); empty: none.
        tls_ca: TLS with this CA: the path of a PEM file, or the PEM bytes; None: plaintext.
        tls_server_name: the name to verify the server's certificate against instead of HOST.
        timeout: the deadline of each call in seconds (600), except WatchJob's (none).

    Does not contact the server. Raises KilnError INVALID_ARGUMENT without an address,
    NOT_FOUND for an unreadable tls_ca file.
    """

    def __init__(self, addr=None, token=None, tls_ca=None, tls_server_name=None,
                 timeout=DEFAULT_TIMEOUT_S):
        addr = addr or os.environ.get("KILN_SERVER")
        if not addr:
            raise KilnError("INVALID_ARGUMENT", "no server address: pass addr='HOST:PORT' or "
                            "set KILN_SERVER")
        if token is None:
            token = os.environ.get("KILN_TOKEN", "")
        token = token.strip()
        self.addr = addr
        self.timeout = timeout
        self._metadata = (("authorization", f"Bearer {token}"),) if token else ()
        # Each client gets its own connection, as in the C++ client.
        options = [("grpc.max_receive_message_length", 8 << 20),
                   ("grpc.use_local_subchannel_pool", 1)]
        if tls_ca is None:
            self._channel = grpc.insecure_channel(addr, options=options)
        else:
            if isinstance(tls_ca, (bytes, bytearray)):
                pem = bytes(tls_ca)
            else:
                try:
                    pem = Path(tls_ca).read_bytes()
                except OSError as e:
                    raise KilnError("NOT_FOUND", f"tls_ca: cannot read '{tls_ca}': "
                                    f"{e.strerror}") from None
            if tls_server_name:
                options.append(("grpc.ssl_target_name_override", tls_server_name))
            credentials = grpc.ssl_channel_credentials(root_certificates=pem)
            self._channel = grpc.secure_channel(addr, credentials, options=options)
        self._stub = service_pb2_grpc.KilnServiceStub(self._channel)

    def close(self):
        """Closes the connection."""
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _call(self, rpc, request, timeout=None):
        try:
            return getattr(self._stub, rpc)(request, metadata=self._metadata,
                                            timeout=timeout or self.timeout)
        except grpc.RpcError as e:
            raise _from_rpc(rpc, e) from None

    # ---- the steps of a compile, as in client/remote.cc ----

    def ensure_model(self, data, digest=None, timeout=None):
        """Uploads model bytes ``data`` unless the server has them (FindMissingBlobs, then
        UploadModel in chunks of at most 1 MiB, the first carrying the digest); returns whether
        they were sent. Raises KilnError (RESOURCE_EXHAUSTED past the server's size limit)."""
        digest = digest or digest_of(data)
        missing = self._call("FindMissingBlobs",
                             service_pb2.FindMissingBlobsRequest(digests=[digest]), timeout)
        if not missing.missing:
            return False

        def chunks():
            # One message per chunk; an empty model still sends its digest once.
            yield service_pb2.UploadModelRequest(digest=digest, data=data[:CHUNK_BYTES])
            for offset in range(CHUNK_BYTES, len(data), CHUNK_BYTES):
                yield service_pb2.UploadModelRequest(data=data[offset:offset + CHUNK_BYTES])

        uploaded = self._call("UploadModel", chunks(), timeout)
        return not uploaded.already_present

    def fetch_artifact(self, digest, timeout=None):
        """The bytes of the artifact ``digest`` (a kiln.v1.Digest), their size and SHA-256
        checked while they arrive. Raises KilnError DATA_LOSS when they differ."""
        call = self._stub.FetchArtifact(service_pb2.FetchArtifactRequest(digest=digest),
                                        metadata=self._metadata, timeout=timeout or self.timeout)
        sha = hashlib.sha256()
        parts, size = [], 0
        try:
            for chunk in call:
                size += len(chunk.data)
                if size > digest.size_bytes:  # bounded by the digest's size
                    call.cancel()
                    raise KilnError("DATA_LOSS", f"FetchArtifact: server sent more than "
                                    f"{digest.size_bytes} bytes")
                sha.update(chunk.data)
                parts.append(chunk.data)
        except grpc.RpcError as e:
            raise _from_rpc("FetchArtifact", e) from None
        got = sha.hexdigest()
        if size != digest.size_bytes or got != digest.hash:
            raise KilnError("DATA_LOSS", f"FetchArtifact: got {size} bytes hashing to {got}, "
                            f"expected {digest.size_bytes} bytes {digest.hash}")
        return b"".join(parts)

    def compile(self, model, target="host", input_shapes=None, timeout=None,
                disabled_passes=(), hardware_key="", untuned=False, precision="",
                constant_inputs=None):
        """Compiles ``model`` on the server and returns the Artifact.

        Args:
            model: a path to a .onnx file, or its bytes (see read_model).
            target: "host" (the compile worker's CPU: sent as is for kilnd to resolve, as
                ``kiln compile --server`` does), "cpu:<llvm cpu name>" (e.g. "cpu:x86-64-v3"),
                "cpu:<name>:+f1,-f2,..." (exactly those LLVM features) or "cuda:sm_NN".
                "native": this machine's CPU (see wire_target), so the artifact runs here.
            input_shapes: shapes of inputs with symbolic dims (see input_shapes_proto).
            timeout: each call's deadline in seconds (default: the client's).
            disabled_passes: graph passes to skip (names as in ``kiln-opt -list-passes``).
            hardware_key: whose tuning records to apply ("": kilnd's choice).
            untuned: apply no tuning records.
            precision: "" or "fp32", or "tf32", "fp16", "bf16" for a cuda target (tensor cores).
            constant_inputs: {input name: serialized onnx.TensorProto bytes, or a numpy array
                (serialized with the onnx package)}: inputs compiled as constants.

        Raises KilnError with the server's code and message ("Compile: ..."); DATA_LOSS when
        the fetched artifact fails its digest, does not parse, or names another key.
        """
        target = wire_target(target)
        options = service_pb2.CompileOptions(
            disabled_passes=list(disabled_passes), hardware_key=hardware_key, untuned=untuned,
            input_shapes=input_shapes_proto(input_shapes),
            precision="" if precision == "fp32" else precision,
            constant_inputs=constant_inputs_proto(constant_inputs))
        data = read_model(model)
        digest = digest_of(data)
        uploaded = self.ensure_model(data, digest, timeout)
        request = service_pb2.CompileRequest(model_digest=digest, target=target,
                                             options=options, priority=service_pb2.INTERACTIVE)
        response = self._call("Compile", request, timeout)
        try:
            artifact = self.fetch_artifact(response.artifact_digest, timeout)
        except KilnError as e:
            if e.code != "DATA_LOSS" or not response.cache_hit:
                raise
            # kilnd evicts a cached blob found corrupted; compiling once more rebuilds it.
            response = self._call("Compile", request, timeout)
            artifact = self.fetch_artifact(response.artifact_digest, timeout)
        try:
            manifest = parse_artifact(artifact)
        except KilnError as e:
            raise KilnError("DATA_LOSS",
                            f"the fetched artifact is not a valid artifact: {e.message}") from None
        # The options hash is kilnd's to check: it files one artifact under several keys that
        # differ only in tuning records that do not apply to it.
        for field in ("graph_hash", "target_key", "compiler_version"):
            have, want = getattr(manifest, field), getattr(response.key, field)
            if have != want:
                raise KilnError("DATA_LOSS", "the fetched artifact is not the one asked for: "
                                f"the artifact's manifest has {field} '{have}' but its key has "
                                f"'{want}'")
        return Artifact(response, artifact, manifest, uploaded)

    # ---- jobs ----

    def submit_tune(self, model, target="host", trials=64, time_budget_s=0.0, seed=1,
                    hardware_key="", input_shapes=None, disabled_passes=(), random=False,
                    timeout=None):
        """Uploads ``model`` if needed and queues a tune job (SubmitJob); returns its job id.
        Arguments as in tune(). Raises KilnError (FAILED_PRECONDITION: no measure worker)."""
        if trials < 1:
            raise KilnError("INVALID_ARGUMENT", "trials must be a positive integer")
        if time_budget_s < 0:
            raise KilnError("INVALID_ARGUMENT", "time_budget_s must be a non-negative number")
        target = wire_target(target)
        options = service_pb2.CompileOptions(disabled_passes=list(disabled_passes),
                                             input_shapes=input_shapes_proto(input_shapes))
        data = read_model(model)
        digest = digest_of(data)
        self.ensure_model(data, digest, timeout)
        tune = service_pb2.TuneRequest(model_digest=digest, target=target, options=options,
                                       trials=trials, time_budget_s=time_budget_s, seed=seed,
                                       hardware_key=hardware_key, random=random)
        return self._call("SubmitJob", service_pb2.SubmitJobRequest(tune=tune), timeout).job_id

    def tune(self, model, target="host", trials=64, time_budget_s=0.0, **kwargs):
        """Tunes ``model``'s kernels on the server's measure workers (a tune job); returns a
        JobWatch: iterate it for JobEvents (tune_progress after every measured round,
        tune_result with SUCCEEDED); its job_id names the job (for cancel()).

        Args:
            model: a path or bytes, as for compile().
            target: as for compile().
            trials: measured candidates over all workloads (>= 1).
            time_budget_s: stop after this much wall time, seconds; 0: no limit.
            kwargs: seed (1), hardware_key ("": any measure worker of the target),
                input_shapes (one profile), disabled_passes, random (no cost model), timeout.

        Records are filed as the job goes; later compiles on that hardware apply them. Raises
        KilnError for the submission; iterating raises as JobWatch does. A failed or cancelled
        job ends the iteration with that event (see JobEvent.error_code).
        """
        return self.watch(self.submit_tune(model, target, trials, time_budget_s, **kwargs))

    def watch(self, job_id):
        """The events of job ``job_id`` until it ends: a JobWatch (an iterator of JobEvent)."""
        return JobWatch(self, job_id)

    def cancel(self, job_id):
        """Cancels a job; returns its state afterwards ("CANCELLED", or the terminal state it
        had reached). Raises KilnError (NOT_FOUND for an unknown job)."""
        state = self._call("CancelJob", service_pb2.CancelJobRequest(job_id=job_id)).state
        return service_pb2.JobState.Name(state)

    # ---- thin wrappers ----

    def status(self):
        """The server's counters (GetStats) as a dict: blob_count, blob_bytes, artifact_count,
        cache_hits, cache_misses, jobs_queued, jobs_running, jobs_succeeded, jobs_failed,
        workers, compiler_version, uptime_ms."""
        return message_to_dict(self._call("GetStats", service_pb2.GetStatsRequest()))

    def jobs(self, state=None, limit=0, kinds=()):
        """Jobs, newest first, as dicts (kiln.v1.Job fields). ``state``: a JobState name
        ("RUNNING", ...) or None for all; ``limit``: 0 means 100; ``kinds``: Job.kind names
        (empty: compile and tune jobs; ["all"]: every kind)."""
        request = service_pb2.ListJobsRequest(
            state=service_pb2.JobState.Value(state) if state else 0, limit=limit,
            kinds=list(kinds))
        return [message_to_dict(j) for j in self._call("ListJobs", request).jobs]

    def workers(self):
        """The connected workers, as dicts (kiln.v1.Worker fields: id, capabilities, slots,
        busy, last_heartbeat_ms, local, pid, address)."""
        response = self._call("ListWorkers", service_pb2.ListWorkersRequest())
        return [message_to_dict(w) for w in response.workers]
