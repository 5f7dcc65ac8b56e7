// BindSymbols: symbol values from fed input shapes, checked.
#include "compiler_core/ir/sym/bind.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kiln::sym {
namespace {

std::string Which(size_t i, const DeclaredInput& in) {
  return absl::StrCat("input ", i, " ('", in.name, "')");
}

std::string DimsText(const std::vector<Expr>& dims) {
  return absl::StrCat("[",
                      absl::StrJoin(dims, ",",
                                    [](std::string* out, const Expr& d) {
                                      absl::StrAppend(out, d.ToString());
                                    }),
                      "]");
}

// Where a symbol got its value.
struct Binding {
  int64_t value;
  size_t input;
  size_t dim;
};

}  // namespace

absl::StatusOr<std::map<std::string, int64_t>> BindSymbols(
    const std::vector<DeclaredInput>& inputs, const std::vector<std::vector<int64_t>>& fed) {
  if (fed.size() != inputs.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("got ", fed.size(), " input shapes, expected ", inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (fed[i].size() != inputs[i].dims.size()) {
      return absl::InvalidArgumentError(absl::StrCat(Which(i, inputs[i]), " has rank ",
                                                     fed[i].size(), ", expected ",
                                                     inputs[i].dims.size(), " (",
                                                     DimsText(inputs[i].dims), ")"));
    }
  }
  // Symbols that are a dim by themselves take the fed value, within their range, one value per
  // symbol across all inputs.
  std::map<std::string, Binding> bound;
  for (size_t i = 0; i < inputs.size(); ++i) {
    for (size_t d = 0; d < fed[i].size(); ++d) {
      std::optional<Symbol> s = inputs[i].dims[d].AsSymbol();
      if (!s) continue;
      const int64_t v = fed[i][d];
      auto it = bound.find(s->name);
      if (it != bound.end()) {
        if (it->second.value != v) {
          const Binding& b = it->second;
          return absl::InvalidArgumentError(absl::StrCat(
              Which(i, inputs[i]), ": dim ", d, " is ", v, " but symbol '", s->name, "' is ",
              b.value, " (input ", b.input, " '", inputs[b.input].name, "', dim ", b.dim, ")"));
        }
        continue;
      }
      if (v < s->min || v > s->max) {
        return absl::InvalidArgumentError(absl::StrCat(Which(i, inputs[i]), ": dim ", d, " is ",
                                                       v, ", outside the range ", RangeText(*s),
                                                       " of symbol '", s->name, "'"));
      }
      bound.emplace(s->name, Binding{v, i, d});
    }
  }
  std::map<std::string, int64_t> values;
  for (const auto& [name, b] : bound) values[name] = b.value;
  // Every other dim (constants and expressions) must equal what the symbols give.
  for (size_t i = 0; i < inputs.size(); ++i) {
    for (size_t d = 0; d < fed[i].size(); ++d) {
      const Expr& e = inputs[i].dims[d];
      if (e.AsSymbol()) continue;
      for (const Symbol& s : e.Symbols()) {
        if (!values.count(s.name)) {
          return absl::InvalidArgumentError(absl::StrCat(
              Which(i, inputs[i]), ": dim ", d, " is ", e.ToString(), ", whose symbol '", s.name,
              "' no input dim gives by itself"));
        }
      }
      absl::StatusOr<int64_t> want = Evaluate(e, ValuesOf(values));
      if (!want.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(Which(i, inputs[i]), ": dim ", d, ": ", want.status().message()));
      }
      if (*want != fed[i][d]) {
        return absl::InvalidArgumentError(absl::StrCat(
            Which(i, inputs[i]), ": dim ", d, " is ", fed[i][d], ", expected ", *want,
            e.is_constant() ? std::string() : absl::StrCat(" (", e.ToString(), ")")));
      }
    }
  }
  return values;
}

}  // namespace kiln::sym
