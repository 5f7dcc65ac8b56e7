// The measure protocol's messages (proto/kiln/v1/tuning.proto) to and from the in-memory
// types of measure.h, and the measure worker's entry point: run one batch received as a
// message.
#ifndef KILN_COMPILER_CORE_TUNING_MEASURE_PROTO_H_
#define KILN_COMPILER_CORE_TUNING_MEASURE_PROTO_H_

#include "absl/status/statusor.h"
#include "compiler_core/tuning/measure.h"
#include "kiln/v1/tuning.pb.h"

namespace kiln::tuning {

/// The code format of CPU batches: an ELF shared object for the target.
inline constexpr char kElfSharedObject[] = "elf-shared-object";
inline constexpr char kPtx[] = "ptx";

/// `batch` built for workload `lowered` as a message (the workload as its canonical text).
v1::CandidateBatch BatchToProto(const loop::Func& lowered, const CandidateBatch& batch);
v1::MeasureOptions MeasureOptionsToProto(const MeasureOptions& options);
MeasureOptions MeasureOptionsFromProto(const v1::MeasureOptions& options);
v1::BatchMeasurement MeasurementToProto(const BatchMeasurement& m);
BatchMeasurement MeasurementFromProto(const v1::BatchMeasurement& m);

/// Runs a received batch on this machine (RunCandidates): parses the workload, checks that the
/// code format is one this device loads. Errors: kInvalidArgument for an unparsable workload
/// or an unknown code format (naming it); those of RunCandidates.
absl::StatusOr<v1::BatchMeasurement> RunBatchMessage(const v1::CandidateBatch& batch,
                                                     const v1::MeasureOptions& options);

}  // namespace kiln::tuning

#endif  // KILN_COMPILER_CORE_TUNING_MEASURE_PROTO_H_
