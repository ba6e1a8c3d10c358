// How many CPUs this process may really use: the affinity mask, capped by the cgroup CPU quota
// (v2 cpu.max, or v1 cfs_quota/cfs_period), rounded up. A pod limited to 2.5 CPUs gets 3 threads.
#pragma once

namespace shardis::io {

struct CpuBudget {
  unsigned affinity_cpus = 1;  // CPUs in sched_getaffinity
  double quota_cpus = 0;       // cgroup quota in CPUs, 0 when unlimited
  unsigned threads = 1;        // what we run: min(affinity, ceil(quota))
};

CpuBudget DetectCpuBudget();

}  // namespace shardis::io
