// JSON string quoting for the CLI's --json output (kiln compile/check --server, kiln tune).
#ifndef KILN_CLIENT_JSON_H_
#define KILN_CLIENT_JSON_H_

#include <string>

namespace kiln::client {

/// `s` as a JSON string literal, quotes included: '"', '\\' and control characters escaped.
std::string JsonString(const std::string& s);

}  // namespace kiln::client

#endif  // KILN_CLIENT_JSON_H_
