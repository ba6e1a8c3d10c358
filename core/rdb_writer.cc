#include "core/rdb_writer.h"

#include <glog/logging.h>

#include <algorithm>
#include <vector>

#include "core/crc64.h"
#include "core/double_format.h"
#include "core/hash_object.h"
#include "core/intset.h"
#include "core/list.h"
#include "core/listpack.h"
#include "core/number.h"
#include "core/rdb_format.h"
#include "core/rdb_intset.h"
#include "core/set_object.h"
#include "core/stream.h"
#include "core/zset.h"

namespace shardis::core {

namespace {

using rdb::AppendLength;
using rdb::AppendString;

// ---- Lists: RDB_TYPE_LIST_QUICKLIST_2, nodes cut where Redis 7.0's quicklist would cut them
// (_quicklistNodeAllowInsert under list-max-listpack-size), so the file describes the list
// Redis would have built from the same pushes.

bool NodeAllows(size_t lp_bytes, uint32_t count, size_t elem_size, int fill) {
  static constexpr size_t kLevels[] = {4096, 8192, 16384, 32768, 65536};
  static constexpr size_t kSafetyLimit = 8192, kEstimateOverhead = 8;
  const size_t new_sz = lp_bytes + elem_size + kEstimateOverhead;
  if (fill < 0) {
    const size_t level = size_t(-fill) - 1;
    if (level < 5 && new_sz <= kLevels[level]) return true;
  }
  if (new_sz > kSafetyLimit) return false;
  return fill > 0 && count < uint32_t(fill);
}

void AppendList(std::string* out, const List& list, bool compression) {
  const int fill = ListMaxListpackSize();
  std::string nodes;
  uint64_t node_count = 0;
  ListpackBuilder lp;
  auto flush = [&] {
    if (lp.count() == 0) return;
    AppendLength(&nodes, rdb::kQuicklistNodePacked);
    AppendString(&nodes, lp.Finish(), compression);
    ++node_count;
  };
  char scratch[kInt64BufSize];
  for (List::Iterator it = list.Begin(); it.Valid(); it.Next()) {
    const std::string_view v = it.Get(scratch);
    if (v.size() >= rdb::kListPlainThreshold) {
      flush();
      AppendLength(&nodes, rdb::kQuicklistNodePlain);
      AppendString(&nodes, v, compression);
      ++node_count;
      continue;
    }
    if (lp.count() > 0 && !NodeAllows(lp.bytes(), lp.count(), v.size(), fill)) flush();
    lp.Append(v);
  }
  flush();
  AppendLength(out, node_count);
  out->append(nodes);
}

// ---- Sets.

void AppendSet(std::string* out, const CompactValue& value, bool compression) {
  if (value.object_encoding() == kSetIntset) {
    // Our IntSet is sorted too: the values go over in order, re-encoded at Redis' width.
    const char* buf = static_cast<const char*>(value.object());
    std::vector<int64_t> ints(IntSet::Count(buf));
    for (uint32_t i = 0; i < ints.size(); ++i) ints[i] = IntSet::Get(buf, i);
    AppendString(out, EncodeRedisIntset(ints), compression);
    return;
  }
  SetRef set(const_cast<CompactValue&>(value));  // read only (SetRef takes a mutable cell)
  // A packed set of strings has no RDB 10 form (Redis 7.0 keeps those in a hash table).
  AppendLength(out, set.Size());
  set.ForEach([&](std::string_view m) { AppendString(out, m, compression); });
}

// ---- Hashes.

void AppendHash(std::string* out, const CompactValue& value, bool compression) {
  HashRef hash(const_cast<CompactValue&>(value));  // read only
  if (hash.packed()) {
    ListpackBuilder lp;
    hash.ForEach([&](std::string_view f, std::string_view v) {
      lp.Append(f);
      lp.Append(v);
    });
    AppendString(out, lp.Finish(), compression);
    return;
  }
  AppendLength(out, hash.Size());
  hash.ForEach([&](std::string_view f, std::string_view v) {
    AppendString(out, f, compression);
    AppendString(out, v, compression);
  });
}

// ---- Sorted sets.

void AppendZSet(std::string* out, const ZSet& zset, bool compression) {
  const size_t n = zset.size();
  if (zset.encoding() == ZSet::kPacked) {
    // Members and scores in order; a score is the text Redis' zzlInsertAt stores (7.2's
    // d2string), which the listpack keeps as an integer when it is one.
    ListpackBuilder lp;
    if (n > 0) {
      zset.RangeByRank(0, n - 1, false, [&](std::string_view m, double score) {
        lp.Append(m);
        char text[kDoubleBufSize];
        lp.Append(std::string_view(text, FormatDouble(score, text)));
      });
    }
    AppendString(out, lp.Finish(), compression);
    return;
  }
  // RDB_TYPE_ZSET_2 from the highest score down, as Redis writes it (its loader then inserts
  // each member at the head).
  AppendLength(out, n);
  if (n > 0) {
    zset.RangeByRank(0, n - 1, true, [&](std::string_view m, double score) {
      AppendString(out, m, compression);
      rdb::AppendBinaryDouble(out, score);
    });
  }
}

// ---- Streams: RDB_TYPE_STREAM_LISTPACKS_2. Each of our nodes becomes one listpack keyed by its
// master ID, holding its live entries (Redis' master entry, then each entry relative to it).

void AppendStreamNode(std::string* out, StreamID master, StreamID last, const Stream& s,
                      bool compression, uint64_t* listpacks) {
  // The master entry names the fields of the node's first entry; entries with the same fields
  // store only their values.
  std::vector<std::string> master_fields;
  int64_t count = 0;
  s.Range(master, last, false, [&](StreamID, const Stream::FieldValues& fv) {
    if (count++ == 0) {
      for (size_t i = 0; i < fv.size(); i += 2) master_fields.emplace_back(fv[i]);
    }
    return true;
  });
  if (count == 0) return;
  ListpackBuilder lp;
  lp.AppendInt(count);
  lp.AppendInt(0);  // deleted entries: we do not keep their tombstones
  lp.AppendInt(static_cast<int64_t>(master_fields.size()));
  for (const std::string& f : master_fields) lp.Append(f);
  lp.AppendInt(0);  // the master entry's terminator
  s.Range(master, last, false, [&](StreamID id, const Stream::FieldValues& fv) {
    const size_t nfields = fv.size() / 2;
    bool same = master_fields.size() == nfields;
    for (size_t i = 0; same && i < nfields; ++i) same = master_fields[i] == fv[2 * i];
    lp.AppendInt(same ? rdb::kStreamItemSameFields : 0);
    lp.AppendInt(static_cast<int64_t>(id.ms - master.ms));
    lp.AppendInt(static_cast<int64_t>(id.seq - master.seq));
    // Field/value pairs, or only the values when the fields are the master's.
    if (!same) lp.AppendInt(static_cast<int64_t>(nfields));
    for (size_t i = 0; i < nfields; ++i) {
      if (!same) lp.Append(fv[2 * i]);
      lp.Append(fv[2 * i + 1]);
    }
    // lp-count: the elements of this entry besides itself (Redis walks entries backwards by it).
    lp.AppendInt(static_cast<int64_t>(same ? nfields + 3 : 2 * nfields + 4));
    return true;
  });
  std::string key;
  rdb::AppendRawStreamId(&key, master.ms, master.seq);
  AppendString(out, key, compression);
  AppendString(out, lp.Finish(), compression);
  ++*listpacks;
}

void AppendStream(std::string* out, const Stream& s, bool compression) {
  std::vector<StreamID> masters;
  s.ForEachNodeMaster([&](StreamID m) { masters.push_back(m); });
  std::string nodes;
  uint64_t listpacks = 0;
  for (size_t i = 0; i < masters.size(); ++i) {
    StreamID last = StreamID::Max();
    if (i + 1 < masters.size()) {
      last = masters[i + 1];
      last.Decr();
    }
    AppendStreamNode(&nodes, masters[i], last, s, compression, &listpacks);
  }
  AppendLength(out, listpacks);
  out->append(nodes);
  AppendLength(out, s.length());
  AppendLength(out, s.last_id().ms);
  AppendLength(out, s.last_id().seq);
  const StreamID first = s.first_id();
  AppendLength(out, first.ms);
  AppendLength(out, first.seq);
  AppendLength(out, s.max_deleted_entry_id().ms);
  AppendLength(out, s.max_deleted_entry_id().seq);
  AppendLength(out, s.entries_added());
  AppendLength(out, s.groups().size());
  for (const auto& [name, g] : s.groups()) {
    AppendString(out, std::string_view(name.data(), name.size()), compression);
    AppendLength(out, g->last_id.ms);
    AppendLength(out, g->last_id.seq);
    AppendLength(out, static_cast<uint64_t>(g->entries_read));  // -1 is stored as 2^64-1
    AppendLength(out, g->pel.size());
    for (const auto& [id, nack] : g->pel) {
      rdb::AppendRawStreamId(out, id.ms, id.seq);
      rdb::AppendMillis(out, nack->delivery_time);
      AppendLength(out, nack->delivery_count);
    }
    AppendLength(out, g->consumers.size());
    for (const auto& [cname, c] : g->consumers) {
      AppendString(out, std::string_view(cname.data(), cname.size()), compression);
      rdb::AppendMillis(out, c->seen_time);
      AppendLength(out, c->pel.size());
      for (const auto& [id, nack] : c->pel) rdb::AppendRawStreamId(out, id.ms, id.seq);
    }
  }
}

}  // namespace

uint8_t RdbValueType(const CompactValue& value) {
  switch (value.type()) {
    case ValueType::kString:
      return rdb::kTypeString;
    case ValueType::kList:
      return rdb::kTypeListQuicklist2;
    case ValueType::kSet:
      return value.object_encoding() == kSetIntset ? rdb::kTypeSetIntset : rdb::kTypeSet;
    case ValueType::kZSet:
      return static_cast<const ZSet*>(value.object())->encoding() == ZSet::kPacked
                 ? rdb::kTypeZSetListpack
                 : rdb::kTypeZSet2;
    case ValueType::kHash:
      return value.object_encoding() == kHashListpack ? rdb::kTypeHashListpack : rdb::kTypeHash;
    case ValueType::kStream:
      return rdb::kTypeStreamListpacks2;
  }
  LOG(FATAL) << "RdbValueType: no type " << static_cast<int>(value.type());
  return 0;
}

void AppendRdbValue(std::string* out, const CompactValue& value, bool compression) {
  switch (value.type()) {
    case ValueType::kString: {
      if (value.IsInt()) return rdb::AppendIntString(out, value.AsInt());
      char scratch[CompactValue::kScratchSize];
      return AppendString(out, value.GetString(scratch), compression);
    }
    case ValueType::kList:
      return AppendList(out, *static_cast<const List*>(value.object()), compression);
    case ValueType::kSet:
      return AppendSet(out, value, compression);
    case ValueType::kZSet:
      return AppendZSet(out, *static_cast<const ZSet*>(value.object()), compression);
    case ValueType::kHash:
      return AppendHash(out, value, compression);
    case ValueType::kStream:
      return AppendStream(out, *static_cast<const Stream*>(value.object()), compression);
  }
}

void AppendRdbKey(std::string* out, std::string_view key, const CompactValue& value,
                  const RdbKeyMeta& meta, bool compression) {
  if (meta.expire_ms >= 0) {
    out->push_back(static_cast<char>(rdb::kOpExpireTimeMs));
    rdb::AppendMillis(out, meta.expire_ms);
  }
  if (meta.idle_seconds >= 0) {
    out->push_back(static_cast<char>(rdb::kOpIdle));
    AppendLength(out, static_cast<uint64_t>(meta.idle_seconds));
  }
  if (meta.freq >= 0) {
    out->push_back(static_cast<char>(rdb::kOpFreq));
    out->push_back(static_cast<char>(std::min(meta.freq, 255)));
  }
  out->push_back(static_cast<char>(RdbValueType(value)));
  AppendString(out, key, compression);
  AppendRdbValue(out, value, compression);
}

RdbAuxFields StandardRdbAux(std::string_view redis_version, int64_t ctime, uint64_t used_mem) {
  return {{"redis-ver", std::string(redis_version)},
          {"redis-bits", "64"},
          {"ctime", std::to_string(ctime)},
          {"used-mem", std::to_string(used_mem)},
          {"aof-base", "0"}};
}

RdbWriter::RdbWriter(RdbSink* sink, RdbSaveOptions options) : sink_(sink), options_(options) {}

absl::Status RdbWriter::Flush() {
  if (buf_.empty()) return absl::OkStatus();
  if (options_.checksum) crc_ = Crc64(crc_, buf_);
  flushed_ += buf_.size();
  absl::Status s = sink_->Write(buf_);
  buf_.clear();
  return s;
}

absl::Status RdbWriter::WriteHeader(const RdbAuxFields& aux) {
  buf_ += "REDIS0010";
  for (const auto& [k, v] : aux) {
    if (absl::Status s = WriteAux(k, v); !s.ok()) return s;
  }
  return MaybeFlush();
}

absl::Status RdbWriter::WriteAux(std::string_view key, std::string_view value) {
  buf_.push_back(static_cast<char>(rdb::kOpAux));
  AppendString(&buf_, key, options_.compression);
  AppendString(&buf_, value, options_.compression);
  return MaybeFlush();
}

absl::Status RdbWriter::WriteFunction(std::string_view code) {
  buf_.push_back(static_cast<char>(rdb::kOpFunction2));
  AppendString(&buf_, code, options_.compression);
  return MaybeFlush();
}

absl::Status RdbWriter::SelectDb(uint32_t db, uint64_t keys, uint64_t expires) {
  buf_.push_back(static_cast<char>(rdb::kOpSelectDb));
  AppendLength(&buf_, db);
  buf_.push_back(static_cast<char>(rdb::kOpResizeDb));
  AppendLength(&buf_, keys);
  AppendLength(&buf_, expires);
  return MaybeFlush();
}

absl::Status RdbWriter::WriteKey(std::string_view key, const CompactValue& value,
                                 const RdbKeyMeta& meta) {
  AppendRdbKey(&buf_, key, value, meta, options_.compression);
  return MaybeFlush();
}

absl::Status RdbWriter::WriteRecords(std::string_view records) {
  buf_.append(records);
  return MaybeFlush();
}

absl::Status RdbWriter::Finish() {
  buf_.push_back(static_cast<char>(rdb::kOpEof));
  if (options_.checksum) crc_ = Crc64(crc_, buf_);
  const uint64_t crc = options_.checksum ? crc_ : 0;
  for (int i = 0; i < 8; ++i) buf_.push_back(static_cast<char>((crc >> (8 * i)) & 0xff));
  flushed_ += buf_.size();
  absl::Status s = sink_->Write(buf_);
  buf_.clear();
  return s;
}

}  // namespace shardis::core
