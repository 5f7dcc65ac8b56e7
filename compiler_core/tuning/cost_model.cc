// The XGBoost cost model: training-set construction (per-workload normalization, weights,
// groups), boosting, prediction and (de)serialization through XGBoost's C API, with every
// error code turned into an absl::Status and every handle owned by RAII.
#include "compiler_core/tuning/cost_model.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "absl/strings/str_cat.h"
#include "compiler_core/tuning/cost_model_options.h"

namespace kiln::tuning {
namespace {

constexpr absl::string_view kHeader = "kiln-cost-model/1\n";
constexpr const char* kOptionsAttr = "kiln_options";
constexpr float kMinWeight = 0.01f;

absl::Status XgbStatus(int rc, absl::string_view what,
                       absl::StatusCode code = absl::StatusCode::kInternal) {
  if (rc == 0) return absl::OkStatus();
  return absl::Status(code, absl::StrCat(what, ": ", XGBGetLastError()));
}

struct DMatrixFree {
  void operator()(void* handle) const { XGDMatrixFree(handle); }
};
using DMatrixPtr = std::unique_ptr<void, DMatrixFree>;

/// A dense matrix of `rows` (each `cols` long, already checked).
absl::StatusOr<DMatrixPtr> MakeDMatrix(const std::vector<const std::vector<float>*>& rows,
                                       int cols) {
  std::vector<float> data;
  data.reserve(rows.size() * static_cast<size_t>(cols));
  for (const std::vector<float>* r : rows) data.insert(data.end(), r->begin(), r->end());
  DMatrixHandle handle = nullptr;
  absl::Status s =
      XgbStatus(XGDMatrixCreateFromMat(data.data(), rows.size(), static_cast<bst_ulong>(cols),
                                       std::numeric_limits<float>::quiet_NaN(), &handle),
                "xgboost: creating a feature matrix");
  if (!s.ok()) return s;
  return DMatrixPtr(handle);
}

absl::Status CheckFeatures(const std::vector<float>& f, int expected, absl::string_view what,
                           size_t index) {
  if (static_cast<int>(f.size()) != expected) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", index, ": ", f.size(), " features, expected ", expected));
  }
  for (float v : f) {
    if (!std::isfinite(v)) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " ", index, ": non-finite feature value ", v));
    }
  }
  return absl::OkStatus();
}

/// Training rows grouped by workload (std::map order, then input order) and their labels.
struct TrainingSet {
  std::vector<const std::vector<float>*> rows;
  std::vector<float> labels;
  std::vector<float> weights;
  std::vector<unsigned> group_sizes;
};

absl::StatusOr<TrainingSet> BuildTrainingSet(const std::vector<Sample>& samples,
                                             const CostModelOptions& options) {
  if (samples.empty()) return absl::InvalidArgumentError("cost model: no training samples");
  std::map<std::string, std::vector<size_t>> groups;
  for (size_t i = 0; i < samples.size(); ++i) {
    const Sample& s = samples[i];
    absl::Status ok = CheckFeatures(s.features, options.num_features, "sample", i);
    if (!ok.ok()) return ok;
    if (!std::isfinite(s.throughput) || s.throughput < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("sample ", i, ": throughput ", s.throughput, ", expected finite and >= 0"));
    }
    groups[s.workload_key].push_back(i);
  }
  TrainingSet set;
  for (const auto& [key, members] : groups) {
    double best = 0;
    for (size_t i : members) best = std::max(best, samples[i].throughput);
    for (size_t i : members) {
      const float y = best > 0 ? static_cast<float>(samples[i].throughput / best) : 0.0f;
      set.rows.push_back(&samples[i].features);
      set.labels.push_back(y);
      set.weights.push_back(std::max(y, kMinWeight));
    }
    set.group_sizes.push_back(static_cast<unsigned>(members.size()));
  }
  return set;
}

absl::Status SetParams(BoosterHandle booster, const CostModelOptions& o) {
  const std::vector<std::pair<std::string, std::string>> params = {
      {"objective",
       o.objective == CostObjective::kRegression ? "reg:squarederror" : "rank:pairwise"},
      {"booster", "gbtree"},
      {"tree_method", "hist"},
      {"max_depth", absl::StrCat(o.max_depth)},
      {"eta", FormatDouble(o.learning_rate)},
      {"gamma", FormatDouble(o.gamma)},
      {"min_child_weight", FormatDouble(o.min_child_weight)},
      {"seed", absl::StrCat(o.seed)},
      {"nthread", absl::StrCat(o.num_threads)},
      {"verbosity", "0"},
      {"disable_default_eval_metric", "1"},
  };
  for (const auto& [key, value] : params) {
    absl::Status s = XgbStatus(XGBoosterSetParam(booster, key.c_str(), value.c_str()),
                               absl::StrCat("xgboost: setting ", key, "=", value));
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

void CostModel::BoosterFree::operator()(void* handle) const { XGBoosterFree(handle); }

CostModel::CostModel(CostModel&&) noexcept = default;
CostModel& CostModel::operator=(CostModel&&) noexcept = default;
CostModel::~CostModel() = default;

absl::StatusOr<CostModel> CostModel::Create(CostModelOptions options) {
  absl::Status valid = ValidateOptions(options);
  if (!valid.ok()) return valid;
  return CostModel(options);
}

absl::Status CostModel::Train(const std::vector<Sample>& samples) {
  absl::StatusOr<TrainingSet> set = BuildTrainingSet(samples, options_);
  if (!set.ok()) return set.status();
  absl::StatusOr<DMatrixPtr> dtrain = MakeDMatrix(set->rows, options_.num_features);
  if (!dtrain.ok()) return dtrain.status();
  void* dmat = dtrain->get();
  absl::Status s =
      XgbStatus(XGDMatrixSetFloatInfo(dmat, "label", set->labels.data(), set->labels.size()),
                "xgboost: setting labels");
  if (s.ok() && options_.objective == CostObjective::kRegression && options_.weight_by_throughput) {
    s = XgbStatus(XGDMatrixSetFloatInfo(dmat, "weight", set->weights.data(), set->weights.size()),
                  "xgboost: setting weights");
  }
  if (s.ok() && options_.objective == CostObjective::kPairwiseRank) {
    s = XgbStatus(
        XGDMatrixSetUIntInfo(dmat, "group", set->group_sizes.data(), set->group_sizes.size()),
        "xgboost: setting groups");
  }
  if (!s.ok()) return s;
  BoosterHandle handle = nullptr;
  s = XgbStatus(XGBoosterCreate(&dmat, 1, &handle), "xgboost: creating a booster");
  if (!s.ok()) return s;
  BoosterPtr booster(handle);
  s = SetParams(handle, options_);
  for (int round = 0; s.ok() && round < options_.num_rounds; ++round) {
    s = XgbStatus(XGBoosterUpdateOneIter(handle, round, dmat),
                  absl::StrCat("xgboost: boosting round ", round));
  }
  if (s.ok()) {
    s = XgbStatus(XGBoosterSetAttr(handle, kOptionsAttr, FormatOptions(options_).c_str()),
                  "xgboost: storing the options");
  }
  if (!s.ok()) return s;
  booster_ = std::move(booster);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<double>> CostModel::Predict(
    const std::vector<std::vector<float>>& features) const {
  if (!trained()) return absl::FailedPreconditionError("cost model: predicting before training");
  if (features.empty()) return std::vector<double>{};
  std::vector<const std::vector<float>*> rows;
  for (size_t i = 0; i < features.size(); ++i) {
    absl::Status ok = CheckFeatures(features[i], options_.num_features, "feature vector", i);
    if (!ok.ok()) return ok;
    rows.push_back(&features[i]);
  }
  absl::StatusOr<DMatrixPtr> dmat = MakeDMatrix(rows, options_.num_features);
  if (!dmat.ok()) return dmat.status();
  const char* config = R"({"type": 0, "training": false, "iteration_begin": 0, "iteration_end": 0,)"
                       R"( "strict_shape": false})";
  const bst_ulong* shape = nullptr;
  bst_ulong dim = 0;
  const float* result = nullptr;
  absl::Status s = XgbStatus(
      XGBoosterPredictFromDMatrix(booster_.get(), dmat->get(), config, &shape, &dim, &result),
      "xgboost: predicting");
  if (!s.ok()) return s;
  bst_ulong n = dim == 0 ? 0 : 1;
  for (bst_ulong d = 0; d < dim; ++d) n *= shape[d];
  if (n != features.size()) {
    return absl::InternalError(
        absl::StrCat("xgboost: ", n, " predictions for ", features.size(), " rows"));
  }
  return std::vector<double>(result, result + n);
}

absl::StatusOr<std::string> CostModel::Serialize() const {
  if (!trained()) return absl::FailedPreconditionError("cost model: serializing before training");
  bst_ulong len = 0;
  const char* data = nullptr;
  absl::Status s =
      XgbStatus(XGBoosterSaveModelToBuffer(booster_.get(), R"({"format": "ubj"})", &len, &data),
                "xgboost: saving the model");
  if (!s.ok()) return s;
  return absl::StrCat(kHeader, absl::string_view(data, len));
}

absl::StatusOr<CostModel> CostModel::Deserialize(std::string_view data) {
  absl::string_view bytes(data.data(), data.size());
  if (bytes.substr(0, kHeader.size()) != kHeader) {
    return absl::InvalidArgumentError("cost model: not a serialized Kiln cost model (no header)");
  }
  bytes.remove_prefix(kHeader.size());
  BoosterHandle handle = nullptr;
  absl::Status s = XgbStatus(XGBoosterCreate(nullptr, 0, &handle), "xgboost: creating a booster");
  if (!s.ok()) return s;
  BoosterPtr booster(handle);
  s = XgbStatus(XGBoosterLoadModelFromBuffer(handle, bytes.data(), bytes.size()),
                "cost model: loading the XGBoost model", absl::StatusCode::kInvalidArgument);
  if (!s.ok()) return s;
  const char* attr = nullptr;
  int found = 0;
  s = XgbStatus(XGBoosterGetAttr(handle, kOptionsAttr, &attr, &found),
                "cost model: reading the options", absl::StatusCode::kInvalidArgument);
  if (!s.ok()) return s;
  if (!found) return absl::InvalidArgumentError("cost model: the model has no Kiln options");
  absl::StatusOr<CostModelOptions> options = ParseOptions(attr);
  if (!options.ok()) return options.status();
  bst_ulong num_features = 0;
  s = XgbStatus(XGBoosterGetNumFeature(handle, &num_features),
                "cost model: reading the feature count", absl::StatusCode::kInvalidArgument);
  if (!s.ok()) return s;
  if (num_features != static_cast<bst_ulong>(options->num_features)) {
    return absl::InvalidArgumentError(absl::StrCat("cost model: the trees use ", num_features,
                                                   " features, the options say ",
                                                   options->num_features));
  }
  // Thread count and verbosity are run-time settings, not part of a saved model.
  s = SetParams(handle, *options);
  if (!s.ok()) return s;
  CostModel model(*options);
  model.booster_ = std::move(booster);
  return model;
}

}  // namespace kiln::tuning
