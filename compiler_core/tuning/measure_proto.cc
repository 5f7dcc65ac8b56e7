// Measure protocol conversions.
#include "compiler_core/tuning/measure_proto.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "compiler_core/ir/loop/parser.h"
#include "compiler_core/tuning/workload.h"

namespace kiln::tuning {
namespace {

void LaunchesToProto(const std::vector<KernelLaunch>& in,
                     google::protobuf::RepeatedPtrField<v1::GpuLaunch>& out) {
  for (const KernelLaunch& l : in) {
    v1::GpuLaunch* p = out.Add();
    p->set_entry(l.entry);
    for (int d = 0; d < 3; ++d) {
      p->add_grid(l.grid[d]);
      p->add_block(l.block[d]);
    }
  }
}

std::vector<KernelLaunch> LaunchesFromProto(
    const google::protobuf::RepeatedPtrField<v1::GpuLaunch>& in) {
  std::vector<KernelLaunch> out;
  for (const v1::GpuLaunch& p : in) {
    KernelLaunch l;
    l.entry = p.entry();
    for (int d = 0; d < 3 && d < p.grid_size() && d < p.block_size(); ++d) {
      l.grid[d] = p.grid(d);
      l.block[d] = p.block(d);
    }
    out.push_back(std::move(l));
  }
  return out;
}

v1::BuiltKernel KernelToProto(const BuiltKernel& k) {
  v1::BuiltKernel p;
  p.set_symbol(k.symbol);
  p.set_init_symbol(k.init_symbol);
  LaunchesToProto(k.launches, *p.mutable_launches());
  LaunchesToProto(k.init_launches, *p.mutable_init_launches());
  for (int64_t b : k.workspace_bytes) p.add_workspace_bytes(b);
  p.set_error_code(static_cast<int32_t>(k.status.code()));
  p.set_error_message(std::string(k.status.message()));
  return p;
}

BuiltKernel KernelFromProto(const v1::BuiltKernel& p) {
  BuiltKernel k;
  k.symbol = p.symbol();
  k.init_symbol = p.init_symbol();
  k.workspace_bytes.assign(p.workspace_bytes().begin(), p.workspace_bytes().end());
  k.launches = LaunchesFromProto(p.launches());
  k.init_launches = LaunchesFromProto(p.init_launches());
  k.status = absl::Status(static_cast<absl::StatusCode>(p.error_code()), p.error_message());
  return k;
}

v1::KernelMeasurement ToProto(const Measurement& m) {
  v1::KernelMeasurement p;
  p.set_error_code(static_cast<int32_t>(m.status.code()));
  p.set_error_message(std::string(m.status.message()));
  p.set_median_ms(m.median_ms);
  p.set_p10_ms(m.p10_ms);
  p.set_p90_ms(m.p90_ms);
  p.set_min_ms(m.min_ms);
  p.set_repeats(m.repeats);
  p.set_max_abs_error(m.max_abs_error);
  return p;
}

Measurement FromProto(const v1::KernelMeasurement& p) {
  Measurement m;
  m.status = absl::Status(static_cast<absl::StatusCode>(p.error_code()), p.error_message());
  m.median_ms = p.median_ms();
  m.p10_ms = p.p10_ms();
  m.p90_ms = p.p90_ms();
  m.min_ms = p.min_ms();
  m.repeats = p.repeats();
  m.max_abs_error = p.max_abs_error();
  return m;
}

}  // namespace

v1::CandidateBatch BatchToProto(const loop::Func& lowered, const CandidateBatch& batch) {
  v1::CandidateBatch p;
  p.set_workload(CanonicalWorkloadText(lowered));
  p.set_code_format(batch.ptx ? kPtx : kElfSharedObject);
  p.set_code(batch.code);
  *p.mutable_reference() = KernelToProto(batch.reference);
  for (const BuiltKernel& k : batch.candidates) *p.add_candidates() = KernelToProto(k);
  return p;
}

v1::MeasureOptions MeasureOptionsToProto(const MeasureOptions& o) {
  v1::MeasureOptions p;
  p.set_num_threads(o.num_threads);
  p.set_warmup_runs(o.warmup_runs);
  p.set_min_repeats(o.min_repeats);
  p.set_max_repeats(o.max_repeats);
  p.set_min_measure_ms(o.min_measure_ms);
  p.set_timeout_s(o.timeout_s);
  p.set_atol(o.atol);
  p.set_rtol(o.rtol);
  p.set_input_seed(o.input_seed);
  p.set_cache_flush_bytes(o.cache_flush_bytes);
  p.set_device(o.device);
  return p;
}

MeasureOptions MeasureOptionsFromProto(const v1::MeasureOptions& p) {
  MeasureOptions o;
  o.num_threads = std::max(1, p.num_threads());
  o.warmup_runs = std::max(0, p.warmup_runs());
  o.min_repeats = std::max(1, p.min_repeats());
  o.max_repeats = std::max(o.min_repeats, p.max_repeats());
  o.min_measure_ms = std::max(0.0, p.min_measure_ms());
  o.timeout_s = p.timeout_s() > 0 ? p.timeout_s() : 10;
  o.atol = p.atol() > 0 ? p.atol() : 1e-4;
  o.rtol = p.rtol() > 0 ? p.rtol() : 1e-3;
  o.input_seed = p.input_seed();
  // Bounded: a flush larger than 1 GiB is a mistake, not a cache.
  o.cache_flush_bytes = std::clamp<int64_t>(p.cache_flush_bytes(), 0, int64_t{1} << 30);
  o.device = std::max(0, p.device());
  return o;
}

v1::BatchMeasurement MeasurementToProto(const BatchMeasurement& m) {
  v1::BatchMeasurement p;
  *p.mutable_reference() = ToProto(m.reference);
  for (const Measurement& c : m.candidates) *p.add_candidates() = ToProto(c);
  return p;
}

BatchMeasurement MeasurementFromProto(const v1::BatchMeasurement& p) {
  BatchMeasurement m;
  m.reference = FromProto(p.reference());
  for (const v1::KernelMeasurement& c : p.candidates()) m.candidates.push_back(FromProto(c));
  return m;
}

absl::StatusOr<v1::BatchMeasurement> RunBatchMessage(const v1::CandidateBatch& batch,
                                                     const v1::MeasureOptions& options) {
  if (batch.code_format() != kElfSharedObject && batch.code_format() != kPtx) {
    return absl::InvalidArgumentError(absl::StrCat("code format '", batch.code_format(),
                                                   "' is neither '", kElfSharedObject, "' nor '",
                                                   kPtx, "'"));
  }
  absl::StatusOr<loop::Func> workload = loop::ParseFunc(batch.workload());
  if (!workload.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("workload does not parse: ", workload.status().message()));
  }
  CandidateBatch built;
  built.code = batch.code();
  built.ptx = batch.code_format() == kPtx;
  built.reference = KernelFromProto(batch.reference());
  for (const v1::BuiltKernel& k : batch.candidates()) built.candidates.push_back(KernelFromProto(k));
  absl::StatusOr<BatchMeasurement> m =
      RunCandidates(*workload, built, MeasureOptionsFromProto(options));
  if (!m.ok()) return m.status();
  return MeasurementToProto(*m);
}

}  // namespace kiln::tuning
