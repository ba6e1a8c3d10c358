#include "core/sparkline.h"

#include <gtest/gtest.h>

#include <vector>

namespace shardis::core {
namespace {

std::string Render(const std::vector<SparklineSample>& samples, int columns, int rows) {
  std::string out;
  RenderSparkline(samples, columns, rows, &out);
  return out;
}

TEST(SparklineTest, BarsThenLabelsDownward) {
  // Two rows of three steps: 0 is the lowest step, 5 of 10 the fourth ('|' below its top '_'),
  // 10 the highest. A blank row, then the labels one character per row.
  const std::vector<SparklineSample> samples = {{0, "0s"}, {5, "1s"}, {10, "22s"}};
  EXPECT_EQ(Render(samples, 80, 2), " _#\n_||\n   \n012\nss2\n  s\n");
}

TEST(SparklineTest, BlocksOfColumnsShareTheScale) {
  const std::vector<SparklineSample> samples = {{0, "0s"}, {5, "1s"}, {10, "22s"}};
  EXPECT_EQ(Render(samples, 2, 2), " _\n_|\n  \n01\nss\n\n#\n|\n \n2\n2\ns\n");
}

TEST(SparklineTest, EqualValuesAndNoLabels) {
  const std::vector<SparklineSample> samples = {{7, ""}, {7, ""}};
  EXPECT_EQ(Render(samples, 80, 3), "  \n  \n__\n");
  EXPECT_EQ(Render({}, 80, 3), "");
}

}  // namespace
}  // namespace shardis::core
