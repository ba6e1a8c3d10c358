#include "server/instantaneous_metrics.h"

#include <array>
#include <cstdint>

#include "io/proactor.h"
#include "server/server_state.h"
#include "shard/shard.h"

namespace shardis::server {
namespace {

constexpr int kSamples = 16;  // Redis' STATS_METRIC_SAMPLES

struct Metric {
  std::array<double, kSamples> rates{};
  int next = 0;
  uint64_t last_reading = 0;

  void Sample(uint64_t reading, int64_t elapsed_ms) {
    rates[next] = elapsed_ms > 0 ? double(reading - last_reading) * 1000 / double(elapsed_ms) : 0;
    next = (next + 1) % kSamples;
    last_reading = reading;
  }
  double Average() const {
    double sum = 0;
    for (double r : rates) sum += r;
    return sum / kSamples;
  }
};

struct ThreadRates {
  bool started = false;
  int64_t last_ms = 0;
  Metric ops, input, output, cycles, cycle_ns;
};

thread_local ThreadRates tl_rates;

}  // namespace

void SampleInstantaneousMetrics() {
  ThreadRates& t = tl_rates;
  const ThreadStats& stats = ServerThreadState::current().stats();
  const io::Proactor::Stats& loop = io::Proactor::current()->stats();
  const int64_t now = shard::NowMs();
  if (!t.started) {
    // The first call only takes the readings: there is no interval yet.
    t.started = true;
    t.ops.last_reading = stats.commands_processed;
    t.input.last_reading = stats.net.bytes_in;
    t.output.last_reading = stats.net.bytes_out;
    t.cycles.last_reading = loop.cycles;
    t.cycle_ns.last_reading = loop.cycle_ns_sum;
  } else {
    const int64_t elapsed = now - t.last_ms;
    // CONFIG RESETSTAT zeroes the counters: start over rather than report a wrapped difference.
    if (stats.commands_processed < t.ops.last_reading) t.ops.last_reading = 0;
    if (stats.net.bytes_in < t.input.last_reading) t.input.last_reading = 0;
    if (stats.net.bytes_out < t.output.last_reading) t.output.last_reading = 0;
    if (loop.cycles < t.cycles.last_reading) t.cycles.last_reading = t.cycle_ns.last_reading = 0;
    t.ops.Sample(stats.commands_processed, elapsed);
    t.input.Sample(stats.net.bytes_in, elapsed);
    t.output.Sample(stats.net.bytes_out, elapsed);
    t.cycles.Sample(loop.cycles, elapsed);
    t.cycle_ns.Sample(loop.cycle_ns_sum, elapsed);
  }
  t.last_ms = now;
}

InstantaneousRates LocalInstantaneousRates() {
  const ThreadRates& t = tl_rates;
  return {t.ops.Average(), t.input.Average() / 1024, t.output.Average() / 1024,
          t.cycles.Average(), t.cycle_ns.Average() / 1000};
}

}  // namespace shardis::server
