// Shard's memory figures (INFO memory's used_memory_startup and used_memory_dataset): what a new
// shard holds, and how the keys' and values' blocks on its heap come and go.
#include "shard/shard.h"

#include <gtest/gtest.h>

#include <string>

namespace shardis::shard {
namespace {

using core::HashBytes;

constexpr int64_t kNow = 1'000'000;

void Set(Shard& s, const std::string& key, size_t value_bytes) {
  bool inserted;
  Db& db = s.db(0);
  db.FindOrInsert(key, HashBytes(key), kNow, &inserted).value().SetString(
      std::string(value_bytes, 'v'));
}

TEST(ShardMemoryTest, StartupIsTheEmptyShardAndDatasetItsValues) {
  Shard s(0);
  EXPECT_EQ(s.startup_memory(), s.used_memory());  // nothing stored yet
  EXPECT_GE(s.startup_memory(), sizeof(Shard));    // and its (empty) tables
  EXPECT_EQ(s.dataset_memory(), 0u);
  for (int i = 0; i < 100; ++i) Set(s, "key:" + std::to_string(i), 1000);
  // Each value is a block of its own on the heap: at least its bytes.
  EXPECT_GE(s.dataset_memory(), 100u * 1000);
  EXPECT_LE(s.dataset_memory(), s.used_memory() - sizeof(Shard));
  const size_t startup = s.startup_memory();
  for (int i = 0; i < Shard::kNumDbs; ++i) s.db(i).Clear();
  EXPECT_EQ(s.dataset_memory(), 0u);
  EXPECT_EQ(s.startup_memory(), startup);  // a figure of the start, whatever came after
}

}  // namespace
}  // namespace shardis::shard
