#include "compiler_core/runtime/chrome_trace.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

namespace kiln::runtime {
namespace {

using google::protobuf::Struct;

TEST(ChromeTraceTest, OneEventPerRunAndKernelInMicroseconds) {
  kiln::v1::Manifest m;
  m.set_model_name("squeezenet");
  m.set_target_key("cpu:znver4:x86_64-pc-linux-gnu:v512:+avx512f");
  auto* k0 = m.add_kernels();
  k0->set_symbol("kernel_0");
  k0->set_fused_ops("Conv+Relu");
  k0->set_schedule("tile(oc, 16)");
  k0->set_tuned(true);
  auto* k1 = m.add_kernels();
  k1->set_symbol("kernel_1");
  k1->set_fused_ops("GlobalAveragePool");
  std::vector<ProfiledRun> runs(2);
  runs[0] = {0.0, 1.5, {0.01, 1.0}, {0.9, 0.4}};
  runs[1] = {2.0, 1.25, {0.02, 0.95}, {0.85, 0.3}};

  Struct trace;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(ChromeTraceJson(m, runs), &trace).ok());
  const auto& events = trace.fields().at("traceEvents").list_value().values();
  ASSERT_EQ(events.size(), 6);  // run 0, its 2 kernels, run 1, its 2 kernels
  auto field = [&](int i, const std::string& name) -> const google::protobuf::Value& {
    return events[i].struct_value().fields().at(name);
  };
  EXPECT_EQ(field(0, "name").string_value(), "run 0");
  EXPECT_EQ(field(0, "ph").string_value(), "X");
  EXPECT_DOUBLE_EQ(field(0, "dur").number_value(), 1500.0);
  EXPECT_EQ(field(1, "name").string_value(), "Conv+Relu (kernel_0)");
  EXPECT_DOUBLE_EQ(field(1, "ts").number_value(), 10.0);
  EXPECT_DOUBLE_EQ(field(1, "dur").number_value(), 900.0);
  EXPECT_EQ(field(1, "args").struct_value().fields().at("schedule").string_value(), "tile(oc, 16)");
  EXPECT_EQ(field(1, "args").struct_value().fields().at("tuned").string_value(), "yes");
  EXPECT_EQ(field(2, "name").string_value(), "GlobalAveragePool (kernel_1)");
  EXPECT_DOUBLE_EQ(field(2, "ts").number_value(), 1000.0);
  EXPECT_EQ(field(3, "name").string_value(), "run 1");
  EXPECT_DOUBLE_EQ(field(3, "ts").number_value(), 2000.0);
  EXPECT_DOUBLE_EQ(field(5, "ts").number_value(), 2950.0);  // run 1 starts at 2 ms, +0.95
  EXPECT_DOUBLE_EQ(field(5, "dur").number_value(), 300.0);
  EXPECT_EQ(trace.fields().at("displayTimeUnit").string_value(), "ms");
  EXPECT_EQ(trace.fields().at("otherData").struct_value().fields().at("model").string_value(),
            "squeezenet");
}

TEST(ChromeTraceTest, KernelsPastTheManifestAreNamedByIndex) {
  kiln::v1::Manifest m;
  std::vector<ProfiledRun> runs = {{0.0, 1.0, {0.0}, {0.5}}};
  Struct trace;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(ChromeTraceJson(m, runs), &trace).ok());
  const auto& events = trace.fields().at("traceEvents").list_value().values();
  ASSERT_EQ(events.size(), 2);
  EXPECT_EQ(events[1].struct_value().fields().at("name").string_value(), "kernel 0");
}

}  // namespace
}  // namespace kiln::runtime
