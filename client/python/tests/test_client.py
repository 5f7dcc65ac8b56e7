"""kiln.Client against a real kilnd: compile (miss, then hit), save, run the artifact and check
it against the stored reference output, jobs, tune, and the error paths."""

import hashlib
import os
import shutil
import subprocess

import numpy as np
import pytest

import kiln
from helpers import REPO, SQUEEZENET, Kilnd, need_binaries

# The C++ checker's tolerance (client/check_data.h, Tolerance): |got - want| <= atol + rtol*|want|.
RTOL, ATOL = 1e-3, 1e-4


def read_tensor(path):
    """A serialized onnx.TensorProto file as a numpy array (python3-onnx)."""
    import onnx
    from onnx import numpy_helper

    return numpy_helper.to_array(onnx.load_tensor(str(path)))


@pytest.fixture(scope="module")
def compiled(kilnd):
    """SqueezeNet compiled twice on the session's kilnd: from its path, then from its bytes."""
    with kiln.Client(kilnd.address) as client:
        first = client.compile(SQUEEZENET / "model.onnx")
        second = client.compile((SQUEEZENET / "model.onnx").read_bytes(), target="host")
    return first, second


def test_compile_miss_then_hit(compiled):
    first, second = compiled
    assert not first.cache_hit and first.uploaded and first.job_id and first.worker
    assert second.cache_hit and not second.uploaded and not second.job_id
    for field in ("graph_hash", "target_key", "compiler_version", "options_hash"):
        assert getattr(first, field), field
        assert getattr(first, field) == getattr(second, field), field
    assert first.target_key.startswith("cpu:")  # "host" resolved by the worker
    assert first.compiler_version.startswith(f"kiln-{kiln.__version__}")
    assert first.data == second.data
    assert len(first) == first.size == len(first.data) > 0
    assert hashlib.sha256(first.data).hexdigest() == first.digest
    assert first.manifest.graph_hash == first.graph_hash
    assert [t.name for t in first.manifest.inputs] == ["input"]


def test_native_target_is_this_machines_cpu(compiled, kilnd):
    # kilnd runs here too, so its "host" and this client's "native" are one CPU: the same
    # target key, and the artifact compiled for "host" is a cache hit.
    first, _ = compiled
    spec = kiln.runtime.native_target()
    assert spec.startswith("cpu:") and ":+" in spec
    with kiln.Client(kilnd.address) as client:
        native = client.compile(SQUEEZENET / "model.onnx", target="native")
    assert native.target_key == first.target_key
    assert native.cache_hit and native.data == first.data


def test_save_is_atomic_and_exact(compiled, tmp_path):
    first, _ = compiled
    path = tmp_path / "squeezenet.kiln"
    path.write_bytes(b"old contents")
    first.save(path)
    assert path.read_bytes() == first.data
    assert os.stat(path).st_mode & 0o777 == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["squeezenet.kiln"]  # no temp file left


def test_run_matches_reference(compiled, tmp_path):
    first, _ = compiled
    path = tmp_path / "squeezenet.kiln"
    first.save(path)
    x = read_tensor(SQUEEZENET / "test_data_set_0" / "input_0.pb")
    want = read_tensor(SQUEEZENET / "test_data_set_0" / "output_0.pb")
    with kiln.load(path, num_threads=2) as model:
        assert [(i.name, i.dtype, i.shape) for i in model.inputs] == [
            ("input", np.float32, (1, 3, 224, 224))]
        assert [(o.name, o.dtype, o.shape) for o in model.outputs] == [
            ("logits", np.float32, (1, 1000))]
        assert model.graph_hash == first.graph_hash
        assert model.target_key == first.target_key
        got = model.run({"input": x})
    assert list(got) == ["logits"]
    assert got["logits"].dtype == np.float32 and got["logits"].shape == want.shape
    np.testing.assert_allclose(got["logits"], want, rtol=RTOL, atol=ATOL)
    # From memory (bytes and the Artifact itself), with a non-contiguous input.
    strided = np.asfortranarray(x)
    for source in (first.data, first):
        with kiln.load(source) as model:
            np.testing.assert_allclose(model.run({"input": strided})["logits"], want,
                                       rtol=RTOL, atol=ATOL)


def test_run_errors(compiled):
    first, _ = compiled
    x = np.zeros((1, 3, 224, 224), np.float32)
    with kiln.load(first) as model:
        with pytest.raises(kiln.KilnError, match="no input named 'nope'") as e:
            model.run({"nope": x})
        assert e.value.code == "INVALID_ARGUMENT"
        with pytest.raises(kiln.KilnError, match=r"expected shape \[1,3,224,224\]") as e:
            model.run({"input": x[:, :2]})
        assert e.value.code == "INVALID_ARGUMENT"
        with pytest.raises(kiln.KilnError, match="input 'input': expected dtype 1") as e:
            model.run({"input": x.astype(np.float64)})
        assert e.value.code == "INVALID_ARGUMENT"
    with pytest.raises(kiln.KilnError, match="model was closed"):
        model.run({"input": x})


def test_run_one_element_array_for_a_scalar_input(client):
    # tests/data/scalar_rate: y = x * float(sr), sr an int64 scalar (rank 0) that the model's own
    # wrapper feeds as np.array([16000]), which ONNX Runtime runs (test_data_set_0; _1 feeds the
    # scalar). Taken as the scalar: the same output bit for bit; two elements stay refused.
    data = REPO / "tests" / "data" / "scalar_rate"
    x = read_tensor(data / "test_data_set_0" / "input_0.pb")
    want = read_tensor(data / "test_data_set_0" / "output_0.pb")
    one = read_tensor(data / "test_data_set_0" / "input_1.pb")
    scalar = read_tensor(data / "test_data_set_1" / "input_1.pb")
    assert one.shape == (1,) and scalar.shape == ()
    with kiln.load(client.compile(data / "model.onnx", input_shapes={"x": [3]})) as model:
        assert [(i.name, i.dtype, i.shape) for i in model.inputs] == [
            ("x", np.float32, (3,)), ("sr", np.int64, ())]
        got = model.run({"x": x, "sr": scalar})["y"]
        np.testing.assert_array_equal(got, want)
        for sr in (one, one.reshape(1, 1), [16000]):
            fed = model.run({"x": x, "sr": sr})["y"]
            assert fed.dtype == got.dtype and fed.shape == got.shape
            assert fed.tobytes() == got.tobytes()
        with pytest.raises(kiln.KilnError) as e:
            model.run({"x": x, "sr": np.array([16000, 8000], np.int64)})
        assert e.value.code == "INVALID_ARGUMENT"
        assert e.value.message == "input 1 ('sr'): expected shape [], got [2]"


def test_load_errors(tmp_path):
    missing = tmp_path / "missing.kiln"
    with pytest.raises(kiln.KilnError, match="cannot read artifact file") as e:
        kiln.load(missing)
    assert e.value.code == "NOT_FOUND" and str(missing) in e.value.message
    with pytest.raises(kiln.KilnError, match="too short") as e:
        kiln.load(b"not an artifact")
    assert e.value.code == "INVALID_ARGUMENT"


def test_compile_errors(client, tmp_path):
    with pytest.raises(kiln.KilnError, match="cannot read") as e:
        client.compile(tmp_path / "missing.onnx")
    assert e.value.code == "NOT_FOUND"
    with pytest.raises(kiln.KilnError, match="not a serialized onnx.ModelProto") as e:
        client.compile(b"\xff\xff not a model")
    assert e.value.code == "INVALID_ARGUMENT"
    with pytest.raises(kiln.KilnError, match="Compile: .*not-a-cpu") as e:
        client.compile(SQUEEZENET / "model.onnx", target="cpu:not-a-cpu")
    assert e.value.code == "INVALID_ARGUMENT"
    with pytest.raises(kiln.KilnError, match="dim 0 is not an int >= 1"):
        client.compile(SQUEEZENET / "model.onnx", input_shapes={"input": [0, 3, 224, 224]})


def test_read_model_inlines_external_data(tmp_path):
    import onnx
    from onnx import helper, numpy_helper

    from kiln.client import read_model

    weight = numpy_helper.from_array(np.arange(1024, dtype=np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"])], "g",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1024])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1024])], [weight])
    model = helper.make_model(graph)
    onnx.save_model(model, str(tmp_path / "m.onnx"), save_as_external_data=True,
                    location="m.data", size_threshold=0)
    sent = onnx.ModelProto.FromString(read_model(tmp_path / "m.onnx"))
    init = sent.graph.initializer[0]
    assert init.data_location == onnx.TensorProto.DEFAULT and not init.external_data
    np.testing.assert_array_equal(numpy_helper.to_array(init), np.arange(1024, dtype=np.float32))
    plain = (SQUEEZENET / "model.onnx").read_bytes()
    assert read_model(plain) == plain  # no external data: sent unchanged


def test_request_builders_and_artifact_checks(compiled):
    from kiln import client as kc

    shapes = kc.input_shapes_proto([{"b": [2], "a": [1, 3]}, {"a": [4, 3], "b": [2]}])
    assert [(s.name, list(s.dims)) for s in shapes] == [
        ("a", [1, 3]), ("b", [2]), ("a", [4, 3]), ("b", [2])]
    bounded = kc.input_shapes_proto({"x": [(1, 8), 3]})
    assert list(bounded[0].dims) == [8, 3] and list(bounded[0].min_dims) == [1, 3]
    with pytest.raises(kiln.KilnError, match="cannot be combined"):
        kc.input_shapes_proto([{"x": [(1, 8)]}, {"x": [2]}])
    constants = kc.constant_inputs_proto({"z": b"\x08\x01", "y": np.ones(2, np.float32)})
    assert [c.name for c in constants] == ["y", "z"] and constants[1].tensor == b"\x08\x01"
    first, _ = compiled
    assert kc.parse_artifact(first.data).graph_hash == first.graph_hash
    corrupted = bytearray(first.data)
    corrupted[-1] ^= 1
    with pytest.raises(kiln.KilnError, match="checksum mismatch"):
        kc.parse_artifact(bytes(corrupted))
    with pytest.raises(kiln.KilnError, match="bad magic"):
        kc.parse_artifact(b"X" * 100)
    d = kc.message_to_dict(first.manifest.inputs[0])
    assert d["name"] == "input" and d["shape"] == [1, 3, 224, 224] and d["dtype"] == "f32"


def test_jobs_status_workers_watch(compiled, client):
    first, _ = compiled
    stats = client.status()
    assert stats["compiler_version"] == first.compiler_version
    assert stats["cache_hits"] >= 1 and stats["cache_misses"] >= 1
    assert [w["capabilities"]["capabilities"][0]["compile"]["target_kinds"][0]
            for w in client.workers()] == ["cpu"]
    job = next(j for j in client.jobs() if j["id"] == first.job_id)
    assert job["state"] == "SUCCEEDED" and job["kind"] == "compile"
    events = list(client.watch(first.job_id))  # a finished job: its terminal event
    assert events[-1].state == "SUCCEEDED" and events[-1].terminal
    assert events[-1].result["key"]["graph_hash"] == first.graph_hash
    with pytest.raises(kiln.KilnError) as e:
        list(client.watch("no-such-job"))
    assert e.value.code == "NOT_FOUND"


def test_tune_then_compile_applies_records(tmp_path):
    """A tune job on a kilnd with a measure worker: progress events, then the result; the
    next compile applies the records (a new options hash)."""
    need_binaries()
    server = Kilnd(tmp_path, flags=["--measure-workers", "1"])
    try:
        with kiln.Client(server.address) as client:
            server.wait_ready(client, workers=2)
            untuned = client.compile(SQUEEZENET / "model.onnx")
            watch = client.tune(SQUEEZENET / "model.onnx", trials=2, time_budget_s=120)
            events = list(watch)
            assert all(e.job_id == watch.job_id for e in events)
            progress = [e.tune_progress for e in events if e.tune_progress]
            assert progress and progress[-1]["trials"] >= 1 and progress[-1]["workloads"]
            last = watch.last
            assert last.state == "SUCCEEDED", (last.error_code, last.error_message)
            assert last.tune_result["progress"]["records_written"] >= 1
            tuned = client.compile(SQUEEZENET / "model.onnx")
            assert tuned.options_hash != untuned.options_hash
            assert tuned.graph_hash == untuned.graph_hash
    finally:
        assert server.stop() == 0, server.log()


def make_certificates(directory):
    """A CA and a server certificate for the name "kilnd.test" only (openssl CLI)."""
    d = str(directory) + "/"

    def openssl(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=directory)

    with open(d + "server.ext", "w") as f:
        f.write("subjectAltName=DNS:kilnd.test\n")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", d + "ca.key", "-out", d + "ca.pem", "-days", "2",
            "-subj", "/CN=kiln python test CA")
    openssl("req", *ec, "-keyout", d + "server.key", "-out", d + "server.csr", "-subj",
            "/CN=kilnd.test")
    openssl("x509", "-req", "-in", d + "server.csr", "-CA", d + "ca.pem", "-CAkey", d + "ca.key",
            "-CAcreateserial", "-out", d + "server.pem", "-days", "2", "-extfile",
            d + "server.ext")


def test_tls_and_tokens(tmp_path):
    """TLS with tls_ca and tls_server_name; a bad token is UNAUTHENTICATED; KILN_TOKEN."""
    need_binaries()
    if shutil.which("openssl") is None:
        pytest.skip("the openssl CLI is not installed (scripts/setup installs it)")
    make_certificates(tmp_path)
    token = "python-token-0123456789abcdef"
    (tmp_path / "tokens").write_text(f"{token} read\n")
    server = Kilnd(tmp_path, workers=0, flags=[
        "--token-file", str(tmp_path / "tokens"), "--tls-cert", str(tmp_path / "server.pem"),
        "--tls-key", str(tmp_path / "server.key")])
    tls = {"tls_ca": tmp_path / "ca.pem", "tls_server_name": "kilnd.test"}
    try:
        with kiln.Client(server.address, token=token, **tls) as good:
            server.wait_ready(good, workers=0)
        with kiln.Client(server.address, token="wrong-token-0123456789abcdef", **tls) as bad:
            with pytest.raises(kiln.KilnError, match="unknown bearer token") as e:
                bad.status()
        assert e.value.code == "UNAUTHENTICATED"
        os.environ["KILN_TOKEN"] = f"  {token}\n"  # read when token is None, stripped
        try:
            with kiln.Client(server.address, tls_ca=(tmp_path / "ca.pem").read_bytes(),
                             tls_server_name="kilnd.test") as from_env:
                assert from_env.status()["workers"] == 0
        finally:
            del os.environ["KILN_TOKEN"]
        # Plaintext to the TLS listener does not get through.
        with kiln.Client(server.address, token=token, timeout=10) as plaintext:
            with pytest.raises(kiln.KilnError) as e:
                plaintext.status()
        assert e.value.code == "UNAVAILABLE"
        with pytest.raises(kiln.KilnError, match="tls_ca: cannot read") as e:
            kiln.Client(server.address, tls_ca=tmp_path / "missing.pem")
        assert e.value.code == "NOT_FOUND"
    finally:
        assert server.stop() == 0, server.log()
