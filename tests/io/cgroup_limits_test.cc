// cgroup v1/v2 limits read from fake hierarchies built in a temporary directory.
#include "io/cgroup_limits.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace shardis::io {
namespace {

namespace fs = std::filesystem;

class CgroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "cgroup_test_XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    paths_.root = (dir_ / "sys/fs/cgroup").string();
    paths_.self_cgroup = (dir_ / "proc_self_cgroup").string();
    fs::create_directories(paths_.root);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes `content` to root/relative, creating the directories.
  void Write(const std::string& relative, const std::string& content) {
    const fs::path path = fs::path(paths_.root) / relative;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << content;
  }
  void SelfCgroup(const std::string& content) { std::ofstream(paths_.self_cgroup) << content; }

  fs::path dir_;
  CgroupPaths paths_;
};

TEST_F(CgroupTest, NothingMeansNoLimits) {
  EXPECT_EQ(CgroupCpuQuota(paths_), 0);
  EXPECT_EQ(CgroupMemoryLimit(paths_), 0u);
}

TEST_F(CgroupTest, V2UnlimitedCpuAndMemory) {
  SelfCgroup("0::/\n");
  Write("cpu.max", "max 100000\n");
  Write("memory.max", "max\n");
  EXPECT_EQ(CgroupCpuQuota(paths_), 0);
  EXPECT_EQ(CgroupMemoryLimit(paths_), 0u);
}

TEST_F(CgroupTest, V2QuotaAndMemoryAtTheRoot) {
  SelfCgroup("0::/\n");
  Write("cpu.max", "150000 100000\n");
  Write("memory.max", "2147483648\n");
  EXPECT_DOUBLE_EQ(CgroupCpuQuota(paths_), 1.5);
  EXPECT_EQ(ThreadsForQuota(CgroupCpuQuota(paths_), 8), 2u);
  EXPECT_EQ(CgroupMemoryLimit(paths_), 2147483648u);
}

TEST_F(CgroupTest, V2NestedParentIsTighter) {
  SelfCgroup("0::/kubepods/pod1/ctr\n");
  Write("kubepods/pod1/ctr/cpu.max", "400000 100000\n");
  Write("kubepods/pod1/ctr/memory.max", "max\n");
  Write("kubepods/pod1/cpu.max", "200000 100000\n");
  Write("kubepods/pod1/memory.max", "1073741824\n");
  Write("kubepods/memory.max", "4294967296\n");
  Write("cpu.max", "max 100000\n");
  EXPECT_DOUBLE_EQ(CgroupCpuQuota(paths_), 2.0);
  EXPECT_EQ(ThreadsForQuota(CgroupCpuQuota(paths_), 8), 2u);
  EXPECT_EQ(CgroupMemoryLimit(paths_), 1073741824u);
}

TEST_F(CgroupTest, V2ChildIsTighter) {
  SelfCgroup("0::/a/b\n");
  Write("a/b/cpu.max", "50000 100000\n");
  Write("a/cpu.max", "300000 100000\n");
  Write("a/b/memory.max", "104857600\n");
  Write("a/memory.max", "max\n");
  EXPECT_DOUBLE_EQ(CgroupCpuQuota(paths_), 0.5);
  EXPECT_EQ(ThreadsForQuota(CgroupCpuQuota(paths_), 4), 1u);
  EXPECT_EQ(CgroupMemoryLimit(paths_), 104857600u);
}

TEST_F(CgroupTest, V1UnlimitedQuotaAndHugeMemoryLimit) {
  SelfCgroup("12:memory:/\n11:cpu,cpuacct:/\n0::/\n");
  Write("cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
  Write("cpu,cpuacct/cpu.cfs_period_us", "100000\n");
  Write("memory/memory.limit_in_bytes", "9223372036854771712\n");
  EXPECT_EQ(CgroupCpuQuota(paths_), 0);
  EXPECT_EQ(CgroupMemoryLimit(paths_), 0u);
}

TEST_F(CgroupTest, V1QuotaAndMemory) {
  SelfCgroup("12:memory:/docker/abc\n11:cpu,cpuacct:/docker/abc\n");
  Write("cpu/docker/abc/cpu.cfs_quota_us", "250000\n");
  Write("cpu/docker/abc/cpu.cfs_period_us", "100000\n");
  Write("memory/docker/abc/memory.limit_in_bytes", "536870912\n");
  Write("memory/memory.limit_in_bytes", "9223372036854771712\n");
  EXPECT_DOUBLE_EQ(CgroupCpuQuota(paths_), 2.5);
  EXPECT_EQ(ThreadsForQuota(CgroupCpuQuota(paths_), 16), 3u);
  EXPECT_EQ(CgroupMemoryLimit(paths_), 536870912u);
}

TEST_F(CgroupTest, V1PathNotVisibleFallsBackToTheMountRoot) {
  // A container without a cgroup namespace sees the host path, which is not mounted inside.
  SelfCgroup("4:memory:/host/path\n3:cpu:/host/path\n");
  Write("cpu/cpu.cfs_quota_us", "100000\n");
  Write("cpu/cpu.cfs_period_us", "100000\n");
  Write("memory/memory.limit_in_bytes", "268435456\n");
  EXPECT_DOUBLE_EQ(CgroupCpuQuota(paths_), 1.0);
  EXPECT_EQ(CgroupMemoryLimit(paths_), 268435456u);
}

TEST_F(CgroupTest, ProcessResidentBytesFromStatm) {
  const std::string statm = (dir_ / "statm").string();
  std::ofstream(statm) << "5000 1200 300 10 0 900 0\n";
  EXPECT_EQ(ProcessResidentBytes(statm.c_str()), 1200u * uint64_t(sysconf(_SC_PAGESIZE)));
  std::ofstream(statm) << "garbage\n";
  EXPECT_EQ(ProcessResidentBytes(statm.c_str()), 0u);
  EXPECT_EQ(ProcessResidentBytes((dir_ / "absent").c_str()), 0u);
  EXPECT_GT(ProcessResidentBytes(), 0u);  // this process, from /proc/self/statm
}

TEST(ThreadsForQuotaTest, RoundsUpWithinTheAffinityMask) {
  EXPECT_EQ(ThreadsForQuota(0, 4), 4u);     // no quota: every CPU of the mask
  EXPECT_EQ(ThreadsForQuota(1.5, 8), 2u);   // a fraction of a CPU still gets a thread
  EXPECT_EQ(ThreadsForQuota(2.0, 8), 2u);   // an exact quota does not round up
  EXPECT_EQ(ThreadsForQuota(0.1, 8), 1u);   // at least one
  EXPECT_EQ(ThreadsForQuota(6.0, 2), 2u);   // never more than the mask allows
  EXPECT_EQ(ThreadsForQuota(1.0, 0), 1u);
}

}  // namespace
}  // namespace shardis::io
