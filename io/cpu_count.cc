#include "io/cpu_count.h"

#include <sched.h>

#include <algorithm>

namespace shardis::io {

CpuBudget DetectCpuBudget(const CgroupPaths& paths) {
  CpuBudget budget;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    budget.affinity_cpus = std::max(1, CPU_COUNT(&set));
  }
  budget.quota_cpus = CgroupCpuQuota(paths);
  budget.threads = ThreadsForQuota(budget.quota_cpus, budget.affinity_cpus);
  return budget;
}

}  // namespace shardis::io
