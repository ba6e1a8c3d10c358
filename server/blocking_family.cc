// BLPOP, BRPOP, BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP, BLMOVE, BRPOPLPUSH: the pops that wait for
// data (shard/blocking.h has the shard's side; docs/transactions.md the whole picture).
//
// A blocking command first runs like its non-blocking form, as one transaction over its keys. If
// no key can serve it, that same transaction step registers a Waiter with the shard of every key,
// and the command's fiber sleeps until a shard serves it, its timeout passes, or the client
// disconnects. A pop is served on the key's shard, in the loop iteration of the write that made
// the key ready, and the reply travels back: nobody can take the element in between, and clients
// are served in the order they blocked. BLMOVE/BRPOPLPUSH move between two keys that may live on
// two shards, so they are woken instead and run LMOVE again as a transaction (blocking again, at
// the back of the queue, if someone took the element first); the command whose write woke them
// waits for that move (and the moves it wakes in turn) before it replies, as Redis completes
// them before the next command runs.
#include "server/blocking_family.h"

#include <climits>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/list.h"
#include "core/number.h"
#include "core/string_util.h"
#include "server/blocked_client.h"
#include "server/command_keys.h"
#include "server/connection_state.h"
#include "server/key_lookup.h"
#include "server/list_family.h"
#include "server/mpop_args.h"
#include "server/zset_family.h"
#include "shard/shard_set.h"
#include "shard/transaction.h"

namespace shardis::server {

using shard::Db;

PopOutcome PopFirst(ConnContext& ctx, std::span<const std::string_view> keys, core::ValueType type,
                    PopFn pop, shard::Waiter* waiter) {
  shard::Transaction tx(ctx.conn.db, keys, shard::Transaction::kWrite);
  const int db_index = ctx.conn.db;
  const bool resp3 = ctx.rb.resp3();
  std::string reply;
  // Per key: 0 missing, 1 of the wanted type, 2 another type. Each shard fills its own keys.
  std::vector<uint8_t> state(keys.size(), 0);
  auto check = [&](shard::TxShard& t) {
    bool any = false;
    for (uint32_t i : t.keys) {
      Db::Iterator it = t.db.Find(tx.key(i), tx.hash(i), t.now_ms);
      if (!Db::Found(it)) continue;
      state[i] = it.value().type() == type ? 1 : 2;
      any = true;
    }
    if (!any && waiter != nullptr) {
      for (uint32_t i : t.keys) t.shard.blocking().Add(db_index, tx.key(i), waiter);
    }
  };
  auto first = [&]() -> std::optional<uint32_t> {
    for (uint32_t i = 0; i < state.size(); ++i) {
      if (state[i] != 0) return i;
    }
    return std::nullopt;
  };
  auto pop_on_shard = [&](shard::TxShard& t, uint32_t i) {
    core::ReplyBuilder rb(&reply);
    rb.set_resp3(resp3);
    t.shard.AddDirty(pop(t.db, t.db.Find(tx.key(i), tx.hash(i), t.now_ms), tx.key(i), tx.hash(i), rb));
  };

  PopOutcome outcome = PopOutcome::kNoKey;
  if (tx.shards().size() == 1) {
    // One shard: check, then pop or register, in one step (one hop, no scheduling round).
    tx.Run(
        [&](shard::TxShard& t) {
          check(t);
          std::optional<uint32_t> i = first();
          if (!i) return;
          if (state[*i] == 2) {
            outcome = PopOutcome::kWrongType;
          } else {
            pop_on_shard(t, *i);
            outcome = PopOutcome::kPopped;
          }
        },
        /*conclude=*/true);
  } else {
    tx.Run(check);
    if (std::optional<uint32_t> i = first()) {
      outcome = state[*i] == 2 ? PopOutcome::kWrongType : PopOutcome::kPopped;
      // One more step on every shard: take back the registrations of the shards that had no
      // key (no write can have claimed the waiter: the transaction holds every key), and pop.
      tx.Run(
          [&](shard::TxShard& t) {
            if (waiter != nullptr) {
              for (uint32_t k : t.keys) t.shard.blocking().Remove(db_index, tx.key(k), waiter);
            }
            if (outcome == PopOutcome::kPopped && t.shard.id() == tx.shard_of(*i)) {
              pop_on_shard(t, *i);
            }
          },
          /*conclude=*/true);
    } else {
      tx.Conclude();
    }
  }
  if (outcome == PopOutcome::kPopped) ctx.rb.output()->append(reply);
  return outcome;
}

namespace {

// Redis' getTimeoutFromObjectOrReply in seconds: a float; 0 waits forever. Returns the absolute
// deadline in Unix ms (0: none), or false with the error replied.
bool ParseTimeout(std::string_view arg, core::ReplyBuilder& rb, int64_t* deadline_ms) {
  long double seconds;
  if (!core::ParseLongDouble(arg, &seconds)) {
    rb.Error("ERR timeout is not a float or out of range");
    return false;
  }
  // Rounded up, as Redis does: 0.001 s is 1 ms even where the product lands just below 1.
  const long double ms = ceill(seconds * 1000.0L);
  if (ms > static_cast<long double>(LLONG_MAX)) {
    rb.Error("ERR timeout is out of range");
    return false;
  }
  // Redis casts to long long; below its range that gives LLONG_MIN on x86, hence "negative".
  const long long tval = ms >= -9.2e18L ? static_cast<long long>(ms) : LLONG_MIN;
  if (tval < 0) {
    rb.Error("ERR timeout is negative");
    return false;
  }
  const int64_t now = shard::NowMs();
  if (tval > 0 && tval > LLONG_MAX - now) {
    rb.Error("ERR timeout is out of range");
    return false;
  }
  *deadline_ms = tval == 0 ? 0 : now + tval;
  return true;
}

// BLPOP, BRPOP, BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP: served on the shard by `pop`. A pop served
// to the blocked client counts as changes (dirty) as one done at once: Redis 7.2 runs the
// command again when it serves it (7.0 counted none for BLPOP/BRPOP).
class PopWaiter final : public BlockedClient {
 public:
  // journal_as: the command that replays a pop served later, with the key and the count popped
  // (LPOP, RPOP, ZPOPMIN, ZPOPMAX), as Redis propagates it.
  PopWaiter(ConnContext& ctx, std::span<const std::string_view> keys, core::ValueType type,
            PopFn pop, std::string_view journal_as)
      : BlockedClient(ctx, keys), type_(type), pop_(pop), journal_as_(journal_as) {}

  Offer TryServe(shard::Shard& owner, Db& db, std::string_view key) override {
    if (state() != kWaiting) return Offer::kGone;
    const uint64_t hash = core::HashBytes(key);
    Db::Iterator it = db.Find(key, hash, shard::NowMs());
    if (!Db::Found(it) || it.value().type() != type_) return Offer::kNotServable;
    if (!Claim()) return Offer::kGone;
    core::ReplyBuilder rb(&reply_);
    rb.set_resp3(resp3_);
    const size_t popped = pop_(db, it, key, hash, rb);
    owner.AddDirty(popped);
    if (popped > 0 && owner.journal().on()) {
      const std::string count = std::to_string(popped);
      const std::string_view form[] = {journal_as_, key, count};
      owner.journal().AppendCommand(db.index(), form);
    }
    Finish();
    return Offer::kServed;
  }

  // The whole command: pop now, or block and wait; replies in every case.
  void Run(int64_t deadline_ms) {
    const bool can_block = ctx_.conn.may_block();
    const PopOutcome outcome = PopFirst(ctx_, keys_, type_, pop_, can_block ? this : nullptr);
    if (outcome == PopOutcome::kNoKey && can_block) {
      const bool served = Wait(deadline_ms);
      Unregister();
      if (served) {
        ctx_.rb.output()->append(reply_);
        return;
      }
      if (ReplyIfUnblockedWithError(ctx_.rb)) return;
    }
    FinishPopReply(outcome, ctx_.rb);  // WRONGTYPE, or null: timed out or cannot block
  }

 private:
  const core::ValueType type_;
  PopFn pop_;
  const std::string_view journal_as_;
};

// BLMOVE, BRPOPLPUSH. When both keys live on one shard, the move is served there, in the loop
// iteration of the write that fed the source, as a pop is: a chain of BLMOVEs (each waiting on
// the previous one's destination) completes before the writer gets its reply, as in Redis. When
// the destination lives on another shard, the client is woken and runs LMOVE as a transaction,
// and the writer waits for it (shard::HandedOffWork).
class MoveWaiter final : public BlockedClient {
 public:
  MoveWaiter(ConnContext& ctx, std::span<const std::string_view> src, std::string_view dst,
             core::ListEnd from, core::ListEnd to)
      : BlockedClient(ctx, src), dst_(dst), from_(from), to_(to) {}

  Offer TryServe(shard::Shard& owner, Db& db, std::string_view key) override {
    if (state() != kWaiting) return Offer::kGone;
    const int64_t now_ms = shard::NowMs();
    const uint64_t src_hash = core::HashBytes(key);
    Db::Iterator it = db.Find(key, src_hash, now_ms);
    if (!Db::Found(it) || it.value().type() != core::ValueType::kList) {
      return Offer::kNotServable;
    }
    if (!Claim()) return Offer::kGone;
    const uint64_t dst_hash = core::HashBytes(dst_);
    if (shard::shard_set->ShardOf(dst_, dst_hash) != owner.id()) {
      return Offer::kReserved;  // the registry wakes it
    }
    // One change counted (as Redis 7.2 for a served BLMOVE); journaled as LMOVE, as Redis
    // propagates it. A WRONGTYPE destination gets the error and leaves the element to the next
    // waiter. The destination's own waiters are served next, by the same ServeReady.
    std::string value;
    const MoveResult result = MoveOnShard(owner, db, key, src_hash, dst_, dst_hash, now_ms, from_,
                                          to_, &value);
    core::ReplyBuilder rb(&reply_);
    rb.set_resp3(resp3_);
    ReplyMove(result, value, rb);
    if (result == MoveResult::kMoved && owner.journal().on()) {
      const std::string_view form[] = {"LMOVE", key, dst_, EndName(from_), EndName(to_)};
      owner.journal().AppendCommand(db.index(), form);
    }
    served_on_shard_ = true;
    Finish();
    return Offer::kServed;
  }

  void Run(std::string_view src, std::string_view dst, core::ListEnd from, core::ListEnd to,
           int64_t deadline_ms) {
    const bool can_block = ctx_.conn.may_block();
    for (;;) {
      // As this client, set again after a wait (another fiber may have changed it): the moves
      // its own move wakes count for it.
      shard::CurrentCommandClient() = ctx_.conn.AsCommandClient();
      const bool moved = ListMove(ctx_, src, dst, from, to);  // or WRONGTYPE
      if (!can_block) {  // in EXEC or a script, which wait for the moves it woke
        if (!moved) ctx_.rb.Null();
        return;
      }
      // Woken by another client's write (or not yet blocked): that client waits until this move
      // is done, and the moves it woke in turn. This is the client's own fiber, on its thread.
      ctx_.conn.handed_off.Wait();
      ReportMoved();
      if (moved) return;
      // Register only if the source is still missing, atomically with that check.
      bool registered = false;
      shard::Transaction tx(db_, keys_, shard::Transaction::kWrite);
      tx.Run(
          [&](shard::TxShard& t) {
            if (Db::Found(t.db.Find(src, tx.hash(0), t.now_ms))) return;
            t.shard.blocking().Add(db_, src, this);
            registered = true;
          },
          /*conclude=*/true);
      if (!registered) continue;  // data arrived in between: move it
      const bool served = Wait(deadline_ms);
      Unregister();
      // Redis replies every timed-out blocked client with a null array, even BLMOVE's.
      if (!served) {
        if (!ReplyIfUnblockedWithError(ctx_.rb)) ctx_.rb.NullArray();
        return;
      }
      if (served_on_shard_) {
        ctx_.rb.output()->append(reply_);
        return;
      }
      // The move that follows is journaled as Redis propagates it: LMOVE.
      if (shard::JournalCommand* journal = shard::CurrentJournalCommand(); journal != nullptr) {
        journal->effect.Replace({"LMOVE", std::string(src), std::string(dst),
                                 std::string(EndName(from)), std::string(EndName(to))});
        journal->force = true;
      }
      Rearm();
    }
  }

 private:
  static std::string_view EndName(core::ListEnd e) {
    return e == core::ListEnd::kHead ? "LEFT" : "RIGHT";
  }

  const std::string_view dst_;
  const core::ListEnd from_, to_;
  bool served_on_shard_ = false;  // the shard moved the element and wrote the reply
};

// --- The commands.

// BLPOP key [key ...] timeout / BRPOP key [key ...] timeout
template <core::ListEnd kEnd>
void CmdBPop(ArgSlice args, ConnContext& ctx) {
  int64_t deadline;
  if (!ParseTimeout(args.back(), ctx.rb, &deadline)) return;
  auto pop = [](Db& db, Db::Iterator it, std::string_view key, uint64_t hash,
                core::ReplyBuilder& rb) {
    return PopFromList(db, it, key, hash, kEnd, 1, PopReply::kKeyElement, rb);
  };
  PopWaiter(ctx, args.subspan(1, args.size() - 2), core::ValueType::kList, pop,
            kEnd == core::ListEnd::kHead ? "LPOP" : "RPOP")
      .Run(deadline);
}

// BZPOPMIN key [key ...] timeout / BZPOPMAX key [key ...] timeout
template <bool kMax>
void CmdBZPop(ArgSlice args, ConnContext& ctx) {
  int64_t deadline;
  if (!ParseTimeout(args.back(), ctx.rb, &deadline)) return;
  auto pop = [](Db& db, Db::Iterator it, std::string_view key, uint64_t hash,
                core::ReplyBuilder& rb) {
    return ZPopAndReply(db, it, key, hash, kMax, 1, ZPopReply::kFlatWithKey, rb);
  };
  PopWaiter(ctx, args.subspan(1, args.size() - 2), core::ValueType::kZSet, pop,
            kMax ? "ZPOPMAX" : "ZPOPMIN")
      .Run(deadline);
}

// BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count]
void CmdBLMPop(ArgSlice args, ConnContext& ctx) {
  MPopArgs a;
  if (!ParseMPopArgs(args, 2, "left", "right", &a, ctx.rb)) return;
  int64_t deadline;  // after the other arguments, as Redis checks them
  if (!ParseTimeout(args[1], ctx.rb, &deadline)) return;
  const core::ListEnd end = a.second_where ? core::ListEnd::kTail : core::ListEnd::kHead;
  auto pop = [&](Db& db, Db::Iterator it, std::string_view key, uint64_t hash,
                 core::ReplyBuilder& rb) {
    return PopFromList(db, it, key, hash, end, size_t(a.count), PopReply::kKeyArray, rb);
  };
  PopWaiter(ctx, a.keys, core::ValueType::kList, pop,
            a.second_where ? "RPOP" : "LPOP")
      .Run(deadline);
}

// BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count]
void CmdBZMPop(ArgSlice args, ConnContext& ctx) {
  MPopArgs a;
  if (!ParseMPopArgs(args, 2, "min", "max", &a, ctx.rb)) return;
  int64_t deadline;  // after the other arguments, as Redis checks them
  if (!ParseTimeout(args[1], ctx.rb, &deadline)) return;
  auto pop = [&](Db& db, Db::Iterator it, std::string_view key, uint64_t hash,
                 core::ReplyBuilder& rb) {
    return ZPopAndReply(db, it, key, hash, a.second_where, a.count, ZPopReply::kKeyNested, rb);
  };
  PopWaiter(ctx, a.keys, core::ValueType::kZSet, pop,
            a.second_where ? "ZPOPMAX" : "ZPOPMIN")
      .Run(deadline);
}

// BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout
void CmdBLMove(ArgSlice args, ConnContext& ctx) {
  core::ListEnd from, to;
  if (!ParseListEnd(args[3], &from) || !ParseListEnd(args[4], &to)) {
    return ctx.rb.Error(kSyntaxErr);
  }
  int64_t deadline;
  if (!ParseTimeout(args[5], ctx.rb, &deadline)) return;
  MoveWaiter w(ctx, args.subspan(1, 1), args[2], from, to);
  w.Run(args[1], args[2], from, to, deadline);
}

// BRPOPLPUSH source destination timeout
void CmdBRPopLPush(ArgSlice args, ConnContext& ctx) {
  int64_t deadline;
  if (!ParseTimeout(args[3], ctx.rb, &deadline)) return;
  MoveWaiter w(ctx, args.subspan(1, 1), args[2], core::ListEnd::kTail, core::ListEnd::kHead);
  w.Run(args[1], args[2], core::ListEnd::kTail, core::ListEnd::kHead, deadline);
}

}  // namespace

void RegisterBlockingFamily(CommandRegistry* r) {
  constexpr uint32_t kW = kWrite, kD = kDenyOom;
  constexpr KeyRange kKeysBeforeTimeout = {1, -2, 1};
  // Redis' key specs: all arguments but the last (BLPOP, ...), the keys after numkeys (BLMPOP:
  // "movablekeys", reported as 0 0 0), source and destination (BLMOVE).
  r->Register({.name = "blpop", .arity = -3, .flags = kW, .keys = kKeysBeforeTimeout,
               .acl_categories = "write list slow blocking",
               .on_conn = CmdBPop<core::ListEnd::kHead>,
               .docs = {.group = "list", .since = "2.0.0",
                        .complexity = "O(N) where N is the number of provided keys.",
                        .summary = "Pops the first element of the first non-empty list of several, "
                                   "waiting for one if all are empty.",
                        .key_flags = "RW access delete"}});
  r->Register({.name = "brpop", .arity = -3, .flags = kW, .keys = kKeysBeforeTimeout,
               .acl_categories = "write list slow blocking",
               .on_conn = CmdBPop<core::ListEnd::kTail>,
               .docs = {.group = "list", .since = "2.0.0",
                        .complexity = "O(N) where N is the number of provided keys.",
                        .summary = "Pops the last element of the first non-empty list of several, "
                                   "waiting for one if all are empty.",
                        .key_flags = "RW access delete"}});
  r->Register({.name = "blmpop", .arity = -5, .flags = kW, .keys = kNoKeys,
               .acl_categories = "write list slow blocking", .on_conn = CmdBLMPop,
               .key_finder = NumKeysAfterTimeout,
               .docs = {.group = "list", .since = "7.0.0",
                        .complexity = "O(N+M) where N is the number of provided keys and M is the "
                                      "number of elements returned.",
                        .summary = "Pops elements from the first non-empty list of several, "
                                   "waiting for one if all are empty.",
                        .key_flags = "RW access delete"}});
  r->Register({.name = "blmove", .arity = 6, .flags = kW | kD, .keys = kTwoKeys,
               .acl_categories = "write list slow blocking", .on_conn = CmdBLMove,
               .docs = {.group = "list", .since = "6.2.0", .complexity = "O(1)",
                        .summary = "Moves an element from one end of a list to an end of another, "
                                   "waiting for one if the source is empty.",
                        .key_flags = "RW access delete",
                        .other_key_flags = "RW insert"}});
  r->Register({.name = "brpoplpush", .arity = 4, .flags = kW | kD, .keys = kTwoKeys,
               .acl_categories = "write list slow blocking", .on_conn = CmdBRPopLPush,
               .docs = {.group = "list", .since = "2.2.0", .complexity = "O(1)",
                        .summary = "Moves the last element of a list to the head of another, "
                                   "waiting for one if the source is empty (old form of BLMOVE).",
                        .key_flags = "RW access delete",
                        .other_key_flags = "RW insert"}});
  r->Register({.name = "bzpopmin", .arity = -3, .flags = kW | kFast,
               .keys = kKeysBeforeTimeout, .acl_categories = "write sortedset fast blocking",
               .on_conn = CmdBZPop<false>,
               .docs = {.group = "sorted-set", .since = "5.0.0",
                        .complexity = "O(log(N)) with N being the number of elements in the sorted "
                                      "set.",
                        .summary = "Pops the lowest scored member of the first non-empty sorted "
                                   "set of several, waiting if all are empty.",
                        .key_flags = "RW access delete"}});
  r->Register({.name = "bzpopmax", .arity = -3, .flags = kW | kFast,
               .keys = kKeysBeforeTimeout, .acl_categories = "write sortedset fast blocking",
               .on_conn = CmdBZPop<true>,
               .docs = {.group = "sorted-set", .since = "5.0.0",
                        .complexity = "O(log(N)) with N being the number of elements in the sorted "
                                      "set.",
                        .summary = "Pops the highest scored member of the first non-empty sorted "
                                   "set of several, waiting if all are empty.",
                        .key_flags = "RW access delete"}});
  r->Register({.name = "bzmpop", .arity = -5, .flags = kW, .keys = kNoKeys,
               .acl_categories = "write sortedset slow blocking", .on_conn = CmdBZMPop,
               .key_finder = NumKeysAfterTimeout,
               .docs = {.group = "sorted-set", .since = "7.0.0",
                        .complexity = "O(K) + O(M*log(N)) where K is the number of provided keys, "
                                      "N being the number of elements in the sorted set, and M "
                                      "being the number of elements popped.",
                        .summary = "Pops the lowest or highest scored members of the first "
                                   "non-empty sorted set of several, waiting if all are empty.",
                        .key_flags = "RW access delete"}});
}

}  // namespace shardis::server
