# lit configuration for Kiln's golden IR tests (*.kir graph IR, *.kloop loop IR): %kiln-opt runs
# the graph optimizer or applies loop schedules,
# FileCheck and not come from LLVM 19.
import os

import lit.formats

config.name = "kiln-golden"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".kir", ".kloop"]
config.test_source_root = os.path.dirname(__file__)

_repo = os.path.abspath(os.path.join(config.test_source_root, "..", ".."))
_bin = (lit_config.params.get("kiln_bin_dir") or os.environ.get("KILN_BIN_DIR")
        or os.path.join(_repo, "build", "bin"))
config.test_exec_root = lit_config.params.get("kiln_exec_root") or os.path.join(
    _bin, "..", "tests", "golden")

_kiln_opt = os.path.join(_bin, "kiln-opt")
if not os.path.exists(_kiln_opt):
    lit_config.fatal("kiln-opt not found at %s (build the kiln-opt target or pass "
                     "--param kiln_bin_dir=DIR)" % _kiln_opt)
_llvm_bin = "/usr/lib/llvm-19/bin"
config.substitutions.append(("%kiln-opt", _kiln_opt))
config.substitutions.append(("FileCheck", os.path.join(_llvm_bin, "FileCheck")))
config.substitutions.append((r"\bnot\b", os.path.join(_llvm_bin, "not")))
