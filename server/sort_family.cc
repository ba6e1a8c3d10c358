// SORT and SORT_RO (Redis 7.0.15 semantics; sort.c is the reference) over lists, sets and sorted
// sets: numeric or ALPHA order, DESC, LIMIT, BY pattern (or BY nosort), GET patterns, STORE.
//
// The keys a BY/GET pattern names (`weight_*`, `obj_*->field`) are only known once the elements
// are read, so the transaction cannot hold them from the start. A sort is one atomic step anyway:
//   - Fast path, one phase on the source's shard: when every key the patterns name lives on that
//     shard and no other transaction holds or wants it, the phase reads them right there (it runs
//     without interruption on that thread, and an unlocked key is in no half-done transaction),
//     sorts and builds the result. A sort without key patterns always takes this path.
//   - Otherwise the command starts over as a transaction that also holds every key the patterns
//     named: a phase on the source's shard reads the elements again and checks that their keys
//     are all held (the source may have changed in between: then it starts over with those keys
//     too, and after kMaxKeyedAttempts over every shard), a phase on every shard involved reads
//     the keys each owns, and the sort runs on the coordinator.
// STORE dst is a last phase on dst's shard while the transaction still holds every key.
// SORT_RO whose patterns name no key is routed as a single-key command (on_shard, batched with
// the pipeline); with key patterns it runs as SORT does (on_conn; see RunsOnShard).
// Inside MULTI/EXEC or a script the enclosing transaction holds every shard for a SORT whose
// patterns name keys (CommandSpec::pattern_keys), so the same steps only hop.
#include <absl/container/flat_hash_set.h>
#include <glog/logging.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/hash_object.h"
#include "core/list.h"
#include "core/number.h"
#include "core/set_object.h"
#include "core/string_util.h"
#include "core/value_object.h"
#include "core/zset.h"
#include "server/arg_parser.h"
#include "server/command.h"
#include "server/command_keys.h"
#include "server/connection_state.h"
#include "server/key_lookup.h"
#include "shard/shard_set.h"
#include "shard/transaction.h"

namespace shardis::server {

namespace {

using core::ValueType;
using shard::Db;

constexpr std::string_view kScoreErr = "ERR One or more scores can't be converted into double";
// Keyed transactions tried before one over every shard, when the source keeps changing between the
// phase that finds the pattern keys and the one that holds them.
constexpr int kMaxKeyedAttempts = 3;

struct SortOptions {
  bool desc = false;
  bool alpha = false;
  bool dontsort = false;  // BY a pattern without '*': keep the natural order
  int64_t limit_start = 0;
  int64_t limit_count = -1;
  std::optional<std::string_view> by;  // a BY pattern with '*'
  std::vector<std::string_view> gets;
  std::optional<std::string_view> store;
};

// Parses args[2..] as sortCommandGeneric does; the first error stays in `p`.
void ParseOptions(ArgParser& p, bool readonly, SortOptions* o) {
  while (p.HasNext()) {
    if (p.Check("ASC")) {
      o->desc = false;
    } else if (p.Check("DESC")) {
      o->desc = true;
    } else if (p.Check("ALPHA")) {
      o->alpha = true;
    } else if (p.Check("LIMIT", 2)) {
      o->limit_start = p.Next<int64_t>();
      o->limit_count = p.Next<int64_t>();
    } else if (!readonly && p.Check("STORE", 1)) {
      o->store = p.Next();
    } else if (p.Check("BY", 1)) {
      std::string_view pattern = p.Next();
      // A constant pattern names no per-element key: nothing to sort by.
      o->by = pattern;
      o->dontsort = pattern.substr(0, pattern.find('\0')).find('*') == std::string_view::npos;
    } else if (p.Check("GET", 1)) {
      o->gets.push_back(p.Next());
    } else {
      p.Fail(kSyntaxErr);
    }
  }
}

// What one sort produced.
struct SortOutput {
  std::string_view error;  // non-empty: reply it (nothing stored)
  bool wrong_type = false;
  // The reply's items in order (nullopt: a GET that found nothing).
  std::vector<std::optional<std::string>> items;
};

// Where a pattern leads for one element, as Redis' lookupKeyByPattern: "#" is the element itself;
// otherwise the first '*' is replaced by the element, and "->field" after it (with a non-empty
// field) reads a hash field instead of a string. A pattern without '*' gives nil.
struct PatternTarget {
  enum Kind { kElement, kNil, kKey } kind = kNil;
  std::string key;
  std::string_view field;  // non-empty: a hash field (a view into the pattern)
};

PatternTarget ResolvePattern(std::string_view pattern, std::string_view elem) {
  // Redis looks for '#', '*' and "->" with C string functions (they stop at a NUL) but copies
  // the prefix, postfix and field by the pattern's full length.
  const std::string_view cstr = pattern.substr(0, pattern.find('\0'));
  PatternTarget t;
  if (cstr == "#") {
    t.kind = PatternTarget::kElement;
    return t;
  }
  const size_t star = cstr.find('*');
  if (star == std::string_view::npos) return t;
  size_t key_end = pattern.size();
  const size_t arrow = cstr.find("->", star + 1);
  if (arrow != std::string_view::npos && arrow + 2 < cstr.size()) {
    t.field = pattern.substr(arrow + 2);
    key_end = arrow;
  }
  t.kind = PatternTarget::kKey;
  t.key.reserve(key_end + elem.size());
  t.key.append(pattern.substr(0, star));
  t.key.append(elem);
  t.key.append(pattern.substr(star + 1, key_end - star - 1));
  return t;
}

// Whether args (a SORT or SORT_RO) have a BY or GET pattern that names keys.
bool SortPatternsNameKeys(ArgSlice args) {
  for (size_t i = 2; i + 1 < args.size(); ++i) {
    if (core::EqualsIgnoreCase(args[i], "limit")) {
      i += 2;
    } else if (core::EqualsIgnoreCase(args[i], "by") || core::EqualsIgnoreCase(args[i], "get")) {
      if (ResolvePattern(args[i + 1], "").kind == PatternTarget::kKey) return true;
      ++i;
    }
  }
  return false;
}

// Redis' SORT parses weights with a bare strtod (not string2d): leading spaces and hex are
// accepted, the text ends at a NUL, and trailing bytes, overflow/underflow (ERANGE) and NaN fail.
bool SortScore(const std::string& s, double* out) {
  char* end;
  errno = 0;
  *out = std::strtod(s.c_str(), &end);
  return *end == '\0' && errno != ERANGE && !std::isnan(*out);
}

// Binary comparison (Redis' compareStringObjects), as memcmp then length.
int CompareBinary(std::string_view a, std::string_view b) {
  const int c = std::memcmp(a.data(), b.data(), std::min(a.size(), b.size()));
  if (c != 0) return c < 0 ? -1 : 1;
  return a.size() < b.size() ? -1 : (a.size() > b.size() ? 1 : 0);
}

// strcoll in the C/C.UTF-8 locale: byte order of the strings up to their first NUL.
int CompareCollate(std::string_view a, std::string_view b) {
  return CompareBinary(a.substr(0, a.find('\0')), b.substr(0, b.find('\0')));
}

struct SortItem {
  std::string elem;
  uint32_t index = 0;  // in load order: the column of the element's pattern slots
  double score = 0;
  const std::string* cmp = nullptr;  // ALPHA with BY: the weight (null: its key is missing)
};

// Appends the elements of the sorted key, as sort.c loads its vector: with dontsort, a list or
// sorted set gives only ranks [start, end] in the DESC/ASC direction (and *start/*end become
// 0-based in that range).
void LoadElements(core::CompactValue& v, bool dontsort, bool desc, int64_t* start,
                  int64_t* end, std::vector<SortItem>* items) {
  const auto push = [&](std::string_view e) {
    items->push_back(SortItem{std::string(e), uint32_t(items->size())});
  };
  switch (v.type()) {
    case ValueType::kList: {
      const core::List* list = static_cast<const core::List*>(v.object());
      if (!dontsort) {
        list->ForRange(0, list->size(), push);
        return;
      }
      if (*end >= *start) {
        const int64_t n = *end - *start + 1;
        char scratch[core::kInt64BufSize];
        core::List::Iterator it =
            list->At(desc ? int64_t(list->size()) - *start - 1 : *start);
        for (int64_t i = 0; i < n && it.Valid(); ++i) {
          push(it.Get(scratch));
          desc ? it.Prev() : it.Next();
        }
        *end -= *start;
        *start = 0;
      }
      return;
    }
    case ValueType::kSet:
      core::SetRef(v).ForEach(push);
      return;
    case ValueType::kZSet: {
      const core::ZSet* z = static_cast<const core::ZSet*>(v.object());
      const auto visit = [&](std::string_view m, double) { push(m); };
      if (!dontsort) {
        if (z->size() > 0) z->RangeByRank(0, z->size() - 1, false, visit);
        return;
      }
      if (*end >= *start) z->RangeByRank(size_t(*start), size_t(*end), desc, visit);
      *end -= *start;
      *start = 0;
      return;
    }
    default:
      return;
  }
}

// One key a pattern names for one element, and what was read there.
struct PatternRead {
  std::string key;
  std::string_view field;
  uint64_t hash = 0;
  unsigned sid = 0;
  std::optional<std::string> value;  // nullopt: missing, of another type, or no such field
};

// Reads a pattern key on its shard: a string, or a hash field when `field` is set.
void ReadPatternKey(shard::Shard& shard, Db& db, int64_t now_ms, PatternRead* r) {
  Db::Iterator it = LookupRead(shard, db, r->key, r->hash, now_ms);
  if (!Db::Found(it)) return;
  core::CompactValue& v = it.value();
  if (!r->field.empty()) {
    std::string_view value;
    if (v.type() == ValueType::kHash && core::HashRef(v).Get(r->field, &value)) {
      r->value.emplace(value);
    }
    return;
  }
  if (v.type() != ValueType::kString) return;
  char scratch[core::CompactValue::kScratchSize];
  r->value.emplace(v.GetString(scratch));
}

// One sort: the source's elements, the keys its patterns name and what they hold, and the steps
// that turn them into the result (see the top of the file for where each step runs).
class SortJob {
 public:
  explicit SortJob(const SortOptions& o) : o_(o), for_store_(o.store.has_value()) {
    patterns_.push_back(o.by.value_or(std::string_view()));  // slot 0: BY (unused if dontsort)
    patterns_.insert(patterns_.end(), o.gets.begin(), o.gets.end());
  }

  // Reads the source key's elements and clamps LIMIT, as sort.c. False: WRONGTYPE.
  bool Load(shard::Shard& shard, Db& db, int64_t now_ms, std::string_view key, uint64_t hash) {
    items_.clear();
    reads_.clear();
    Db::Iterator it = LookupRead(shard, db, key, hash, now_ms);
    core::CompactValue* v = nullptr;
    if (Db::Found(it)) {
      v = &it.value();
      const ValueType t = v->type();
      if (t != ValueType::kList && t != ValueType::kSet && t != ValueType::kZSet) return false;
    }
    // A set has no order of its own: when storing, Redis sorts it (ALPHA) so replicas agree.
    if (o_.dontsort && v != nullptr && v->type() == ValueType::kSet && for_store_) {
      o_.dontsort = false;
      o_.alpha = true;
      o_.by.reset();
    }
    size_t len = 0;
    if (v != nullptr) {
      switch (v->type()) {
        case ValueType::kList: len = static_cast<const core::List*>(v->object())->size(); break;
        case ValueType::kSet: len = core::SetRef(*v).Size(); break;
        default: len = static_cast<const core::ZSet*>(v->object())->size(); break;
      }
    }
    const int64_t vlen = int64_t(len);
    start_ = std::min(std::max(o_.limit_start, int64_t{0}), vlen);
    const int64_t count = std::min(std::max(o_.limit_count, int64_t{-1}), vlen);
    end_ = count < 0 ? vlen - 1 : start_ + count - 1;
    if (start_ >= vlen) {
      start_ = vlen - 1;
      end_ = vlen - 2;
    }
    if (end_ >= vlen) end_ = vlen - 1;
    items_.reserve(len);
    if (v != nullptr) LoadElements(*v, o_.dontsort, o_.desc, &start_, &end_, &items_);
    slots_.assign(patterns_.size() * items_.size(), kSlotNil);
    return true;
  }

  // Whether the order comes from a BY pattern's keys.
  bool sorts_by_pattern() const { return !o_.dontsort && o_.by.has_value(); }
  // Finds the keys the patterns name: every pattern for every element (the slow path, which
  // reads before it sorts), BY for every element, or the GETs of the result's range only.
  void ResolveAll() {
    reads_.clear();
    if (sorts_by_pattern()) Resolve(kBySlot, 0, items_.size());
    for (size_t p = 1; p < patterns_.size(); ++p) Resolve(p, 0, items_.size());
  }
  void ResolveBy() { Resolve(kBySlot, 0, items_.size()); }
  void ResolveGetsInRange() {
    if (end_ < start_) return;
    for (size_t p = 1; p < patterns_.size(); ++p) Resolve(p, size_t(start_), size_t(end_) + 1);
  }

  // The fast path: reads the pattern keys resolved since `from` here, if they all live on this
  // shard and (unless the enclosing transaction holds everything) no transaction has an intent on
  // them. False, with nothing read, otherwise.
  bool ReadLocally(shard::Shard& shard, Db& db, int64_t now_ms, bool check_locks, size_t from) {
    for (size_t i = from; i < reads_.size(); ++i) {
      if (reads_[i].sid != shard.id()) return false;
      if (check_locks && shard.tx_queue().Conflicts(db.index(), reads_[i].key, false)) return false;
    }
    for (size_t i = from; i < reads_.size(); ++i) ReadPatternKey(shard, db, now_ms, &reads_[i]);
    return true;
  }
  // A phase of the slow path: reads the pattern keys this shard owns.
  void ReadOwned(shard::Shard& shard, Db& db, int64_t now_ms) {
    for (PatternRead& r : reads_) {
      if (r.sid == shard.id()) ReadPatternKey(shard, db, now_ms, &r);
    }
  }
  size_t read_count() const { return reads_.size(); }
  const std::vector<PatternRead>& reads() const { return reads_; }

  // Weights and order (no-op with dontsort). False: a weight is not a number (out->error set).
  bool Sort(SortOutput* out) {
    if (o_.dontsort) return true;
    const bool by = o_.by.has_value();
    for (SortItem& item : items_) {
      const std::string* by_value = &item.elem;
      if (by) {
        by_value = Value(kBySlot, item);
        if (by_value == nullptr) continue;  // weight 0, or "missing" for ALPHA
      }
      if (o_.alpha) {
        if (by) item.cmp = by_value;
      } else if (!SortScore(*by_value, &item.score)) {
        // Redis sorts, then reports the error: nothing observable between, so skip the sort.
        out->error = kScoreErr;
        return false;
      }
    }
    const auto compare = [&](const SortItem& a, const SortItem& b) {
      int c;
      if (!o_.alpha) {
        // Equal weights fall back to the elements, so the order is deterministic.
        c = a.score > b.score ? 1 : (a.score < b.score ? -1 : CompareBinary(a.elem, b.elem));
      } else if (by) {
        if (a.cmp == nullptr || b.cmp == nullptr) {
          c = (a.cmp == nullptr) == (b.cmp == nullptr) ? 0 : (a.cmp == nullptr ? -1 : 1);
        } else {
          c = for_store_ ? CompareBinary(*a.cmp, *b.cmp) : CompareCollate(*a.cmp, *b.cmp);
        }
      } else {
        c = for_store_ ? CompareBinary(a.elem, b.elem) : CompareCollate(a.elem, b.elem);
      }
      return o_.desc ? -c : c;
    };
    // glibc's qsort (what Redis calls) is a merge sort: stable, so ties keep the load order.
    std::stable_sort(items_.begin(), items_.end(),
                     [&](const SortItem& a, const SortItem& b) { return compare(a, b) < 0; });
    return true;
  }

  // The result: the range's elements, or their GET values (missing ones are "" when storing).
  void Output(SortOutput* out) {
    if (end_ < start_) return;
    const size_t n = size_t(end_ - start_ + 1);
    out->items.reserve(o_.gets.empty() ? n : n * o_.gets.size());
    for (int64_t j = start_; j <= end_; ++j) {
      SortItem& item = items_[size_t(j)];
      if (o_.gets.empty()) {
        out->items.emplace_back(std::move(item.elem));
        continue;
      }
      for (size_t p = 1; p < patterns_.size(); ++p) {
        if (const std::string* value = Value(p, item)) {
          out->items.emplace_back(*value);
        } else if (for_store_) {
          out->items.emplace_back(std::string());
        } else {
          out->items.emplace_back(std::nullopt);
        }
      }
    }
  }

 private:
  static constexpr size_t kBySlot = 0;
  static constexpr int32_t kSlotNil = -1;
  static constexpr int32_t kSlotElement = -2;

  // Resolves pattern p for items_[from, to) (in the current order).
  void Resolve(size_t p, size_t from, size_t to) {
    for (size_t j = from; j < to; ++j) {
      const SortItem& item = items_[j];
      int32_t& slot = slots_[p * items_.size() + item.index];
      PatternTarget t = ResolvePattern(patterns_[p], item.elem);
      if (t.kind != PatternTarget::kKey) {
        slot = t.kind == PatternTarget::kElement ? kSlotElement : kSlotNil;
        continue;
      }
      slot = int32_t(reads_.size());
      PatternRead& r = reads_.emplace_back();
      r.hash = core::HashBytes(t.key);
      r.sid = shard::shard_set->ShardOf(t.key, r.hash);
      r.key = std::move(t.key);
      r.field = t.field;
    }
  }

  // What pattern p gives for the item (null: nil).
  const std::string* Value(size_t p, const SortItem& item) const {
    const int32_t slot = slots_[p * items_.size() + item.index];
    if (slot == kSlotElement) return &item.elem;
    if (slot == kSlotNil) return nullptr;
    const std::optional<std::string>& v = reads_[size_t(slot)].value;
    return v ? &*v : nullptr;
  }

  SortOptions o_;
  const bool for_store_;  // comparisons are binary (compareStringObjects), not strcoll
  std::vector<std::string_view> patterns_;
  std::vector<SortItem> items_;
  int64_t start_ = 0, end_ = -1;
  // slots_[p * items_.size() + item.index]: kSlotNil, kSlotElement or an index into reads_.
  std::vector<int32_t> slots_;
  std::vector<PatternRead> reads_;
};

void ReplyOutput(const SortOutput& out, core::ReplyBuilder& rb) {
  if (out.wrong_type) return rb.Error(kWrongTypeErr);
  if (!out.error.empty()) return rb.Error(out.error);
  rb.ArrayHeader(out.items.size());
  for (const std::optional<std::string>& item : out.items) {
    if (item) {
      rb.Bulk(*item);
    } else {
      rb.Null();
    }
  }
}

// Replaces dst with a list of items (deletes it when there are none), as setKey/dbDelete do.
// Counts the changes as Redis does: one per item stored, or one for deleting dst; publishes
// Redis' keyspace event (sortstore, or del).
void StoreList(shard::Shard& shard, Db& db, std::string_view key, uint64_t hash, int64_t now_ms,
               const std::vector<std::optional<std::string>>& items) {
  Db::Iterator it = db.Find(key, hash, now_ms);
  const bool existed = Db::Found(it);
  if (items.empty()) {
    if (existed) db.Erase(it, key, hash);
  } else {
    // Redis' setKey: an existing key is overwritten (no "new" event) and loses its TTL.
    bool inserted;
    it = db.FindOrInsert(key, hash, now_ms, &inserted);
    if (!inserted) db.SetExpire(it, key, hash, 0);
    auto* list = core::ShardNew<core::List>();
    for (const std::optional<std::string>& item : items) {
      list->Push(core::ListEnd::kTail, item ? std::string_view(*item) : std::string_view());
    }
    list->ConvertAfterBuilding();
    it.value().SetObject(ValueType::kList, list, core::List::kEncodingQuicklist);
  }
  if (existed || !items.empty()) db.NoteModified(key);
  if (!items.empty()) {
    shard.AddDirty(items.size());
    shard::NotifyKeyspaceEvent(kNotifyList, "sortstore", key, db.index());
  } else if (existed) {
    shard.AddDirty();
    shard::NotifyKeyspaceEvent(kNotifyGeneric, "del", key, db.index());
  }
}

// The fast path, on the source's shard: the whole sort, when the keys its patterns name can be
// read there (check_locks: unless the enclosing transaction holds everything). False when they
// cannot.
bool SortInOnePhase(shard::Shard& shard, Db& db, int64_t now_ms, std::string_view key,
                    uint64_t hash, bool check_locks, SortJob& job, SortOutput* out) {
  if (!job.Load(shard, db, now_ms, key, hash)) {
    out->wrong_type = true;
    return true;
  }
  if (job.sorts_by_pattern()) {
    job.ResolveBy();
    if (!job.ReadLocally(shard, db, now_ms, check_locks, 0)) return false;
  }
  if (!job.Sort(out)) return true;
  const size_t gets_from = job.read_count();
  job.ResolveGetsInRange();
  if (!job.ReadLocally(shard, db, now_ms, check_locks, gets_from)) return false;
  job.Output(out);
  return true;
}

// The slow path (see the top of the file): transactions that also hold the keys the patterns
// name, `found` at first, until one holds all the keys of the source it reads.
void SortHoldingPatternKeys(int db_index, std::string_view src, std::optional<std::string_view> dst,
                            std::vector<std::string> found, SortJob& job, SortOutput* out) {
  const auto mode = dst ? shard::Transaction::kWrite : shard::Transaction::kRead;
  for (int attempt = 1;; ++attempt) {
    std::vector<std::string_view> keys = {src};
    if (dst) keys.push_back(*dst);
    keys.insert(keys.end(), found.begin(), found.end());
    const bool every_shard = attempt > kMaxKeyedAttempts;
    std::optional<shard::Transaction> tx;
    if (every_shard) {
      tx.emplace(db_index, shard::Transaction::AllShards{}, mode);
    } else {
      tx.emplace(db_index, keys, mode);
    }
    const uint64_t src_hash = core::HashBytes(src);
    const unsigned src_shard = shard::shard_set->ShardOf(src, src_hash);
    bool wrong_type = false;
    std::vector<std::string> missing;
    tx->RunOn(src_shard, [&](shard::TxShard& t) {
      if (!job.Load(t.shard, t.db, t.now_ms, src, src_hash)) {
        wrong_type = true;
        return;
      }
      job.ResolveAll();
      if (every_shard) return;
      const absl::flat_hash_set<std::string_view> held(keys.begin(), keys.end());
      for (const PatternRead& r : job.reads()) {
        if (!held.contains(r.key)) missing.push_back(r.key);
      }
    });
    if (wrong_type) {
      out->wrong_type = true;
      return;
    }
    if (!missing.empty()) {
      // The source changed since the keys were found: hold the new ones too.
      tx->Conclude();
      found.insert(found.end(), std::make_move_iterator(missing.begin()),
                   std::make_move_iterator(missing.end()));
      continue;
    }
    tx->Run([&](shard::TxShard& t) { job.ReadOwned(t.shard, t.db, t.now_ms); });
    if (job.Sort(out)) job.Output(out);
    if (dst && out->error.empty()) {
      const uint64_t dst_hash = core::HashBytes(*dst);
      tx->RunOn(shard::shard_set->ShardOf(*dst, dst_hash), [&](shard::TxShard& t) {
        StoreList(t.shard, t.db, *dst, dst_hash, t.now_ms, out->items);
      });
    }
    return;
  }
}

// SORT_RO whose patterns name no key (RunsOnShard): a single-key command on the source's shard.
void CmdSortRoOnShard(ArgSlice args, ShardContext& ctx) {
  SortOptions o;
  ArgParser p(args, 2);
  ParseOptions(p, /*readonly=*/true, &o);
  if (p.ReplyError(ctx.rb)) return;
  SortJob job(o);
  SortOutput out;
  const bool done = SortInOnePhase(ctx.shard, ctx.db, ctx.now_ms, args[1], ctx.hash,
                                   /*check_locks=*/false, job, &out);
  DCHECK(done);  // no key to read
  ReplyOutput(out, ctx.rb);
}

// SORT key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC] [ALPHA] [STORE dst]
// SORT_RO key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC] [ALPHA]
template <bool kReadOnly>
void CmdSort(ArgSlice args, ConnContext& ctx) {
  SortOptions o;
  ArgParser p(args, 2);
  ParseOptions(p, kReadOnly, &o);
  if (p.ReplyError(ctx.rb)) return;
  std::vector<std::string_view> keys = {args[1]};
  if (o.store) keys.push_back(*o.store);
  SortJob job(o);
  SortOutput out;
  std::vector<std::string> found;  // the keys the patterns name, when the fast path cannot go on
  {
    shard::Transaction tx(ctx.conn.db, keys,
                          o.store ? shard::Transaction::kWrite : shard::Transaction::kRead);
    const unsigned src_shard = tx.shard_of(0);
    const bool store_here = o.store && tx.shard_of(1) == src_shard;
    bool done = false;
    tx.RunOn(src_shard, [&](shard::TxShard& t) {
      done = SortInOnePhase(t.shard, t.db, t.now_ms, tx.key(0), tx.hash(0), !tx.is_nested(), job,
                            &out);
      if (!done) {
        job.ResolveAll();
        for (const PatternRead& r : job.reads()) found.push_back(r.key);
      } else if (store_here && !out.wrong_type && out.error.empty()) {
        StoreList(t.shard, t.db, tx.key(1), tx.hash(1), t.now_ms, out.items);
      }
    });
    if (done && o.store && !store_here && !out.wrong_type && out.error.empty()) {
      tx.RunOn(tx.shard_of(1), [&](shard::TxShard& t) {
        StoreList(t.shard, t.db, tx.key(1), tx.hash(1), t.now_ms, out.items);
      });
    }
  }
  if (!found.empty()) {
    std::sort(found.begin(), found.end());
    found.erase(std::unique(found.begin(), found.end()), found.end());
    SortHoldingPatternKeys(ctx.conn.db, args[1], o.store, std::move(found), job, &out);
  }
  if (!o.store || out.wrong_type || !out.error.empty()) return ReplyOutput(out, ctx.rb);
  ctx.rb.Integer(int64_t(out.items.size()));
}

}  // namespace

void RegisterSortFamily(CommandRegistry* r) {
  // Redis lists the source as the key (1 1 1); the STORE destination and the pattern keys are
  // "movable" (found by parsing), which its legacy range does not show either.
  r->Register({.name = "sort", .arity = -2, .flags = kWrite | kDenyOom, .keys = kOneKey,
               .acl_categories = "write set sortedset list slow dangerous",
               .on_conn = CmdSort<false>, .key_finder = SortKeys,
               .keys_found_while_running = SortPatternsNameKeys,
               .docs = {.group = "generic", .since = "1.0.0",
                        .complexity = "O(N+M*log(M)) where N is the number of elements in the list "
                                      "or set to sort, and M the number of returned elements. When "
                                      "the elements are not sorted, complexity is O(N).",
                        .summary = "Sorts the elements of a list, set or sorted set, optionally by "
                                   "external keys, and may store the result.",
                        .key_flags = "RO access",
                        .other_key_flags = "OW update"}});
  r->Register({.name = "sort_ro", .arity = -2, .flags = kReadOnly, .keys = kOneKey,
               .acl_categories = "read set sortedset list slow dangerous",
               .on_shard = CmdSortRoOnShard, .on_conn = CmdSort<true>,
               .key_finder = FirstKeyOnly,
               .keys_found_while_running = SortPatternsNameKeys,
               .docs = {.group = "generic", .since = "7.0.0",
                        .complexity = "O(N+M*log(M)) where N is the number of elements in the list "
                                      "or set to sort, and M the number of returned elements. When "
                                      "the elements are not sorted, complexity is O(N).",
                        .summary = "Sorts the elements of a list, set or sorted set (SORT without "
                                   "STORE).", .key_flags = "RO access"}});
}

}  // namespace shardis::server
