#include "io/cpu_count.h"

#include <sched.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

namespace shardis::io {

namespace {

// The cgroup v2 path of this process ("0::/path"), or empty.
std::string CgroupV2Path() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  }
  return "";
}

// cgroup v2: "max 100000" or "<quota> <period>". Walks up the hierarchy: a parent's limit counts.
double QuotaV2() {
  std::string path = CgroupV2Path();
  double best = 0;
  while (true) {
    std::ifstream in("/sys/fs/cgroup" + path + "/cpu.max");
    std::string quota;
    double period = 0;
    if (in >> quota >> period && quota != "max" && period > 0) {
      double cpus = std::stod(quota) / period;
      if (best == 0 || cpus < best) best = cpus;
    }
    if (path.empty() || path == "/") break;
    path = path.substr(0, path.rfind('/'));
  }
  return best;
}

double QuotaV1() {
  std::ifstream q("/sys/fs/cgroup/cpu/cpu.cfs_quota_us");
  std::ifstream p("/sys/fs/cgroup/cpu/cpu.cfs_period_us");
  double quota = 0, period = 0;
  if (q >> quota && p >> period && quota > 0 && period > 0) return quota / period;
  return 0;
}

}  // namespace

CpuBudget DetectCpuBudget() {
  CpuBudget budget;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    budget.affinity_cpus = std::max(1, CPU_COUNT(&set));
  }
  budget.quota_cpus = QuotaV2();
  if (budget.quota_cpus == 0) budget.quota_cpus = QuotaV1();
  budget.threads = budget.affinity_cpus;
  if (budget.quota_cpus > 0) {
    unsigned quota_threads = unsigned(std::ceil(budget.quota_cpus - 1e-9));
    budget.threads = std::max(1u, std::min(budget.threads, quota_threads));
  }
  return budget;
}

}  // namespace shardis::io
