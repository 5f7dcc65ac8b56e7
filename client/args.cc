// Command-line parsing for the kiln CLI.
#include "client/args.h"

#include <fstream>
#include <sstream>

#include <algorithm>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace kiln::client {

int Fail(const std::string& message) {
  std::cerr << "kiln: " << message << "\n";
  return 1;
}

int FailStatus(const absl::Status& status) {
  return Fail(absl::StrCat(absl::StatusCodeToString(status.code()), ": ", status.message()));
}

Args ParseArgs(int argc, char** argv, int first, const std::vector<std::string>& value_flags,
               const std::vector<std::string>& bool_flags) {
  Args args;
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("-", 0) != 0 || a == "-") {
      args.positional.push_back(a);
      continue;
    }
    std::string name = a, value;
    if (std::find(bool_flags.begin(), bool_flags.end(), a) != bool_flags.end()) {
      args.flags.insert({name, "true"});
      continue;
    }
    const size_t eq = a.find('=');
    if (eq != std::string::npos) name = a.substr(0, eq);
    // An unknown flag is reported as such wherever it stands (not as one missing its value).
    const bool known =
        std::find(value_flags.begin(), value_flags.end(), name) != value_flags.end() ||
        (std::find(value_flags.begin(), value_flags.end(), "--server") != value_flags.end() &&
         std::find(std::begin(kConnectionFlags), std::end(kConnectionFlags), name) !=
             std::end(kConnectionFlags));
    if (!known) {
      args.error = absl::StrCat("unknown flag ", name);
      return args;
    }
    if (eq != std::string::npos) {
      value = a.substr(eq + 1);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      args.error = absl::StrCat("flag ", a, " needs a value");
      return args;
    }
    args.flags.insert({name, value});
  }
  return args;
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
