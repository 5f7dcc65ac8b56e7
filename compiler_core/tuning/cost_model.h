// The auto-tuner's learned cost model: gradient-boosted trees (XGBoost, through its C API) from
// kernel feature vectors to a score that ranks schedules, trained on measured throughputs as in
// Ansor (Zheng et al., OSDI 2020, section 5.2) and TVM's XGBoost cost model (Chen et al.,
// "Learning to Optimize Tensor Programs", NeurIPS 2018). <xgboost/c_api.h> stays out of this
// header.
#ifndef KILN_COMPILER_CORE_TUNING_COST_MODEL_H_
#define KILN_COMPILER_CORE_TUNING_COST_MODEL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compiler_core/tuning/features.h"

namespace kiln::tuning {

/// One measured schedule of one workload.
struct Sample {
  /// The kernel's features, CostModelOptions::num_features long (ExtractFeatures); finite.
  std::vector<float> features;
  /// The workload (fused kernel + shapes) the schedule belongs to. Throughputs are normalized
  /// within one workload, so workloads of very different sizes train one model together.
  std::string workload_key;
  /// Measured speed, higher = faster, in any unit proportional to speed (FLOP/s, 1/seconds);
  /// finite and >= 0 (0 for a schedule that failed to run).
  double throughput = 0;
};

/// What the trees are fitted to.
enum class CostObjective : uint8_t {
  /// reg:squarederror on throughput / (best throughput of its workload), with each sample
  /// weighted by that normalized throughput when weight_by_throughput is set (Ansor; TVM's
  /// XGBModel). The default: scores are comparable across workloads (1 ≈ the best schedule
  /// measured so far), which lets the search mix workloads and estimate headroom, and the
  /// weights spend the model's capacity on the fast schedules the search keeps.
  kRegression,
  /// rank:pairwise with one query group per workload (TVM's "rank" loss): only the order
  /// within a workload is learned; scores of different workloads are not comparable.
  kPairwiseRank,
};

/// Training parameters. Defaults follow TVM's XGBModel (max_depth 10, eta 0.2, gamma 0.001,
/// min_child_weight 0), with a fixed round count instead of early stopping and one thread,
/// so training is deterministic.
struct CostModelOptions {
  int num_features = kFeatureLength;  // length of every feature vector, >= 1
  CostObjective objective = CostObjective::kRegression;
  int num_rounds = 200;         // boosting rounds (trees), >= 1
  int max_depth = 10;           // >= 1
  double learning_rate = 0.2;   // XGBoost eta, > 0
  double gamma = 0.001;         // minimum loss reduction of a split, >= 0
  double min_child_weight = 0;  // >= 0
  /// kRegression only: weight each sample by max(normalized throughput, 0.01).
  bool weight_by_throughput = true;
  uint64_t seed = 43;
  int num_threads = 1;  // XGBoost threads, >= 1 (determinism holds per thread count)
};

/// A trainable, serializable cost model. Movable, not copyable (a copy is Deserialize of
/// Serialize). Not thread-safe: callers serialize access, Predict included.
class CostModel {
 public:
  /// An untrained model. Errors: kInvalidArgument for out-of-range options.
  static absl::StatusOr<CostModel> Create(CostModelOptions options);

  /// Restores a model written by Serialize, with its options (num_threads and seed included).
  /// Errors: kInvalidArgument for bytes that are not a serialized Kiln cost model (never a
  /// crash).
  static absl::StatusOr<CostModel> Deserialize(std::string_view bytes);

  CostModel(CostModel&&) noexcept;
  CostModel& operator=(CostModel&&) noexcept;
  ~CostModel();

  /// Fits a fresh model to all of `samples` (not incremental: as in Ansor, each update retrains
  /// on every measurement so far), replacing any earlier one; on error the model is unchanged.
  /// Deterministic: the same samples in the same order and options give bit-identical models.
  /// Errors: kInvalidArgument for no samples, a feature vector of the wrong length, or
  /// non-finite values / negative throughput (naming the sample); kInternal if XGBoost fails.
  absl::Status Train(const std::vector<Sample>& samples);

  /// One score per feature vector, higher = predicted faster (with kRegression, the predicted
  /// throughput relative to the workload's best). An empty batch gives an empty result.
  /// Errors: kFailedPrecondition before the first Train; kInvalidArgument for a vector whose
  /// length is not num_features or with a non-finite value (naming its index); kInternal if
  /// XGBoost fails.
  absl::StatusOr<std::vector<double>> Predict(
      const std::vector<std::vector<float>>& features) const;

  /// True once Train succeeded (or the model was deserialized).
  bool trained() const { return booster_ != nullptr; }
  const CostModelOptions& options() const { return options_; }

  /// The model as bytes (a Kiln header, then XGBoost's UBJSON model with the options as an
  /// attribute), to persist per hardware key so that a later tuning run starts warm.
  /// Deserialize of the result predicts bit-identically. Errors: kFailedPrecondition when
  /// untrained; kInternal if XGBoost fails.
  absl::StatusOr<std::string> Serialize() const;

 private:
  struct BoosterFree {
    void operator()(void* handle) const;
  };
  using BoosterPtr = std::unique_ptr<void, BoosterFree>;

  explicit CostModel(CostModelOptions options) : options_(options) {}

  CostModelOptions options_;
  BoosterPtr booster_;  // an XGBoost BoosterHandle; null until trained
};

}  // namespace kiln::tuning

#endif  // KILN_COMPILER_CORE_TUNING_COST_MODEL_H_
