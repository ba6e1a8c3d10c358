// How many CPUs this process may really use: the affinity mask, capped by the cgroup CPU quota
// (see cgroup_limits.h for how the quota is read and rounded). A pod limited to 2.5 CPUs gets 3
// threads.
#pragma once

#include "io/cgroup_limits.h"

namespace shardis::io {

struct CpuBudget {
  unsigned affinity_cpus = 1;  // CPUs in sched_getaffinity
  double quota_cpus = 0;       // cgroup quota in CPUs, 0 when unlimited
  unsigned threads = 1;        // what we run: ThreadsForQuota(quota, affinity)
};

CpuBudget DetectCpuBudget(const CgroupPaths& paths = {});

}  // namespace shardis::io
