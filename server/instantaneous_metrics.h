// INFO's instantaneous_ops_per_sec, instantaneous_input_kbps and instantaneous_output_kbps, as
// Redis computes them (trackInstantaneousMetric): every 100 ms each thread turns the growth of its
// counters since its previous sample into a rate and keeps the last 16 rates; a thread's figure is
// their sum / 16, and INFO adds up the threads'. All state is the thread's own.
#pragma once

namespace shardis::server {

struct InstantaneousRates {
  double ops_per_sec = 0;
  double input_kbps = 0;
  double output_kbps = 0;
};

// On each shard thread, every 100 ms (ShardSet's periodic hook).
void SampleInstantaneousMetrics();
// This thread's rates.
InstantaneousRates LocalInstantaneousRates();

}  // namespace shardis::server
