// SORT and SORT_RO (Redis 7.0.15 semantics; sort.c is the reference) over lists, sets and sorted
// sets: numeric or ALPHA order, DESC, LIMIT, BY pattern (or BY nosort), GET patterns, STORE.
//
// The sort runs on the source key's shard, in one phase: the elements, the BY weights and the GET
// values are all read there, so the result is one consistent snapshot. The keys a BY/GET pattern
// names (`weight_*`, `obj_*->field`) are only known once the elements are read, so they cannot be
// locked by the transaction up front; they are served when they live on the source's shard (the
// phase runs without interruption on that thread, so the reads are consistent) and otherwise the
// command fails with kCrossShardPatternErr: the one difference from Redis (use a {hashtag}).
//
// SORT ... STORE dst is one shard::Transaction over {source, dst}: the read phase on the source's
// shard builds the result list, then a write phase on dst's shard (RunOn) replaces dst, while the
// transaction still holds both keys. SORT_RO (and SORT without STORE) need only the source's
// shard: SORT_RO runs there as a single-key command; SORT, whose STORE may name any shard, runs
// as a transaction over its keys either way.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
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
constexpr std::string_view kCrossShardPatternErr =
    "ERR SORT BY/GET patterns must name keys on the same shard as the sorted key (use a {hashtag})";

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

// What one sort produced on the source's shard.
struct SortOutput {
  std::string_view error;  // non-empty: reply it (nothing stored)
  bool wrong_type = false;
  // The reply's items in order (nullopt: a GET that found nothing).
  std::vector<std::optional<std::string>> items;
};

enum class PatternLookup { kValue, kNil, kOtherShard };

// Redis' lookupKeyByPattern: "#" is the element itself; otherwise the first '*' is replaced by
// the element, and "->field" after it (with a non-empty field) reads a hash field instead of a
// string. A pattern without '*', a missing key or one of another type give nil.
PatternLookup LookupByPattern(shard::Shard& shard, Db& db, int64_t now_ms,
                              std::string_view pattern, std::string_view elem, std::string* out) {
  // Redis looks for '#', '*' and "->" with C string functions (they stop at a NUL) but copies
  // the prefix, postfix and field by the pattern's full length.
  const std::string_view cstr = pattern.substr(0, pattern.find('\0'));
  if (cstr == "#") {
    out->assign(elem);
    return PatternLookup::kValue;
  }
  const size_t star = cstr.find('*');
  if (star == std::string_view::npos) return PatternLookup::kNil;
  std::string_view field;
  size_t key_end = pattern.size();
  const size_t arrow = cstr.find("->", star + 1);
  if (arrow != std::string_view::npos && arrow + 2 < cstr.size()) {
    field = pattern.substr(arrow + 2);
    key_end = arrow;
  }
  std::string key;
  key.reserve(key_end + elem.size());
  key.append(pattern.substr(0, star));
  key.append(elem);
  key.append(pattern.substr(star + 1, key_end - star - 1));
  const uint64_t hash = core::HashBytes(key);
  if (shard::shard_set->ShardOf(key, hash) != shard.id()) return PatternLookup::kOtherShard;
  Db::Iterator it = LookupRead(shard, db, key, hash, now_ms);
  if (!Db::Found(it)) return PatternLookup::kNil;
  core::CompactValue& v = it.value();
  if (!field.empty()) {
    if (v.type() != ValueType::kHash) return PatternLookup::kNil;
    std::string_view value;
    if (!core::HashRef(v).Get(field, &value)) return PatternLookup::kNil;
    out->assign(value);
    return PatternLookup::kValue;
  }
  if (v.type() != ValueType::kString) return PatternLookup::kNil;
  char scratch[core::CompactValue::kScratchSize];
  out->assign(v.GetString(scratch));
  return PatternLookup::kValue;
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
  double score = 0;
  std::optional<std::string> cmp;  // ALPHA with BY: the weight (nullopt: its key is missing)
};

// Appends the elements of the sorted key, as sort.c loads its vector: with dontsort, a list or
// sorted set gives only ranks [start, end] in the DESC/ASC direction (and *start/*end become
// 0-based in that range).
void LoadElements(core::CompactValue& v, bool dontsort, bool desc, int64_t* start,
                  int64_t* end, std::vector<SortItem>* items) {
  const auto push = [&](std::string_view e) {
    items->push_back(SortItem{std::string(e), 0, std::nullopt});
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

// The whole sort, on the source key's shard. With STORE, comparisons are binary (Redis'
// compareStringObjects instead of strcoll) and GETs that find nothing give "".
void SortOnShard(shard::Shard& shard, Db& db, int64_t now_ms, std::string_view key, uint64_t hash,
                 SortOptions o, SortOutput* out) {
  const bool for_store = o.store.has_value();
  Db::Iterator it = LookupRead(shard, db, key, hash, now_ms);
  core::CompactValue* v = nullptr;
  if (Db::Found(it)) {
    v = &it.value();
    const ValueType t = v->type();
    if (t != ValueType::kList && t != ValueType::kSet && t != ValueType::kZSet) {
      out->wrong_type = true;
      return;
    }
  }
  // A set has no order of its own: when storing, Redis sorts it (ALPHA) so that replicas agree.
  if (o.dontsort && v != nullptr && v->type() == ValueType::kSet && for_store) {
    o.dontsort = false;
    o.alpha = true;
    o.by.reset();
  }
  size_t len = 0;
  if (v != nullptr) {
    switch (v->type()) {
      case ValueType::kList: len = static_cast<const core::List*>(v->object())->size(); break;
      case ValueType::kSet: len = core::SetRef(*v).Size(); break;
      default: len = static_cast<const core::ZSet*>(v->object())->size(); break;
    }
  }
  // LIMIT clamping, as sort.c.
  const int64_t vlen = int64_t(len);
  int64_t start = std::min(std::max(o.limit_start, int64_t{0}), vlen);
  const int64_t count = std::min(std::max(o.limit_count, int64_t{-1}), vlen);
  int64_t end = count < 0 ? vlen - 1 : start + count - 1;
  if (start >= vlen) {
    start = vlen - 1;
    end = vlen - 2;
  }
  if (end >= vlen) end = vlen - 1;

  std::vector<SortItem> items;
  items.reserve(len);
  if (v != nullptr) LoadElements(*v, o.dontsort, o.desc, &start, &end, &items);

  if (!o.dontsort) {
    bool score_error = false;
    std::string weight;
    for (SortItem& item : items) {
      const std::string* by_value = &item.elem;
      if (o.by) {
        PatternLookup r = LookupByPattern(shard, db, now_ms, *o.by, item.elem, &weight);
        if (r == PatternLookup::kOtherShard) {
          out->error = kCrossShardPatternErr;
          return;
        }
        if (r == PatternLookup::kNil) continue;  // weight 0, or "missing" for ALPHA
        by_value = &weight;
      }
      if (o.alpha) {
        if (o.by) item.cmp = *by_value;
      } else if (!SortScore(*by_value, &item.score)) {
        score_error = true;
      }
    }
    const bool by = o.by.has_value();
    const auto compare = [&](const SortItem& a, const SortItem& b) {
      int c;
      if (!o.alpha) {
        // Equal weights fall back to the elements, so the order is deterministic.
        c = a.score > b.score ? 1 : (a.score < b.score ? -1 : CompareBinary(a.elem, b.elem));
      } else if (by) {
        if (!a.cmp || !b.cmp) {
          c = a.cmp.has_value() == b.cmp.has_value() ? 0 : (!a.cmp ? -1 : 1);
        } else {
          c = for_store ? CompareBinary(*a.cmp, *b.cmp) : CompareCollate(*a.cmp, *b.cmp);
        }
      } else {
        c = for_store ? CompareBinary(a.elem, b.elem) : CompareCollate(a.elem, b.elem);
      }
      return o.desc ? -c : c;
    };
    // Redis sorts, then reports the error: nothing observable between, so skip the sort.
    if (score_error) {
      out->error = kScoreErr;
      return;
    }
    // glibc's qsort (what Redis calls) is a merge sort: stable, so ties keep the load order.
    std::stable_sort(items.begin(), items.end(),
                     [&](const SortItem& a, const SortItem& b) { return compare(a, b) < 0; });
  }

  if (end < start) return;
  const size_t n = size_t(end - start + 1);
  out->items.reserve(o.gets.empty() ? n : n * o.gets.size());
  std::string value;
  for (int64_t j = start; j <= end; ++j) {
    SortItem& item = items[size_t(j)];
    if (o.gets.empty()) {
      out->items.emplace_back(std::move(item.elem));
      continue;
    }
    for (std::string_view pattern : o.gets) {
      PatternLookup r = LookupByPattern(shard, db, now_ms, pattern, item.elem, &value);
      if (r == PatternLookup::kOtherShard) {
        out->items.clear();
        out->error = kCrossShardPatternErr;
        return;
      }
      if (r == PatternLookup::kValue) {
        out->items.emplace_back(value);
      } else if (for_store) {
        out->items.emplace_back(std::string());
      } else {
        out->items.emplace_back(std::nullopt);
      }
    }
  }
}

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

// SORT_RO key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC] [ALPHA]
void CmdSortRo(ArgSlice args, ShardContext& ctx) {
  SortOptions o;
  ArgParser p(args, 2);
  ParseOptions(p, /*readonly=*/true, &o);
  if (p.ReplyError(ctx.rb)) return;
  SortOutput out;
  SortOnShard(ctx.shard, ctx.db, ctx.now_ms, args[1], ctx.hash, std::move(o), &out);
  ReplyOutput(out, ctx.rb);
}

// SORT key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC] [ALPHA] [STORE dst]
void CmdSort(ArgSlice args, ConnContext& ctx) {
  SortOptions o;
  ArgParser p(args, 2);
  ParseOptions(p, /*readonly=*/false, &o);
  if (p.ReplyError(ctx.rb)) return;
  std::vector<std::string_view> keys = {args[1]};
  if (o.store) keys.push_back(*o.store);
  shard::Transaction tx(ctx.conn.db, keys,
                        o.store ? shard::Transaction::kWrite : shard::Transaction::kRead);
  SortOutput out;
  const unsigned src_shard = tx.shard_of(0);
  const bool store_here = o.store && tx.shard_of(1) == src_shard;
  tx.RunOn(src_shard, [&](shard::TxShard& t) {
    SortOnShard(t.shard, t.db, t.now_ms, tx.key(0), tx.hash(0), o, &out);
    if (store_here && !out.wrong_type && out.error.empty()) {
      StoreList(t.shard, t.db, tx.key(1), tx.hash(1), t.now_ms, out.items);
    }
  });
  if (o.store && !store_here && !out.wrong_type && out.error.empty()) {
    tx.RunOn(tx.shard_of(1), [&](shard::TxShard& t) {
      StoreList(t.shard, t.db, tx.key(1), tx.hash(1), t.now_ms, out.items);
    });
  }
  tx.Conclude();
  if (!o.store || out.wrong_type || !out.error.empty()) return ReplyOutput(out, ctx.rb);
  ctx.rb.Integer(int64_t(out.items.size()));
}

}  // namespace

void RegisterSortFamily(CommandRegistry* r) {
  // Redis lists the source as the key (1 1 1); the STORE destination and the pattern keys are
  // "movable" (found by parsing), which its legacy range does not show either.
  r->Register({.name = "sort", .arity = -2, .flags = kWrite | kDenyOom, .keys = kOneKey,
               .acl_categories = "write set sortedset list slow dangerous", .on_conn = CmdSort,
               .key_finder = SortKeys,
               .docs = {.group = "generic", .since = "1.0.0",
                        .complexity = "O(N+M*log(M)) where N is the number of elements in the list "
                                      "or set to sort, and M the number of returned elements. When "
                                      "the elements are not sorted, complexity is O(N).",
                        .summary = "Sorts the elements of a list, set or sorted set, optionally by "
                                   "external keys, and may store the result.",
                        .key_flags = "RO access"}});
  r->Register({.name = "sort_ro", .arity = -2, .flags = kReadOnly, .keys = kOneKey,
               .acl_categories = "read set sortedset list slow dangerous", .on_shard = CmdSortRo,
               .key_finder = FirstKeyOnly,
               .docs = {.group = "generic", .since = "7.0.0",
                        .complexity = "O(N+M*log(M)) where N is the number of elements in the list "
                                      "or set to sort, and M the number of returned elements. When "
                                      "the elements are not sorted, complexity is O(N).",
                        .summary = "Sorts the elements of a list, set or sorted set (SORT without "
                                   "STORE).", .key_flags = "RO access"}});
}

}  // namespace shardis::server
