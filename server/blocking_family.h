// What the pop commands share with their blocking forms (blocking_family.cc): "pop from the first
// of these keys that exists", as one transaction, which LMPOP/ZMPOP run as it is and which
// BLPOP/BLMPOP/BZPOPMIN/BZMPOP run with a waiter to register when no key exists.
#pragma once

#include <absl/functional/function_ref.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "core/compact_value.h"
#include "core/reply_builder.h"
#include "server/command.h"
#include "shard/blocking.h"
#include "shard/db.h"

namespace shardis::server {

// Pops from the live key `it` (of the wanted type) and writes the reply; returns how many elements
// it popped (the changes Redis counts in its dirty counter). Runs on the key's shard.
using PopFn = absl::FunctionRef<size_t(shard::Db& db, shard::Db::Iterator it, std::string_view key,
                                     uint64_t hash, core::ReplyBuilder& rb)>;

enum class PopOutcome { kPopped, kWrongType, kNoKey };

// As one transaction over keys: the first key (in argument order) that exists decides — WRONGTYPE
// if it is not of `type` (nothing is replied), else pop(...) writes the reply on ctx.rb. When no
// key exists and `waiter` is given, the waiter is registered for every key, atomically with the
// check, so that no write can slip in between. The elements popped count as changes (dirty).
PopOutcome PopFirst(ConnContext& ctx, std::span<const std::string_view> keys, core::ValueType type,
                    PopFn pop, shard::Waiter* waiter);

// The rest of a non-blocking pop's reply (LMPOP, ZMPOP): nothing after kPopped (pop replied),
// WRONGTYPE, or a null array when no key exists.
inline void FinishPopReply(PopOutcome outcome, core::ReplyBuilder& rb) {
  if (outcome == PopOutcome::kWrongType) rb.Error(kWrongTypeErr);
  if (outcome == PopOutcome::kNoKey) rb.NullArray();
}

}  // namespace shardis::server
