// The CLI's --json output: one JSON object per command, printed by protobuf's JSON printer from
// a service response message or from a google::protobuf::Struct built with the helpers below.
#ifndef KILN_CLIENT_JSON_H_
#define KILN_CLIENT_JSON_H_

#include <google/protobuf/message.h>
#include <google/protobuf/struct.pb.h>

#include <string>
#include <vector>

namespace kiln::client {

/// `message` as one line of JSON (protobuf's JSON printer, as MessageToJsonString): field names
/// as the .proto spells them, every field printed (zeros, empty strings and lists too), enums
/// by name, 64-bit integers as strings (proto3's JSON mapping). A google::protobuf::Struct
/// prints as the object it holds, its keys sorted. Should the printer fail, the object
/// {"json_error": "<why>"}.
std::string ToJson(const google::protobuf::Message& message);

/// Struct-building helpers: each sets field `key` of `object`, replacing an earlier value.
void SetString(google::protobuf::Struct& object, const std::string& key, const std::string& value);
/// A number; NaN and the infinities, which JSON has no number for, become the strings "NaN",
/// "Infinity" and "-Infinity" (as proto3 prints a double field). Integers print exactly up to
/// 2^53.
void SetNumber(google::protobuf::Struct& object, const std::string& key, double value);
void SetBool(google::protobuf::Struct& object, const std::string& key, bool value);
void SetObject(google::protobuf::Struct& object, const std::string& key,
               google::protobuf::Struct value);
/// A list of objects.
void SetList(google::protobuf::Struct& object, const std::string& key,
             std::vector<google::protobuf::Struct> items);
/// A list of numbers (as SetNumber).
void SetNumbers(google::protobuf::Struct& object, const std::string& key,
                const std::vector<double>& items);
/// A list of strings.
void SetStrings(google::protobuf::Struct& object, const std::string& key,
                const std::vector<std::string>& items);

}  // namespace kiln::client

#endif  // KILN_CLIENT_JSON_H_
