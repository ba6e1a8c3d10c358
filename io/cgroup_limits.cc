#include "io/cgroup_limits.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace shardis::io {

namespace {

// Values at or above this mean "no limit" in cgroup v1 (PAGE_COUNTER_MAX rounded to pages is
// 0x7FFFFFFFFFFFF000 on 64-bit; no machine has 2^60 bytes).
constexpr uint64_t kV1Unlimited = uint64_t{1} << 60;

// The cgroup path of this process for cgroup v2 ("0::/path"), or for the v1 hierarchy that has
// `controller` ("N:cpu,cpuacct:/path"). nullopt when there is no such line.
std::optional<std::string> SelfPath(const CgroupPaths& paths, const std::string& controller) {
  std::ifstream in(paths.self_cgroup);
  std::string line;
  while (std::getline(in, line)) {
    const size_t first = line.find(':');
    const size_t second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (controller.empty()) {
      if (line.compare(0, first, "0") == 0 && controllers.empty()) return path;
      continue;
    }
    size_t pos = 0;
    while (pos <= controllers.size()) {
      size_t comma = controllers.find(',', pos);
      if (comma == std::string::npos) comma = controllers.size();
      if (controllers.compare(pos, comma - pos, controller) == 0) return path;
      pos = comma + 1;
    }
  }
  return std::nullopt;
}

// `dir` + path, then each ancestor of path, up to `dir` itself.
std::vector<std::string> SelfAndAncestors(const std::string& dir, std::string path) {
  std::vector<std::string> out;
  while (!path.empty() && path.back() == '/') path.pop_back();
  while (true) {
    out.push_back(dir + path);
    if (path.empty()) break;
    path = path.substr(0, path.rfind('/'));
  }
  return out;
}

// The directory of a v1 controller: "<root>/cpu" or a mount named after several controllers.
std::vector<std::string> V1Dirs(const CgroupPaths& paths, const std::string& controller) {
  if (controller == "cpu") return {paths.root + "/cpu", paths.root + "/cpu,cpuacct"};
  return {paths.root + "/" + controller};
}

double QuotaV2(const CgroupPaths& paths) {
  std::optional<std::string> self = SelfPath(paths, "");
  if (!self) return 0;
  double best = 0;
  for (const std::string& dir : SelfAndAncestors(paths.root, *self)) {
    std::ifstream in(dir + "/cpu.max");
    std::string quota;
    double period = 0;
    if (in >> quota >> period && quota != "max" && period > 0) {
      const double cpus = std::strtod(quota.c_str(), nullptr) / period;
      if (cpus > 0 && (best == 0 || cpus < best)) best = cpus;
    }
  }
  return best;
}

double QuotaV1(const CgroupPaths& paths) {
  const std::string self = SelfPath(paths, "cpu").value_or("");
  double best = 0;
  for (const std::string& base : V1Dirs(paths, "cpu")) {
    for (const std::string& dir : SelfAndAncestors(base, self)) {
      std::ifstream q(dir + "/cpu.cfs_quota_us");
      std::ifstream p(dir + "/cpu.cfs_period_us");
      double quota = 0, period = 0;
      if (q >> quota && p >> period && quota > 0 && period > 0) {
        if (best == 0 || quota / period < best) best = quota / period;
      }
    }
  }
  return best;
}

uint64_t MemoryV2(const CgroupPaths& paths) {
  std::optional<std::string> self = SelfPath(paths, "");
  if (!self) return 0;
  uint64_t best = 0;
  for (const std::string& dir : SelfAndAncestors(paths.root, *self)) {
    std::ifstream in(dir + "/memory.max");
    std::string value;
    if (!(in >> value) || value == "max") continue;
    const uint64_t bytes = std::strtoull(value.c_str(), nullptr, 10);
    if (bytes > 0 && (best == 0 || bytes < best)) best = bytes;
  }
  return best;
}

uint64_t MemoryV1(const CgroupPaths& paths) {
  const std::string self = SelfPath(paths, "memory").value_or("");
  uint64_t best = 0;
  for (const std::string& dir : SelfAndAncestors(paths.root + "/memory", self)) {
    std::ifstream in(dir + "/memory.limit_in_bytes");
    uint64_t bytes = 0;
    if (!(in >> bytes) || bytes == 0 || bytes >= kV1Unlimited) continue;
    if (best == 0 || bytes < best) best = bytes;
  }
  return best;
}

}  // namespace

double CgroupCpuQuota(const CgroupPaths& paths) {
  const double v2 = QuotaV2(paths);
  return v2 > 0 ? v2 : QuotaV1(paths);
}

uint64_t CgroupMemoryLimit(const CgroupPaths& paths) {
  const uint64_t v2 = MemoryV2(paths);
  return v2 > 0 ? v2 : MemoryV1(paths);
}

unsigned ThreadsForQuota(double quota_cpus, unsigned affinity_cpus) {
  const unsigned affinity = std::max(1u, affinity_cpus);
  if (quota_cpus <= 0) return affinity;
  // The epsilon keeps an exact quota (2.0000000001 from float division) from rounding up.
  const unsigned quota_threads = unsigned(std::ceil(quota_cpus - 1e-9));
  return std::max(1u, std::min(affinity, quota_threads));
}

uint64_t ProcessResidentBytes(const char* statm) {
  const int fd = open(statm, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[128];
  const ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  unsigned long long size_pages = 0, resident_pages = 0;
  if (sscanf(buf, "%llu %llu", &size_pages, &resident_pages) != 2) return 0;
  return uint64_t(resident_pages) * uint64_t(sysconf(_SC_PAGESIZE));
}

}  // namespace shardis::io
