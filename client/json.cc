// The CLI's --json output through protobuf's JSON printer.
#include "client/json.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/type_resolver_util.h>

#include <cmath>

#include "absl/strings/str_cat.h"

namespace kiln::client {
namespace {

constexpr char kTypeUrlPrefix[] = "type.googleapis.com";

}  // namespace

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = false;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  // MessageToJsonString, but over a deterministic serialization: map entries (a Struct's
  // fields) print sorted by key rather than in hash order.
  std::string binary;
  {
    google::protobuf::io::StringOutputStream stream(&binary);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&coded);
  }
  static google::protobuf::util::TypeResolver* const resolver =
      google::protobuf::util::NewTypeResolverForDescriptorPool(
          kTypeUrlPrefix, google::protobuf::DescriptorPool::generated_pool());
  std::string out;
  const auto printed = google::protobuf::util::BinaryToJsonString(
      resolver, absl::StrCat(kTypeUrlPrefix, "/", message.GetDescriptor()->full_name()), binary,
      &out, options);
  if (printed.ok()) return out;
  out.clear();
  google::protobuf::Struct error;
  SetString(error, "json_error", std::string(printed.message()));
  (void)google::protobuf::util::MessageToJsonString(error, &out, options);
  return out;
}

void SetString(google::protobuf::Struct& object, const std::string& key, const std::string& value) {
  (*object.mutable_fields())[key].set_string_value(value);
}

namespace {

/// `value` as a JSON number, or the string proto3 prints for NaN and the infinities.
void SetNumberValue(google::protobuf::Value& v, double value) {
  if (std::isnan(value)) {
    v.set_string_value("NaN");
  } else if (std::isinf(value)) {
    v.set_string_value(value > 0 ? "Infinity" : "-Infinity");
  } else {
    v.set_number_value(value);
  }
}

}  // namespace

void SetNumber(google::protobuf::Struct& object, const std::string& key, double value) {
  SetNumberValue((*object.mutable_fields())[key], value);
}

void SetNumbers(google::protobuf::Struct& object, const std::string& key,
                const std::vector<double>& items) {
  google::protobuf::ListValue* list = (*object.mutable_fields())[key].mutable_list_value();
  list->clear_values();
  for (double item : items) SetNumberValue(*list->add_values(), item);
}

void SetBool(google::protobuf::Struct& object, const std::string& key, bool value) {
  (*object.mutable_fields())[key].set_bool_value(value);
}

void SetObject(google::protobuf::Struct& object, const std::string& key,
               google::protobuf::Struct value) {
  *(*object.mutable_fields())[key].mutable_struct_value() = std::move(value);
}

void SetList(google::protobuf::Struct& object, const std::string& key,
             std::vector<google::protobuf::Struct> items) {
  google::protobuf::ListValue* list = (*object.mutable_fields())[key].mutable_list_value();
  list->clear_values();
  for (google::protobuf::Struct& item : items) {
    *list->add_values()->mutable_struct_value() = std::move(item);
  }
}

void SetStrings(google::protobuf::Struct& object, const std::string& key,
                const std::vector<std::string>& items) {
  google::protobuf::ListValue* list = (*object.mutable_fields())[key].mutable_list_value();
  list->clear_values();
  for (const std::string& item : items) list->add_values()->set_string_value(item);
}

}  // namespace kiln::client
