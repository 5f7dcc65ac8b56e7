// Parser for the text form of a schedule (Schedule::ToString), so that schedules can live in
// files, tuning records and golden tests as text: print → parse → print is the identity.
#ifndef KILN_COMPILER_CORE_SCHEDULE_SCHEDULE_PARSER_H_
#define KILN_COMPILER_CORE_SCHEDULE_SCHEDULE_PARSER_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "compiler_core/schedule/schedule.h"

namespace kiln::schedule {

/// Parses one step per line, as ToString prints them:
///
///   split(ow, 16)
///   reorder(n, oc, oh, ow.o, ic, ow.i)
///   fuse(n, oc)
///   vectorize(ow.i)
///
/// Steps may also be separated by ';' (for schedules given inline on a command line); blank
/// lines and whole lines starting with `//` are ignored. Only the syntax is checked here: each
/// step names at least one loop and split ends with its integer factor; whether the step is
/// legal for a func is ApplySchedule's business.
/// Errors: kInvalidArgument "LINE:COL: expected ..., got ..." (1-based), e.g. for an unknown
/// primitive, a missing parenthesis or a split without a factor.
absl::StatusOr<Schedule> ParseSchedule(std::string_view text);

}  // namespace kiln::schedule

#endif  // KILN_COMPILER_CORE_SCHEDULE_SCHEDULE_PARSER_H_
