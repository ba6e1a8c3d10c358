// What the cgroup (v1 or v2) of this process allows: its CPU quota and its memory limit. The
// files are read from a root that tests can move (CgroupPaths), so that unit tests feed fake
// hierarchies from a temporary directory.
//
// The cgroup of the process comes from /proc/self/cgroup ("0::/path" for v2, "N:controllers:/path"
// for v1). Limits are read at that path under the root and at every ancestor up to the root
// (a parent's limit binds its children); the tightest one wins. In a container with its own cgroup
// namespace the path is "/", so the root's files are the container's.
#pragma once

#include <cstdint>
#include <string>

namespace shardis::io {

struct CgroupPaths {
  std::string root = "/sys/fs/cgroup";        // v2 mount, or the parent of the v1 controllers
  std::string self_cgroup = "/proc/self/cgroup";
};

// The CPU quota in CPUs (quota / period), 0 when unlimited. cgroup v2 cpu.max ("max 100000" or
// "<quota> <period>"), else v1 cpu.cfs_quota_us / cpu.cfs_period_us (quota -1 = unlimited).
double CgroupCpuQuota(const CgroupPaths& paths = {});

// The memory limit in bytes, 0 when unlimited. cgroup v2 memory.max ("max" or bytes), else v1
// memory.limit_in_bytes (values of 2^60 and more, e.g. 9223372036854771712, mean unlimited).
uint64_t CgroupMemoryLimit(const CgroupPaths& paths = {});

// The resident memory of this process in bytes (the second field of /proc/self/statm, in pages),
// what the memory cgroup charges besides page cache; 0 when it cannot be read. One open and read
// of a small file: for a periodic sample, not per command.
uint64_t ProcessResidentBytes(const char* statm = "/proc/self/statm");

// The shard threads a quota allows, given the CPUs of the affinity mask: the quota rounded up
// (1.5 CPUs -> 2 threads: a thread that gets a fraction of a CPU still serves its shard, while
// rounding down would leave paid-for CPU time idle), at least 1, at most affinity_cpus.
// quota_cpus == 0 (no quota) -> affinity_cpus.
unsigned ThreadsForQuota(double quota_cpus, unsigned affinity_cpus);

}  // namespace shardis::io
