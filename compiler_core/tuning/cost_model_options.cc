// CostModelOptions ↔ "key=value;..." text, and option validation.
#include "compiler_core/tuning/cost_model_options.h"

#include <map>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace kiln::tuning {

std::string FormatDouble(double v) { return absl::StrFormat("%.17g", v); }

absl::Status ValidateOptions(const CostModelOptions& o) {
  auto bad = [](absl::string_view field, auto value, absl::string_view expected) {
    return absl::InvalidArgumentError(
        absl::StrCat("cost model options: ", field, " is ", value, ", expected ", expected));
  };
  if (o.num_features < 1) return bad("num_features", o.num_features, ">= 1");
  if (o.num_rounds < 1) return bad("num_rounds", o.num_rounds, ">= 1");
  if (o.max_depth < 1) return bad("max_depth", o.max_depth, ">= 1");
  if (!(o.learning_rate > 0)) return bad("learning_rate", o.learning_rate, "> 0");
  if (!(o.gamma >= 0)) return bad("gamma", o.gamma, ">= 0");
  if (!(o.min_child_weight >= 0)) return bad("min_child_weight", o.min_child_weight, ">= 0");
  if (o.num_threads < 1) return bad("num_threads", o.num_threads, ">= 1");
  if (o.objective != CostObjective::kRegression && o.objective != CostObjective::kPairwiseRank) {
    return bad("objective", static_cast<int>(o.objective), "regression or pairwise-rank");
  }
  return absl::OkStatus();
}

std::string FormatOptions(const CostModelOptions& o) {
  return absl::StrCat(
      "num_features=", o.num_features,
      ";objective=", o.objective == CostObjective::kRegression ? "regression" : "pairwise-rank",
      ";num_rounds=", o.num_rounds, ";max_depth=", o.max_depth,
      ";learning_rate=", FormatDouble(o.learning_rate), ";gamma=", FormatDouble(o.gamma),
      ";min_child_weight=", FormatDouble(o.min_child_weight),
      ";weight_by_throughput=", o.weight_by_throughput ? 1 : 0, ";seed=", o.seed,
      ";num_threads=", o.num_threads);
}

absl::StatusOr<CostModelOptions> ParseOptions(absl::string_view text) {
  std::map<std::string, std::string> fields;
  for (absl::string_view item : absl::StrSplit(text, ';')) {
    std::vector<std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    if (kv.size() != 2) {
      return absl::InvalidArgumentError(absl::StrCat("cost model options: malformed '", item, "'"));
    }
    fields[kv[0]] = kv[1];
  }
  CostModelOptions o;
  bool ok = true;
  auto take = [&](const std::string& key) -> std::string {
    auto it = fields.find(key);
    if (it == fields.end()) {
      ok = false;
      return "";
    }
    std::string v = it->second;
    fields.erase(it);
    return v;
  };
  int weight = 0;
  const std::string objective = take("objective");
  ok = ok && absl::SimpleAtoi(take("num_features"), &o.num_features) &&
       absl::SimpleAtoi(take("num_rounds"), &o.num_rounds) &&
       absl::SimpleAtoi(take("max_depth"), &o.max_depth) &&
       absl::SimpleAtod(take("learning_rate"), &o.learning_rate) &&
       absl::SimpleAtod(take("gamma"), &o.gamma) &&
       absl::SimpleAtod(take("min_child_weight"), &o.min_child_weight) &&
       absl::SimpleAtoi(take("weight_by_throughput"), &weight) &&
       absl::SimpleAtoi(take("seed"), &o.seed) &&
       absl::SimpleAtoi(take("num_threads"), &o.num_threads);
  if (objective == "regression") {
    o.objective = CostObjective::kRegression;
  } else if (objective == "pairwise-rank") {
    o.objective = CostObjective::kPairwiseRank;
  } else {
    ok = false;
  }
  if (!ok || !fields.empty() || (weight != 0 && weight != 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("cost model options: malformed or unknown fields in '", text, "'"));
  }
  o.weight_by_throughput = weight == 1;
  absl::Status valid = ValidateOptions(o);
  if (!valid.ok()) return valid;
  return o;
}

}  // namespace kiln::tuning
