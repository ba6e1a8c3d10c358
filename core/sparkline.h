// A text sparkline as Redis' LATENCY GRAPH draws one (its sparkline.c, in "fill" mode): a few rows
// of bars over the samples, each sample's label written downward beneath its column.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace shardis::core {

struct SparklineSample {
  double value = 0;
  std::string_view label;  // may be empty
};

// Appends the sparkline of `samples` to *out: `rows` rows of bar characters, scaled between the
// smallest and the largest value, each bar three steps per row ('_', 'o', '#', '|' below a
// taller bar's top); then, when some sample has a label, one blank row and the labels' characters
// one per row; each row ends with '\n'. More samples than `columns` are drawn in blocks of
// `columns`, separated by an empty line.
void RenderSparkline(std::span<const SparklineSample> samples, int columns, int rows,
                     std::string* out);

}  // namespace shardis::core
