#include "shard/transaction.h"

#include <algorithm>

#include "core/compact_value.h"
#include "shard/shard_set.h"

namespace shardis::shard {

Transaction::Transaction(int db_index, std::span<const std::string_view> keys, Mode mode,
                         Transaction* outer)
    : db_index_(db_index), mode_(mode), outer_(outer), keys_(keys) {
  ShardSet& ss = *shard_set;
  by_shard_.resize(ss.size());
  hashes_.resize(keys.size());
  shard_of_.resize(keys.size());
  for (uint32_t i = 0; i < keys.size(); ++i) {
    const uint64_t h = hashes_[i] = core::HashBytes(keys[i]);
    const unsigned sid = shard_of_[i] = ss.ShardOf(keys[i], h);
    by_shard_[sid].push_back(i);
  }
  for (unsigned sid = 0; sid < ss.size(); ++sid) {
    if (!by_shard_[sid].empty()) shards_.push_back(sid);
  }
}

Transaction::Transaction(int db_index, AllShards, Mode mode, Transaction* outer)
    : db_index_(db_index), mode_(mode), all_shards_(true), outer_(outer) {
  ShardSet& ss = *shard_set;
  by_shard_.resize(ss.size());
  for (unsigned sid = 0; sid < ss.size(); ++sid) shards_.push_back(sid);
}

Transaction::~Transaction() { Conclude(); }

void Transaction::Conclude() {}

void Transaction::Run(absl::FunctionRef<void(TxShard&)> fn) { RunOnShards(shards_, fn); }

void Transaction::RunOn(unsigned sid, absl::FunctionRef<void(TxShard&)> fn) {
  DCHECK(std::binary_search(shards_.begin(), shards_.end(), sid));
  RunOnShards({sid}, fn);
}

void Transaction::RunOnShards(const std::vector<unsigned>& sids,
                              absl::FunctionRef<void(TxShard&)> fn) {
  shard_set->AwaitShards(sids, [&](Shard& s) {
    TxShard t{s, s.db(db_index_), NowMs(), by_shard_[s.id()]};
    fn(t);
  });
}

}  // namespace shardis::shard
