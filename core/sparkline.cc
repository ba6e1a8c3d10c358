#include "core/sparkline.h"

#include <algorithm>

namespace shardis::core {

namespace {

constexpr std::string_view kFill = "_o#";  // the three steps of a row, lowest first
constexpr int kSteps = int(kFill.size());
constexpr int kLabelMarginRows = 1;

// One block of samples [begin, end), scaled by the range of all of them (min, range).
void RenderBlock(std::span<const SparklineSample> block, double min, double range, int rows,
                 bool labels, std::string* out) {
  const int steps = kSteps * rows;
  for (int row = 0;; ++row) {
    std::string line(block.size(), ' ');
    bool drawn = false;
    if (row < rows) {
      drawn = !block.empty();
      for (size_t j = 0; j < block.size(); ++j) {
        // Redis truncates the scaled value before dividing, and the quotient again.
        const double scaled = double(int64_t((block[j].value - min) * steps)) / range;
        const int step = std::clamp(int(scaled), 0, steps - 1);
        const int level = step - (rows - row - 1) * kSteps;  // this row's share of the bar
        if (level >= kSteps) {
          line[j] = '|';
        } else if (level >= 0) {
          line[j] = kFill[size_t(level)];
        }
      }
    } else if (labels && row - rows < kLabelMarginRows) {
      drawn = true;  // the blank row between the bars and the labels
    } else {
      const size_t at = size_t(row - rows - kLabelMarginRows);
      for (size_t j = 0; j < block.size(); ++j) {
        if (block[j].label.size() > at) {
          line[j] = block[j].label[at];
          drawn = true;
        }
      }
    }
    if (!drawn) return;
    out->append(line);
    out->push_back('\n');
  }
}

}  // namespace

void RenderSparkline(std::span<const SparklineSample> samples, int columns, int rows,
                     std::string* out) {
  if (samples.empty()) return;
  double min = samples[0].value, max = samples[0].value;
  bool labels = false;
  for (const SparklineSample& s : samples) {
    min = std::min(min, s.value);
    max = std::max(max, s.value);
    labels = labels || !s.label.empty();
  }
  const double range = max - min == 0 ? 1 : max - min;
  for (size_t begin = 0; begin < samples.size(); begin += size_t(columns)) {
    if (begin != 0) out->push_back('\n');
    const size_t len = std::min(samples.size() - begin, size_t(columns));
    RenderBlock(samples.subspan(begin, len), min, range, rows, labels, out);
  }
}

}  // namespace shardis::core
