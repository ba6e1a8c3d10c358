// INFO's instantaneous_ops_per_sec, instantaneous_input_kbps, instantaneous_output_kbps and
// instantaneous_eventloop_cycles_per_sec / _duration_usec, as
// Redis computes them (trackInstantaneousMetric): every 100 ms each thread turns the growth of its
// counters since its previous sample into a rate and keeps the last 16 rates; a thread's figure is
// their sum / 16, and INFO adds up the threads'. All state is the thread's own.
#pragma once

namespace shardis::server {

struct InstantaneousRates {
  double ops_per_sec = 0;
  double input_kbps = 0;
  double output_kbps = 0;
  // The event loop's cycles per second and the microseconds per second spent in them (a cycle as
  // io::Proactor::Stats defines it). Their ratio is the mean cycle's duration.
  double eventloop_cycles_per_sec = 0;
  double eventloop_usec_per_sec = 0;
};

// On each shard thread, every 100 ms (ShardSet's periodic hook).
void SampleInstantaneousMetrics();
// This thread's rates.
InstantaneousRates LocalInstantaneousRates();

}  // namespace shardis::server
