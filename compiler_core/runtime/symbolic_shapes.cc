// SymbolicShapes: the manifest's symbolic dims parsed at load, and the per-call shape program
// (bind, size, place).
#include "compiler_core/runtime/symbolic_shapes.h"

#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"
#include "compiler_core/ir/graph/tensor_size.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::runtime {
namespace {

// The dims of `spec` as expressions over `symbols` (TensorSpec.dims, or its static shape).
absl::StatusOr<std::vector<sym::Expr>> SpecDims(const kiln::v1::TensorSpec& spec,
                                                const std::map<std::string, sym::Symbol>& symbols,
                                                const std::string& what) {
  std::vector<sym::Expr> dims;
  if (spec.dims_size() != 0 && spec.dims_size() != spec.shape_size()) {
    return absl::InvalidArgumentError(absl::StrCat(what, " has ", spec.dims_size(),
                                                   " symbolic dims for rank ", spec.shape_size()));
  }
  for (int d = 0; d < spec.shape_size(); ++d) {
    const std::string text = spec.dims_size() == 0 ? "" : spec.dims(d);
    if (text.empty()) {
      if (spec.shape(d) < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(what, ": dim ", d, " is ", spec.shape(d), " with no expression"));
      }
      dims.push_back(sym::Expr(spec.shape(d)));
      continue;
    }
    if (spec.shape(d) != -1) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": dim ", d, " has the expression '", text, "' and the size ",
                       spec.shape(d), " (a symbolic dim's size is -1)"));
    }
    absl::StatusOr<sym::Expr> e = sym::Parse(text, symbols);
    if (!e.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": dim ", d, ": ", e.status().message()));
    }
    dims.push_back(*e);
  }
  return dims;
}

}  // namespace

absl::StatusOr<size_t> SymbolicShapes::Intern(const sym::Expr& e, const std::string& what) {
  auto [it, added] = expr_index_.emplace(e.ToString(), exprs_.size());
  if (!added) return it->second;
  absl::StatusOr<sym::CompiledExpr> c = sym::CompiledExpr::Compile(e, symbols_);
  if (!c.ok()) {
    expr_index_.erase(it);
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", c.status().message()));
  }
  exprs_.push_back(*std::move(c));
  return exprs_.size() - 1;
}

absl::StatusOr<SymbolicShapes> SymbolicShapes::FromManifest(const kiln::v1::Manifest& m) {
  SymbolicShapes s;
  if (m.symbols_size() == 0) {
    if (m.dynamic_buffers_size() != 0 || m.shape_values_size() != 0) {
      return absl::InvalidArgumentError(
          "the manifest has dynamic buffers or shape values but no symbols");
    }
    return s;
  }
  if (m.profiles_size() != 0 || m.bound_symbols_size() != 0) {
    return absl::InvalidArgumentError(
        "the manifest has symbols together with shape profiles or bounded dims");
  }
  std::map<std::string, sym::Symbol> by_name;
  for (const kiln::v1::SymbolSpec& spec : m.symbols()) {
    const int64_t max = spec.max() == -1 ? sym::kUnbounded : spec.max();
    if (!sym::IsSymbolName(spec.name()) || spec.min() < 0 || max < spec.min()) {
      return absl::InvalidArgumentError(absl::StrCat("symbol '", spec.name(), "' has range [",
                                                     spec.min(), ", ", spec.max(),
                                                     "] or is not an identifier"));
    }
    sym::Symbol symbol{spec.name(), spec.min(), max};
    if (!by_name.emplace(spec.name(), symbol).second) {
      return absl::InvalidArgumentError(absl::StrCat("symbol '", spec.name(), "' is declared twice"));
    }
    s.symbols_.push_back(symbol);
  }
  for (int i = 0; i < m.inputs_size(); ++i) {
    const kiln::v1::TensorSpec& spec = m.inputs(i);
    KILN_ASSIGN_OR_RETURN(std::vector<sym::Expr> dims,
                          SpecDims(spec, by_name, absl::StrCat("input ", i, " ('", spec.name(), "')")));
    s.inputs_.push_back({spec.name(), std::move(dims)});
  }
  for (int o = 0; o < m.outputs_size(); ++o) {
    const kiln::v1::TensorSpec& spec = m.outputs(o);
    const std::string what = absl::StrCat("output ", o, " ('", spec.name(), "')");
    KILN_ASSIGN_OR_RETURN(std::vector<sym::Expr> dims, SpecDims(spec, by_name, what));
    std::optional<DType> dtype = ParseDType(spec.dtype());
    if (!dtype) return absl::InvalidArgumentError(absl::StrCat(what, " has unknown dtype"));
    std::vector<size_t> code;
    for (const sym::Expr& d : dims) {
      KILN_ASSIGN_OR_RETURN(size_t c, s.Intern(d, what));
      code.push_back(c);
    }
    s.outputs_.push_back(TensorType::WithDims(*dtype, dims));
    s.output_dims_.push_back(std::move(code));
    s.output_names_.push_back(what);
  }
  for (int b = 0; b < m.dynamic_buffers_size(); ++b) {
    const kiln::v1::DynamicBuffer& d = m.dynamic_buffers(b);
    absl::StatusOr<sym::Expr> size = sym::Parse(d.size_bytes(), by_name);
    if (!size.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("dynamic buffer ", b, " ('", d.name(),
                                                     "'): size: ", size.status().message()));
    }
    if (d.first_kernel() < 0 || d.last_kernel() < d.first_kernel() ||
        d.last_kernel() >= m.kernels_size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "dynamic buffer ", b, " ('", d.name(), "') lives over kernels ", d.first_kernel(), "..",
          d.last_kernel(), " of ", m.kernels_size()));
    }
    KILN_ASSIGN_OR_RETURN(
        size_t code, s.Intern(*size, absl::StrCat("dynamic buffer ", b, " ('", d.name(), "')")));
    s.dynamic_sizes_.push_back(code);
    s.dynamic_requests_.push_back({d.name(), 0, d.first_kernel(), d.last_kernel()});
  }
  for (int v = 0; v < m.shape_values_size(); ++v) {
    const kiln::v1::ShapeValue& sv = m.shape_values(v);
    const std::string what = absl::StrCat("shape value ", v, " ('", sv.name(), "')");
    std::optional<DType> dtype = ParseDType(sv.dtype());
    if (!dtype || IsFloat(*dtype) || DTypeSize(*dtype) > 8) {
      return absl::InvalidArgumentError(absl::StrCat(what, " has dtype '", sv.dtype(),
                                                     "', not an integer or bool"));
    }
    int64_t count = 1;
    for (int64_t d : sv.shape()) count = d < 0 ? -1 : count * d;
    if (count != sv.elements_size()) {
      return absl::InvalidArgumentError(absl::StrCat(what, " has ", sv.elements_size(),
                                                     " elements for its shape"));
    }
    ShapeValue parsed{*dtype, {}};
    for (const std::string& text : sv.elements()) {
      absl::StatusOr<sym::Expr> e = sym::Parse(text, by_name);
      if (!e.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(what, ": ", e.status().message()));
      }
      KILN_ASSIGN_OR_RETURN(size_t code, s.Intern(*e, what));
      parsed.elements.push_back(code);
    }
    const size_t bytes = static_cast<size_t>(count) * DTypeSize(*dtype);
    s.shape_value_data_.emplace_back((bytes + 7) / 8 + 1, 0);
    s.shape_values_.push_back(std::move(parsed));
  }
  // Every symbol must be some input's dim by itself, so that a call can bind it.
  std::set<std::string> bindable;
  for (const sym::DeclaredInput& in : s.inputs_) {
    for (const sym::Expr& d : in.dims) {
      if (std::optional<sym::Symbol> one = d.AsSymbol()) bindable.insert(one->name);
    }
  }
  for (const sym::Symbol& symbol : s.symbols_) {
    if (!bindable.count(symbol.name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("symbol '", symbol.name, "' is no input's dim by itself"));
    }
  }
  s.values_.assign(s.symbols_.size(), 0);
  s.expr_values_.assign(s.exprs_.size(), std::nullopt);
  return s;
}

absl::Status SymbolicShapes::Bind(const std::vector<std::vector<int64_t>>& fed,
                                  int64_t max_tensor_bytes) {
  using ValueMap = std::map<std::string, int64_t>;
  KILN_ASSIGN_OR_RETURN(const ValueMap bound, sym::BindSymbols(inputs_, fed));
  for (size_t k = 0; k < symbols_.size(); ++k) {
    const int64_t v = bound.at(symbols_[k].name);
    if (v > kMaxSymbolValue) {
      return absl::ResourceExhaustedError(absl::StrCat("symbol '", symbols_[k].name, "' is ", v,
                                                       ", more than ", kMaxSymbolValue));
    }
    values_[k] = v;
  }
  // Every distinct expression once, compiled; where one fails (overflow, division by zero)
  // sym::Evaluate gives the error with its message when a size uses it.
  for (size_t e = 0; e < exprs_.size(); ++e) expr_values_[e] = exprs_[e].Run(values_.data());
  auto eval = [&](size_t e) -> absl::StatusOr<int64_t> {
    if (expr_values_[e]) return *expr_values_[e];
    return sym::Evaluate(exprs_[e].expr(), sym::ValuesOf(bound));
  };
  output_shapes_.resize(outputs_.size());
  for (size_t o = 0; o < outputs_.size(); ++o) {
    const TensorType& t = outputs_[o];
    if (t.is_static()) {
      output_shapes_[o] = t.shape;
      continue;
    }
    std::vector<int64_t>& shape = output_shapes_[o];
    shape.resize(t.shape.size());
    std::optional<int64_t> bytes = static_cast<int64_t>(DTypeSize(t.dtype));
    for (size_t d = 0; d < shape.size(); ++d) {
      absl::StatusOr<int64_t> v = eval(output_dims_[o][d]);
      if (!v.ok() || *v < 0) {
        bytes.reset();
        break;
      }
      shape[d] = *v;
      if (bytes) bytes = CheckedMul(*bytes, *v);
    }
    if (!bytes || *bytes > max_tensor_bytes) {
      // The size check's own error, naming the output, its type and the symbols' values.
      KILN_RETURN_IF_ERROR(
          CheckTensorSizeAt(t, bound, max_tensor_bytes, output_names_[o]).status());
    }
  }
  bool replan = plan_.offsets.size() != dynamic_requests_.size();
  for (size_t b = 0; b < dynamic_sizes_.size(); ++b) {
    absl::StatusOr<int64_t> bytes = eval(dynamic_sizes_[b]);
    if (!bytes.ok() || *bytes < 0 || *bytes > max_tensor_bytes) {
      const std::string what = absl::StrCat("intermediate '", dynamic_requests_[b].name, "'");
      if (!bytes.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(what, ": ", bytes.status().message()));
      }
      if (*bytes < 0) {
        return absl::InvalidArgumentError(absl::StrCat(what, " would have a negative size (",
                                                       exprs_[dynamic_sizes_[b]].expr().ToString(), " = ",
                                                       *bytes, ")"));
      }
      return absl::ResourceExhaustedError(absl::StrCat(
          what, " takes ", *bytes, " bytes at these input shapes, more than the limit of ",
          max_tensor_bytes, " (max_tensor_bytes)"));
    }
    replan = replan || dynamic_requests_[b].size_bytes != *bytes;
    dynamic_requests_[b].size_bytes = *bytes;
  }
  // The same sizes as the last call (a batch of equal requests) keep its placement.
  if (replan) plan_ = PlanMemory(dynamic_requests_);
  for (size_t v = 0; v < shape_values_.size(); ++v) {
    const ShapeValue& sv = shape_values_[v];
    auto* bytes = reinterpret_cast<uint8_t*>(shape_value_data_[v].data());
    const size_t size = DTypeSize(sv.dtype);
    for (size_t i = 0; i < sv.elements.size(); ++i) {
      KILN_ASSIGN_OR_RETURN(int64_t x, eval(sv.elements[i]));
      if (sv.dtype == DType::kBool) x = x != 0 ? 1 : 0;
      // Little-endian: the low `size` bytes are the value in a narrower integer type (wrapped,
      // as the kernel's cast would).
      std::memcpy(bytes + i * size, &x, size);
    }
  }
  return absl::OkStatus();
}

}  // namespace kiln::runtime
