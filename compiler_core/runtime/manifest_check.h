// Manifest checks shared by the runtimes (the CPU Executable and the CUDA one): validation at
// load, the shapes fed inputs are taken as (FedShape), the run-time shape checks of kernel calls
// (ShapeCheck), and the copies between dense tensors and tensors laid out for bounded dims. No
// LLVM, no CUDA.
#ifndef KILN_COMPILER_CORE_RUNTIME_MANIFEST_CHECK_H_
#define KILN_COMPILER_CORE_RUNTIME_MANIFEST_CHECK_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "compiler_core/ir/graph/tensor.h"
#include "kiln/v1/artifact.pb.h"

namespace kiln::runtime {

/// "[2,3]"; a dim that varies by shape profile (-1) prints as "?".
std::string ShapeString(const std::vector<int64_t>& shape);

/// The shape a runtime takes a tensor of shape `fed` as, fed for a graph input compiled with
/// shape `declared`: `declared` (the scalar, []) when `declared` is [] and `fed` holds exactly
/// one element ([1], [1,1], ...), as exporters' wrappers feed scalars (a sample rate as [1]) and
/// ONNX Runtime runs them (it checks no shape of an input declared with rank 0); otherwise `fed`
/// itself, for the caller to check against `declared` as it is (a scalar fed for a [1] input
/// stays refused, as ONNX Runtime refuses it). The one rule for every path that runs inputs.
const std::vector<int64_t>& FedShape(const std::vector<int64_t>& fed,
                                     const std::vector<int64_t>& declared);

/// Checks what a runtime relies on: the ABI version, binding kinds, indices and bounds (weights
/// within `weights_size` bytes, arena and persistent within the manifest's sizes), tensor specs,
/// bound symbols, shape checks and Loop calls. `allow_unknown_dims`: specs may hold -1 (a
/// manifest with profiles). Errors: kInvalidArgument naming the kernel and argument.
absl::Status ValidateManifest(const kiln::v1::Manifest& m, int64_t weights_size,
                              bool allow_unknown_dims = false);
/// A manifest with profiles: its own specs (dims that vary are -1) and no kernels; each profile
/// a valid manifest whose inputs and outputs agree with it. Errors: kInvalidArgument.
absl::Status ValidateProfiles(const kiln::v1::Manifest& m, int64_t weights_size);

/// The dtypes and shapes of `specs` (a manifest's inputs or outputs), which ValidateManifest
/// accepted.
std::vector<TensorType> TypesOf(
    const google::protobuf::RepeatedPtrField<kiln::v1::TensorSpec>& specs);

/// The run-time shape of a bounded graph output (ShapeCheck.bounded): output index and shape.
struct OutputTrim {
  int output;
  std::vector<int64_t> shape;
};

/// Reads `n` int64 values from kernel argument `arg` of the call just run into `out`.
using ShapeReader = std::function<void(int arg, int64_t* out, size_t n)>;

/// The first of `call`'s shape checks whose run-time shape (written by the call into its
/// workspace argument, read with `read`) differs from the compiled one, as kInvalidArgument;
/// OK if all agree. A bounded check's shape is appended to `trims` instead (kInternal if
/// outside the bound).
absl::Status CheckShapes(const kiln::v1::KernelCall& call, const ShapeReader& read,
                         std::vector<OutputTrim>& trims);

/// `t` (laid out for its bound shape) cut to the leading `shape` box, compacted row-major.
void TrimToShape(Tensor& t, const std::vector<int64_t>& shape);
/// Copies `t` (row-major, its own shape) into `padded` (row-major, `bound`, the same rank and
/// every dim within it): the leading box of `padded` holds `t`; the rest keeps its contents.
void PadToBound(const Tensor& t, const std::vector<int64_t>& bound, Tensor& padded);
/// "name (min..max)" for messages.
std::string SymbolText(const kiln::v1::BoundSymbol& s);
/// "seq=[1,4096]", "past=[0,inf]": a symbolic dim's symbol and range (Manifest.symbols).
std::string SymbolText(const kiln::v1::SymbolSpec& s);

}  // namespace kiln::runtime

#endif  // KILN_COMPILER_CORE_RUNTIME_MANIFEST_CHECK_H_
