// The kiln CLI's parsed command line: error printers and the values of its flags.
#include "client/args.h"

#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/command_line.h"

namespace kiln::client {

int Fail(const std::string& message) {
  std::cerr << "kiln: " << message << "\n";
  return 1;
}

int FailStatus(const absl::Status& status) {
  return Fail(absl::StrCat(absl::StatusCodeToString(status.code()), ": ", status.message()));
}

int FailUsage(const Args& args, const std::string& message) {
  return UsageError(absl::StrCat("kiln ", args.command), message);
}

std::vector<std::string> SplitAll(const Args& args, const std::string& flag) {
  std::vector<std::string> out;
  for (const std::string& p : args.GetAll(flag)) {
    for (absl::string_view part : absl::StrSplit(p, ',')) out.emplace_back(part);
  }
  return out;
}

absl::StatusOr<importer::ShapeProfiles> ShapeProfilesFrom(const Args& args,
                                                          importer::InputShapes* min_shapes) {
  std::vector<importer::NamedShape> given;
  for (const std::string& spec : args.GetAll("--input-shape")) {
    absl::Status parsed = importer::ParseInputShape(spec, given, min_shapes);
    if (!parsed.ok()) return parsed;
  }
  if (min_shapes != nullptr) return importer::BoundedProfilesOf(given, *min_shapes);
  return importer::ProfilesOf(given);
}

absl::StatusOr<std::map<std::string, std::string>> ConstantInputsFrom(const Args& args) {
  std::map<std::string, std::string> constants;
  for (const std::string& spec : args.GetAll("--constant-input")) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--constant-input '", spec, "': expected NAME=FILE.pb"));
    }
    const std::string name = spec.substr(0, eq), path = spec.substr(eq + 1);
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      return absl::NotFoundError(
          absl::StrCat("--constant-input ", name, ": cannot read '", path, "'"));
    }
    std::stringstream bytes;
    bytes << in.rdbuf();
    if (!constants.emplace(name, bytes.str()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("--constant-input ", name, " is given twice"));
    }
  }
  return constants;
}

absl::StatusOr<importer::InputShapes> OneShapeProfileFrom(const Args& args,
                                                          const std::string& command,
                                                          importer::InputShapes* min_shapes) {
  absl::StatusOr<importer::ShapeProfiles> profiles = ShapeProfilesFrom(args, min_shapes);
  if (!profiles.ok()) return profiles.status();
  return importer::SingleProfile(*profiles, command);
}

}  // namespace kiln::client
