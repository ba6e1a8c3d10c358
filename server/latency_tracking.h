// Redis' latency-tracking and latency-tracking-info-percentiles: whether each call's duration goes
// into its command's histogram (RecordCall), and which percentiles INFO latencystats shows.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <absl/status/statusor.h>

namespace shardis::server {

// Read once per command on every thread: a relaxed atomic.
bool LatencyTracking();
void SetLatencyTracking(bool on);

// Behind a mutex: read by INFO and CONFIG GET only.
std::vector<double> LatencyPercentiles();
void SetLatencyPercentiles(std::vector<double> percentiles);

// CONFIG SET's value: percentiles separated by single spaces, each 0..100; "" is none. The error
// is Redis' text.
absl::StatusOr<std::vector<double>> ParseLatencyPercentiles(std::string_view text);
// As Redis shows a percentile ("%f" without trailing zeros: 50, 99.9) and the list.
std::string FormatPercentile(double percentile);
std::string FormatLatencyPercentiles(const std::vector<double>& percentiles);

}  // namespace shardis::server
