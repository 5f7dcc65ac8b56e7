"""Helpers of the kiln package's tests: the repository's paths and a kilnd process."""

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

import kiln

REPO = Path(__file__).resolve().parents[3]
SQUEEZENET = REPO / "examples" / "squeezenet1_1"


def bin_dir():
    """$KILN_BIN_DIR, else the repository's build/bin."""
    return Path(os.environ.get("KILN_BIN_DIR") or REPO / "build" / "bin").resolve()


class Kilnd:
    """A kilnd process on 127.0.0.1 (an ephemeral port) with its data dir under ``root``."""

    def __init__(self, root, workers=1, flags=()):
        self.root = Path(root)
        data = self.root / "data"
        data.mkdir(parents=True, exist_ok=True)
        self.log_path = self.root / "kilnd.log"
        argv = [str(bin_dir() / "kilnd"), "--listen", "127.0.0.1:0", "--data-dir", str(data),
                "--workers", str(workers), *flags]
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                            cwd=self.root)
        port_file = data / "kilnd.port"
        deadline = time.monotonic() + 60
        while not port_file.is_file() or not port_file.read_text().strip():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"kilnd did not start:\n{self.log()}")
            time.sleep(0.05)
        self.address = f"127.0.0.1:{int(port_file.read_text())}"

    def wait_ready(self, client, workers):
        """Waits until ``client`` sees ``workers`` registered workers (120 s at most)."""
        deadline = time.monotonic() + 120
        while True:
            try:
                if client.status()["workers"] >= workers:
                    return
            except kiln.KilnError:
                pass
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError(f"kilnd not ready:\n{self.log()}")
            time.sleep(0.1)

    def log(self):
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self):
        """SIGTERM, then SIGKILL after 90 s; returns the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                return self.process.wait(90)
            except subprocess.TimeoutExpired:
                self.process.kill()
        return self.process.wait()


def need_binaries():
    for name in ("kilnd", "kiln-worker"):
        if not (bin_dir() / name).is_file():
            pytest.skip(f"{bin_dir() / name} is not built (cmake --build build)")
