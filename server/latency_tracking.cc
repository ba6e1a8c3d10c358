#include "server/latency_tracking.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <utility>

#include "core/number.h"
#include "core/string_util.h"

namespace shardis::server {

namespace {

std::atomic<bool> g_latency_tracking{true};

struct Percentiles {
  std::mutex mu;
  std::vector<double> values{50, 99, 99.9};  // Redis' default
};

Percentiles& ThePercentiles() {
  static Percentiles* p = new Percentiles();
  return *p;
}

}  // namespace

bool LatencyTracking() { return g_latency_tracking.load(std::memory_order_relaxed); }
void SetLatencyTracking(bool on) { g_latency_tracking.store(on, std::memory_order_relaxed); }

std::vector<double> LatencyPercentiles() {
  Percentiles& p = ThePercentiles();
  std::lock_guard lock(p.mu);
  return p.values;
}

void SetLatencyPercentiles(std::vector<double> percentiles) {
  Percentiles& p = ThePercentiles();
  std::lock_guard lock(p.mu);
  p.values = std::move(percentiles);
}

absl::StatusOr<std::vector<double>> ParseLatencyPercentiles(std::string_view text) {
  std::vector<double> out;
  if (text.empty()) return out;
  for (size_t start = 0;;) {
    const size_t end = std::min(text.find(' ', start), text.size());
    double d;
    if (!core::ParseDouble(text.substr(start, end - start), &d)) {
      return absl::InvalidArgumentError("Invalid latency-tracking-info-percentiles parameters");
    }
    if (d > 100.0 || d < 0.0) {
      return absl::InvalidArgumentError(
          "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]");
    }
    out.push_back(d);
    if (end == text.size()) return out;
    start = end + 1;
  }
}

std::string FormatPercentile(double percentile) {
  char buf[64];
  std::string s(buf, size_t(std::snprintf(buf, sizeof(buf), "%f", percentile)));
  if (s.find('.') != std::string::npos) {
    s.erase(s.find_last_not_of('0') + 1);
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

std::string FormatLatencyPercentiles(const std::vector<double>& percentiles) {
  std::string out;
  for (double p : percentiles) core::Append(&out, out.empty() ? "" : " ", FormatPercentile(p));
  return out;
}

}  // namespace shardis::server
