#include "client/run_timing.h"

#include <gtest/gtest.h>

namespace kiln::client {
namespace {

TEST(RunTimingTest, NearestRankPercentiles) {
  LatencyStats s = Summarize({5, 1, 4, 2, 3, 10, 9, 8, 7, 6});
  EXPECT_EQ(s.runs, 10);
  EXPECT_DOUBLE_EQ(s.min_ms, 1);
  EXPECT_DOUBLE_EQ(s.max_ms, 10);
  EXPECT_DOUBLE_EQ(s.median_ms, 5);  // rank ceil(0.5 * 10) = 5
  EXPECT_DOUBLE_EQ(s.p90_ms, 9);     // rank ceil(0.9 * 10) = 9
  EXPECT_DOUBLE_EQ(s.mean_ms, 5.5);
  LatencyStats one = Summarize({2.5});
  EXPECT_DOUBLE_EQ(one.median_ms, 2.5);
  EXPECT_DOUBLE_EQ(one.p90_ms, 2.5);
  LatencyStats odd = Summarize({3, 1, 2});
  EXPECT_DOUBLE_EQ(odd.median_ms, 2);
  EXPECT_DOUBLE_EQ(odd.p90_ms, 3);
}

TEST(RunTimingTest, Format) {
  EXPECT_EQ(FormatLatency(Summarize({1, 2, 3}), 2),
            "median 2.000 ms, p90 3.000 ms (min 1.000, max 3.000, mean 2.000; 3 runs after 2 "
            "warm-up)");
}

}  // namespace
}  // namespace kiln::client
