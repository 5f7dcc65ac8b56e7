// Options that compile alike hash alike; options that do not, do not.
#include "wire/options.h"

#include "gtest/gtest.h"

namespace kiln::wire {
namespace {

TEST(OptionsTest, OptionsHashIsCanonical) {
  v1::CompileOptions a, b, empty;
  a.add_disabled_passes("fusion");
  a.add_disabled_passes("cse");
  b.add_disabled_passes("cse");
  b.add_disabled_passes("fusion");
  b.add_disabled_passes("cse");
  EXPECT_EQ(OptionsHash(a), OptionsHash(b));
  EXPECT_NE(OptionsHash(a), OptionsHash(empty));
  EXPECT_EQ(OptionsHash(empty).size(), 64u);
}

TEST(OptionsTest, Fp32IsTheDefault) {
  v1::CompileOptions fp32, fp16;
  fp32.set_precision("fp32");
  fp16.set_precision("fp16");
  EXPECT_EQ(OptionsHash(fp32), OptionsHash({}));
  EXPECT_NE(OptionsHash(fp16), OptionsHash({}));
}

TEST(OptionsTest, InputsSortByNameProfilesKeepTheirOrder) {
  v1::CompileOptions a;
  a.add_input_shapes()->set_name("y");
  v1::InputShape* x1 = a.add_input_shapes();
  x1->set_name("x");
  x1->add_dims(1);
  v1::InputShape* x8 = a.add_input_shapes();
  x8->set_name("x");
  x8->add_dims(8);
  v1::CompileOptions c = CanonicalOptions(a);
  ASSERT_EQ(c.input_shapes_size(), 3);
  EXPECT_EQ(c.input_shapes(0).dims(0), 1);
  EXPECT_EQ(c.input_shapes(1).dims(0), 8);
  EXPECT_EQ(c.input_shapes(2).name(), "y");
  v1::CompileOptions swapped = a;
  swapped.mutable_input_shapes()->SwapElements(1, 2);
  EXPECT_NE(OptionsHash(a), OptionsHash(swapped));  // profile order is meaningful
}

TEST(OptionsTest, OnlyWhatShapesTheArtifactOfARecordCounts) {
  v1::CompileOptions a, b;
  v1::TuningRecord* r = a.add_records();
  r->set_workload_key("w");
  r->set_schedule("s");
  *b.add_records() = *r;
  b.mutable_records(0)->set_measured_unix_ms(12345);
  EXPECT_EQ(OptionsHash(a), OptionsHash(b));
  b.mutable_records(0)->set_schedule("t");
  EXPECT_NE(OptionsHash(a), OptionsHash(b));
}

}  // namespace
}  // namespace kiln::wire
