"""One artifact for every shape through the Python binding (issue 32): llama_decoder_kv
compiled with no --input-shape, its inputs' symbolic dims described, runs at several lengths
with each output's shape reported, and examples/decode reproducing greedy.txt exactly."""

import os
import subprocess
import sys

import numpy as np
import pytest

import kiln
from helpers import REPO, bin_dir

LLAMA = REPO.parent / "shared" / "models" / "llama_decoder_kv"


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    """The artifact of llama_decoder_kv compiled once, with symbolic dims."""
    if not LLAMA.is_dir():
        if os.environ.get("KILN_REQUIRE_SHARED") == "1":
            pytest.fail(f"required test data missing: {LLAMA}")
        pytest.skip(f"test data not found at {LLAMA}")
    if not (bin_dir() / "kiln").is_file():
        pytest.skip(f"{bin_dir() / 'kiln'} is not built")
    path = tmp_path_factory.mktemp("llama") / "llama.kiln"
    done = subprocess.run([str(bin_dir() / "kiln"), "compile", str(LLAMA / "model.onnx"),
                           "-o", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return path


def test_symbolic_dims_are_described_and_any_length_runs(llama):
    with kiln.load(llama, num_threads=2) as model:
        ids = next(i for i in model.inputs if i.name == "input_ids")
        assert ids.shape == (1, -1)
        assert ids.min_shape == (1, 0) and ids.max_shape == (1, -1)
        key = next(i for i in model.inputs if i.name == "past_key_0")
        assert key.shape == (1, 2, -1, 32)
        # Two lengths from one model: shapes follow the inputs, present_* extends past_*.
        for seq, past in ((3, 0), (1, 9), (2, 40)):
            feeds = {"input_ids": np.arange(seq, dtype=np.int64).reshape(1, seq) * 7}
            for info in model.inputs:
                if info.name.startswith("past_"):
                    rng = np.random.default_rng(seq * 100 + past)
                    feeds[info.name] = rng.standard_normal((1, 2, past, 32)).astype(np.float32)
            out = model.run(feeds)
            assert out["logits"].shape == (1, seq, 1024)
            assert out["present_key_0"].shape == (1, 2, past + seq, 32)
            np.testing.assert_array_equal(out["present_value_3"][:, :, :past],
                                          feeds["past_value_3"])
        # Inputs that disagree on a symbol: INVALID_ARGUMENT naming the input, dim and symbol.
        feeds["past_key_1"] = feeds["past_key_1"][:, :, :5]
        with pytest.raises(kiln.KilnError) as err:
            model.run(feeds)
        assert err.value.code == "INVALID_ARGUMENT"
        assert "('past_key_1'): dim 2 is 5 but symbol 'past' is 40" in err.value.message


def test_decode_example_reproduces_greedy(llama):
    env = dict(os.environ, PYTHONPATH=str(REPO / "client" / "python"))
    done = subprocess.run([sys.executable, str(REPO / "examples" / "decode" / "decode.py"),
                           str(llama), "--greedy", str(LLAMA / "greedy.txt"), "--threads", "2"],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    with open(LLAMA / "greedy.txt") as f:
        expected = next(line for line in f if line.startswith("tokens")).strip()
    assert expected in done.stdout
    assert "MATCH: the 32 tokens of" in done.stdout
