// Manifest checks shared by the runtimes (CPU executable.cc, CUDA cuda/cuda_executable.cc):
// validation at load, the shapes fed inputs are taken as, the run-time shape checks of kernel
// calls, and the copies between dense tensors and tensors laid out for bounded dims.
#include "compiler_core/runtime/manifest_check.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler_core/runtime/abi.h"
#include "compiler_core/runtime/loop_check.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::runtime {

namespace {

// Calls `copy(dense, padded, bytes)` for each innermost row of a row-major tensor of `dtype` and
// `shape` held inside the leading box of one laid out for `bound` (same rank, every dim within):
// the row's byte offsets in the dense and the padded layout, and its length in bytes.
void ForEachBoxRow(DType dtype, const std::vector<int64_t>& shape,
                   const std::vector<int64_t>& bound,
                   const std::function<void(int64_t, int64_t, int64_t)>& copy) {
  const int64_t esize = DTypeSize(dtype);
  const int64_t rank = static_cast<int64_t>(shape.size());
  int64_t elements = 1;
  for (int64_t d : shape) elements *= d;
  if (elements == 0) return;
  const int64_t row_bytes = rank == 0 ? esize : shape.back() * esize;
  const int64_t rows = rank == 0 ? 1 : elements / shape.back();
  std::vector<int64_t> idx(static_cast<size_t>(std::max<int64_t>(rank - 1, 0)), 0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t padded = 0;  // element offset of (idx..., 0) in the bound layout
    for (int64_t d = 0; d + 1 < rank; ++d) padded = padded * bound[d] + idx[d];
    if (rank > 0) padded *= bound[rank - 1];
    copy(r * row_bytes, padded * esize, row_bytes);
    for (int64_t d = rank - 2; d >= 0; --d) {  // next row index
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

}  // namespace

// "[2,3]"; a dim that varies by shape profile (-1) prints as "?".
std::string ShapeString(const std::vector<int64_t>& shape) {
  std::vector<std::string> dims;
  for (int64_t d : shape) dims.push_back(d == -1 ? "?" : absl::StrCat(d));
  return absl::StrCat("[", absl::StrJoin(dims, ","), "]");
}

const std::vector<int64_t>& FedShape(const std::vector<int64_t>& fed,
                                     const std::vector<int64_t>& declared) {
  if (!declared.empty()) return fed;
  for (int64_t d : fed) {
    if (d != 1) return fed;  // no dim is negative: one element means every dim is 1
  }
  return declared;
}

// Checks what Load relies on: binding kinds, indices and bounds, and tensor specs. A manifest
// with profiles is checked as a whole by ValidateProfiles.
absl::Status ValidateManifest(const kiln::v1::Manifest& m, int64_t weights_size,
                              bool allow_unknown_dims) {
  if (m.abi_version() != KILN_ABI_VERSION) {
    return absl::InvalidArgumentError(absl::StrCat("artifact abi version ", m.abi_version(),
                                                   " is not supported: this runtime implements "
                                                   "kiln abi version ",
                                                   KILN_ABI_VERSION));
  }
  // weights_bytes 0 means "not recorded" (hand-written manifests); otherwise it must agree.
  if (m.weights_bytes() != 0 && m.weights_bytes() != weights_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("manifest says weights_bytes is ", m.weights_bytes(),
                     " but the weights section has ", weights_size, " bytes"));
  }
  if (m.arena_bytes() < 0) {
    return absl::InvalidArgumentError(absl::StrCat("arena_bytes is negative: ", m.arena_bytes()));
  }
  if (m.persistent_bytes() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("persistent_bytes is negative: ", m.persistent_bytes()));
  }
  auto check_specs = [&](const auto& specs, const char* what) -> absl::Status {
    for (int i = 0; i < specs.size(); ++i) {
      const kiln::v1::TensorSpec& spec = specs[i];
      if (!ParseDType(spec.dtype()).has_value()) {
        return absl::InvalidArgumentError(absl::StrCat(
            what, " ", i, " ('", spec.name(), "') has unknown dtype '", spec.dtype(), "'"));
      }
      for (int d = 0; d < spec.shape_size(); ++d) {
        // A symbolic dim is -1 with its expression in `dims` (checked by SymbolicShapes).
        const bool symbolic = d < spec.dims_size() && !spec.dims(d).empty() && spec.shape(d) == -1;
        if (spec.shape(d) < 0 && !symbolic && !(allow_unknown_dims && spec.shape(d) == -1)) {
          return absl::InvalidArgumentError(absl::StrCat(
              what, " ", i, " ('", spec.name(), "') has a negative dimension in shape ",
              ShapeString({spec.shape().begin(), spec.shape().end()})));
        }
      }
    }
    return absl::OkStatus();
  };
  KILN_RETURN_IF_ERROR(check_specs(m.inputs(), "input"));
  KILN_RETURN_IF_ERROR(check_specs(m.outputs(), "output"));
  for (const kiln::v1::BoundSymbol& sym : m.bound_symbols()) {
    if (sym.min() < 0 || sym.max() < sym.min()) {
      return absl::InvalidArgumentError(
          absl::StrCat("bound symbol '", sym.name(), "' has range ", sym.min(), "..", sym.max()));
    }
  }
  auto check_lengths = [&](const auto& specs, const char* what) -> absl::Status {
    for (int i = 0; i < specs.size(); ++i) {
      const kiln::v1::TensorSpec& spec = specs[i];
      if (spec.lengths_size() == 0) continue;
      bool ok = spec.lengths_size() == spec.shape_size();
      for (int d = 0; ok && d < spec.lengths_size(); ++d) {
        const kiln::v1::DimLength& l = spec.lengths(d);
        ok = l.symbol() == -1 ||
             (l.symbol() >= 0 && l.symbol() < m.bound_symbols_size() && l.mul() >= 1 &&
              l.div() >= 1 &&
              m.bound_symbols(l.symbol()).max() * l.mul() / l.div() <= spec.shape(d));
      }
      if (!ok) {
        return absl::InvalidArgumentError(absl::StrCat(
            what, " ", i, " ('", spec.name(), "') has dim lengths that do not fit its shape ",
            ShapeString({spec.shape().begin(), spec.shape().end()}), " and the ",
            m.bound_symbols_size(), " bound symbols"));
      }
    }
    return absl::OkStatus();
  };
  KILN_RETURN_IF_ERROR(check_lengths(m.inputs(), "input"));
  KILN_RETURN_IF_ERROR(check_lengths(m.outputs(), "output"));
  for (int k = 0; k < m.kernels_size(); ++k) {
    const kiln::v1::KernelCall& call = m.kernels(k);
    if (call.has_loop()) {
      absl::Status loop = CheckLoopCall(m, call, [&](const kiln::v1::Manifest& body) {
        return ValidateManifest(body, weights_size);
      });
      if (!loop.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("kernel ", k, ": ", loop.message()));
      }
    }
    for (int a = 0; a < call.args_size(); ++a) {
      const kiln::v1::Binding& b = call.args(a);
      std::string where = absl::StrCat("kernel ", k, " (", call.symbol(), ") argument ", a);
      switch (b.kind()) {
        case kiln::v1::Binding::INPUT:
          if (b.index() < 0 || b.index() >= m.inputs_size()) {
            return absl::InvalidArgumentError(absl::StrCat(where, " binds input ", b.index(),
                                                           " but the model has ", m.inputs_size(),
                                                           " inputs"));
          }
          break;
        case kiln::v1::Binding::OUTPUT:
          if (b.index() < 0 || b.index() >= m.outputs_size()) {
            return absl::InvalidArgumentError(absl::StrCat(where, " binds output ", b.index(),
                                                           " but the model has ", m.outputs_size(),
                                                           " outputs"));
          }
          break;
        case kiln::v1::Binding::WEIGHT:
          if (b.offset() < 0 || b.size_bytes() < 0 || b.offset() > weights_size ||
              b.size_bytes() > weights_size - b.offset()) {
            return absl::InvalidArgumentError(absl::StrCat(where, " binds weights [", b.offset(),
                                                           ", +", b.size_bytes(), ") outside the ",
                                                           weights_size, "-byte weights section"));
          }
          break;
        case kiln::v1::Binding::ARENA:
          if (b.offset() < 0 || b.size_bytes() < 0 || b.offset() > m.arena_bytes() ||
              b.size_bytes() > m.arena_bytes() - b.offset()) {
            return absl::InvalidArgumentError(absl::StrCat(where, " binds arena [", b.offset(),
                                                           ", +", b.size_bytes(), ") outside the ",
                                                           m.arena_bytes(), "-byte arena"));
          }
          break;
        case kiln::v1::Binding::PERSISTENT:
          if (b.offset() < 0 || b.size_bytes() < 0 || b.offset() > m.persistent_bytes() ||
              b.size_bytes() > m.persistent_bytes() - b.offset()) {
            return absl::InvalidArgumentError(absl::StrCat(
                where, " binds persistent [", b.offset(), ", +", b.size_bytes(), ") outside the ",
                m.persistent_bytes(), "-byte persistent buffer"));
          }
          break;
        case kiln::v1::Binding::DIMS: {
          const int64_t symbols = std::max(m.bound_symbols_size(), m.symbols_size());
          if (b.size_bytes() < 0 || b.size_bytes() > 8 * symbols) {
            return absl::InvalidArgumentError(absl::StrCat(
                where, " binds ", b.size_bytes(), " bytes of symbol values, the model has ",
                symbols, " symbols"));
          }
          break;
        }
        case kiln::v1::Binding::SHAPE_VALUE:
          if (b.index() < 0 || b.index() >= m.shape_values_size()) {
            return absl::InvalidArgumentError(absl::StrCat(where, " binds shape value ",
                                                           b.index(), " but the model has ",
                                                           m.shape_values_size()));
          }
          break;
        case kiln::v1::Binding::DYNAMIC:
          if (b.index() < 0 || b.index() >= m.dynamic_buffers_size()) {
            return absl::InvalidArgumentError(absl::StrCat(where, " binds dynamic buffer ",
                                                           b.index(), " but the model has ",
                                                           m.dynamic_buffers_size()));
          }
          break;
        default:
          return absl::InvalidArgumentError(
              absl::StrCat(where, " has unknown binding kind ", static_cast<int>(b.kind())));
      }
    }
    for (int c = 0; c < call.shape_checks_size(); ++c) {
      const kiln::v1::ShapeCheck& check = call.shape_checks(c);
      const int64_t need = 8 * static_cast<int64_t>(check.expected_size());
      if (check.arg() < 0 || check.arg() >= call.args_size() ||
          call.args(check.arg()).kind() != kiln::v1::Binding::ARENA ||
          call.args(check.arg()).size_bytes() < need) {
        return absl::InvalidArgumentError(absl::StrCat(
            "kernel ", k, " (", call.symbol(), ") shape check ", c, " reads argument ",
            check.arg(), ", which is not an arena workspace of at least ", need, " bytes"));
      }
      if (check.bounded() && (check.output() < 0 || check.output() >= m.outputs_size() ||
                              m.outputs(check.output()).shape_size() != check.expected_size())) {
        return absl::InvalidArgumentError(absl::StrCat(
            "kernel ", k, " (", call.symbol(), ") shape check ", c, " bounds output ",
            check.output(), ", which is not a graph output of rank ", check.expected_size()));
      }
    }
  }
  return absl::OkStatus();
}

// `t` (laid out for its bound shape) cut to the leading `shape` box, compacted row-major.
void TrimToShape(Tensor& t, const std::vector<int64_t>& shape) {
  Tensor out{TensorType{t.type.dtype, shape}, {}};
  out.bytes.resize(static_cast<size_t>(out.type.NumBytes()));
  ForEachBoxRow(t.type.dtype, shape, t.type.shape, [&](int64_t dense, int64_t padded, int64_t n) {
    std::memcpy(out.bytes.data() + dense, t.bytes.data() + padded, static_cast<size_t>(n));
  });
  t = std::move(out);
}

// Copies `t` (row-major, its own shape) into `padded` (row-major, `bound`, the same rank and
// every dim within it): the leading box of `padded` holds `t`; the rest keeps its contents.
void PadToBound(const Tensor& t, const std::vector<int64_t>& bound, Tensor& padded) {
  ForEachBoxRow(t.type.dtype, t.type.shape, bound, [&](int64_t dense, int64_t at, int64_t n) {
    std::memcpy(padded.bytes.data() + at, t.bytes.data() + dense, static_cast<size_t>(n));
  });
}

// "input:1=1..64" for messages.
std::string SymbolText(const kiln::v1::BoundSymbol& s) {
  return absl::StrCat(s.name(), " (", s.min(), "..", s.max(), ")");
}

std::string SymbolText(const kiln::v1::SymbolSpec& s) {
  return absl::StrCat(s.name(), "=[", s.min(), ",",
                      s.max() < 0 ? std::string("inf") : absl::StrCat(s.max()), "]");
}

// The first of `call`'s shape checks whose run-time shape (written by the call into its
// workspace argument) differs from the compiled one, as kInvalidArgument; OK if all agree. A
// bounded check's shape is appended to `trims` instead (an error if outside the bound).
absl::Status CheckShapes(const kiln::v1::KernelCall& call, const ShapeReader& read,
                         std::vector<OutputTrim>& trims) {
  for (const kiln::v1::ShapeCheck& check : call.shape_checks()) {
    std::vector<int64_t> got(static_cast<size_t>(check.expected_size()));
    if (!got.empty()) read(check.arg(), got.data(), got.size());
    std::vector<int64_t> want(check.expected().begin(), check.expected().end());
    if (check.bounded()) {
      for (size_t d = 0; d < got.size(); ++d) {
        if (got[d] < 0 || got[d] > want[d]) {
          return absl::InternalError(absl::StrCat(check.what(), " give output shape [",
                                                  absl::StrJoin(got, ","), "] outside its bound ",
                                                  ShapeString(want)));
        }
      }
      trims.push_back({check.output(), std::move(got)});
      continue;
    }
    if (got != want && check.values()) {
      return absl::InvalidArgumentError(absl::StrCat(check.what(), ": got [",
                                                     absl::StrJoin(got, ","),
                                                     "] at run time, "
                                                     "the artifact was compiled for [",
                                                     absl::StrJoin(want, ","), "]"));
    }
    if (got != want) {
      std::vector<std::string> dims;
      bool invalid = false;
      for (int64_t d : got) {
        dims.push_back(d < 0 ? "invalid" : absl::StrCat(d));
        invalid = invalid || d < 0;
      }
      return absl::InvalidArgumentError(absl::StrCat(
          check.what(), " given at run time give output shape [", absl::StrJoin(dims, ","), "]",
          invalid ? " (a value outside its range, such as an axis out of range or a step of 0)"
                  : "",
          ", but the artifact was compiled for ", ShapeString(want),
          " (the shape ONNX shape inference or the declared graph output gave at compile time)"));
    }
  }
  return absl::OkStatus();
}

// A manifest with profiles: its own specs (dims that vary are -1) and no kernels; each profile a
// valid manifest whose inputs and outputs agree with it in count, name, dtype, rank and every
// known dim.
absl::Status ValidateProfiles(const kiln::v1::Manifest& m, int64_t weights_size) {
  if (m.kernels_size() > 0) {
    return absl::InvalidArgumentError(absl::StrCat("a manifest with ", m.profiles_size(),
                                                   " shape profiles has ", m.kernels_size(),
                                                   " kernels of its own"));
  }
  KILN_RETURN_IF_ERROR(ValidateManifest(m, weights_size, /*allow_unknown_dims=*/true));
  auto agree = [](const auto& specs, const auto& profile_specs, int k,
                  const char* what) -> absl::Status {
    if (profile_specs.size() != specs.size()) {
      return absl::InvalidArgumentError(absl::StrCat("shape profile ", k, " has ",
                                                     profile_specs.size(), " ", what, "s, the model ",
                                                     specs.size()));
    }
    for (int i = 0; i < specs.size(); ++i) {
      const kiln::v1::TensorSpec& a = specs[i];
      const kiln::v1::TensorSpec& b = profile_specs[i];
      bool same = a.name() == b.name() && a.dtype() == b.dtype() &&
                  a.shape_size() == b.shape_size();
      for (int d = 0; same && d < a.shape_size(); ++d) {
        same = a.shape(d) == -1 || a.shape(d) == b.shape(d);
      }
      if (!same) {
        return absl::InvalidArgumentError(absl::StrCat(
            "shape profile ", k, " ", what, " ", i, " ('", b.name(), "' ", b.dtype(),
            ShapeString({b.shape().begin(), b.shape().end()}), ") does not match the model's ('",
            a.name(), "' ", a.dtype(), ShapeString({a.shape().begin(), a.shape().end()}), ")"));
      }
    }
    return absl::OkStatus();
  };
  for (int k = 0; k < m.profiles_size(); ++k) {
    const kiln::v1::Manifest& p = m.profiles(k);
    if (p.profiles_size() > 0) {
      return absl::InvalidArgumentError(absl::StrCat("shape profile ", k, " has profiles"));
    }
    absl::Status valid = ValidateManifest(p, weights_size);
    if (!valid.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("shape profile ", k, ": ", valid.message()));
    }
    KILN_RETURN_IF_ERROR(agree(m.inputs(), p.inputs(), k, "input"));
    KILN_RETURN_IF_ERROR(agree(m.outputs(), p.outputs(), k, "output"));
  }
  return absl::OkStatus();
}

std::vector<TensorType> TypesOf(
    const google::protobuf::RepeatedPtrField<kiln::v1::TensorSpec>& specs) {
  std::vector<TensorType> types;
  for (const kiln::v1::TensorSpec& spec : specs) {
    types.push_back(
        TensorType{*ParseDType(spec.dtype()), {spec.shape().begin(), spec.shape().end()}});
  }
  return types;
}

}  // namespace kiln::runtime
