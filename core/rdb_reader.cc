#include "core/rdb_reader.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include "core/hash_object.h"
#include "core/list.h"
#include "core/listpack.h"
#include "core/number.h"
#include "core/rdb_format.h"
#include "core/rdb_intset.h"
#include "core/set_object.h"
#include "core/stream.h"
#include "core/value_object.h"
#include "core/ziplist.h"
#include "core/zset.h"

namespace shardis::core {

namespace {

using rdb::Cat;

std::string Num(uint64_t v) { return std::to_string(v); }

absl::Status Corrupt(uint64_t at, std::string_view msg) { return RdbInput::Corrupt(at, msg); }

// ---- Packed blobs: read, validate, and walk them as a flat sequence of elements.

enum class Blob { kListpack, kZiplist };

// A validated listpack or ziplist and a walk over its elements.
class PackedBlob {
 public:
  absl::Status Load(RdbInput& in, Blob kind, std::string_view what) {
    at_ = in.offset();
    kind_ = kind;
    if (absl::Status s = in.ReadString(&bytes_, what); !s.ok()) return s;
    std::string why;
    const bool ok = kind == Blob::kListpack ? ValidateListpack(bytes_, &count_, &why)
                                            : ValidateZiplist(bytes_, &count_, &why);
    if (!ok) return Corrupt(at_, Cat({"invalid ", what, ": ", why}));
    if (kind == Blob::kListpack) {
      lp_.emplace(bytes_);
    } else {
      zl_.emplace(bytes_);
    }
    return absl::OkStatus();
  }
  uint32_t count() const { return count_; }
  uint64_t at() const { return at_; }
  // The next element as a string (integers formatted into storage owned by the caller).
  bool Next(PackedEntry* e) { return kind_ == Blob::kListpack ? lp_->Next(e) : zl_->Next(e); }

 private:
  std::string bytes_;
  Blob kind_ = Blob::kListpack;
  uint32_t count_ = 0;
  uint64_t at_ = 0;
  std::optional<ListpackReader> lp_;
  std::optional<ZiplistReader> zl_;
};

// ---- Builders that take elements one by one, as the commands would add them.

class SetBuilder {
 public:
  // False when the member was already there.
  bool Add(std::string_view m) {
    if (!started_) {
      SetRef::InitCell(&cell_, m);
      started_ = true;
    }
    return SetRef(cell_).Add(m);
  }
  bool empty() const { return !started_; }
  CompactValue Take() { return std::move(cell_); }

 private:
  CompactValue cell_;
  bool started_ = false;
};

class HashBuilder {
 public:
  bool Add(std::string_view f, std::string_view v) {
    if (!started_) {
      HashRef::InitCell(&cell_);
      started_ = true;
    }
    return HashRef(cell_).Set(f, v);
  }
  bool empty() const { return !started_; }
  CompactValue Take() { return std::move(cell_); }

 private:
  CompactValue cell_;
  bool started_ = false;
};

class ZSetBuilder {
 public:
  ZSetBuilder()
      : zset_(ShardNew<ZSet>(ZSetMaxListpackEntries() == 0 ? ZSet::kLarge : ZSet::kPacked)),
        cell_(CompactValue::FromObject(ValueType::kZSet, zset_)) {}
  bool Add(std::string_view m, double score) {
    double ignored;
    return (zset_->Add(m, score, 0, &ignored) & kZAddOutAdded) != 0;
  }
  bool empty() const { return zset_->size() == 0; }
  CompactValue Take() { return std::move(cell_); }

 private:
  ZSet* zset_;
  CompactValue cell_;  // owns zset_ (freed on an error path too)
};

// ---- Strings and old scores.

// A listpack/ziplist zset score: an integer, or the text of a double as zzlStrtod reads it.
bool ParseScore(const PackedEntry& e, double* score) {
  if (e.is_int) {
    *score = static_cast<double>(e.ival);
    return true;
  }
  if (e.sval.empty() || e.sval.size() > 128) return false;
  char buf[130];
  std::memcpy(buf, e.sval.data(), e.sval.size());
  buf[e.sval.size()] = '\0';
  char* end = nullptr;
  *score = std::strtod(buf, &end);
  return end == buf + e.sval.size() && !std::isnan(*score);
}

// ---- Value readers, one per type family.

absl::Status ReadList(RdbInput& in, uint8_t type, CompactValue* out, bool* empty) {
  List* list = ShardNew<List>();
  CompactValue cell = CompactValue::FromObject(ValueType::kList, list, List::kEncodingQuicklist);
  char scratch[kInt64BufSize];
  auto push_blob = [&](PackedBlob& blob) {
    PackedEntry e;
    while (blob.Next(&e)) list->Push(ListEnd::kTail, e.Str(scratch));
  };
  if (type == rdb::kTypeListZiplist) {
    PackedBlob blob;
    if (absl::Status s = blob.Load(in, Blob::kZiplist, "a list ziplist"); !s.ok()) return s;
    push_blob(blob);
  } else {
    uint64_t n;
    if (absl::Status s = in.ReadLength(&n, "the length of a list"); !s.ok()) return s;
    std::string elem;
    for (uint64_t i = 0; i < n; ++i) {
      if (type == rdb::kTypeList) {
        if (absl::Status s = in.ReadString(&elem, "a list element"); !s.ok()) return s;
        list->Push(ListEnd::kTail, elem);
        continue;
      }
      uint64_t container = rdb::kQuicklistNodePacked;
      if (type == rdb::kTypeListQuicklist2) {
        const uint64_t cat = in.offset();
        if (absl::Status s = in.ReadLength(&container, "a quicklist node container"); !s.ok()) {
          return s;
        }
        if (container != rdb::kQuicklistNodePacked && container != rdb::kQuicklistNodePlain) {
          return Corrupt(cat, Cat({"unknown quicklist node container ", Num(container)}));
        }
      }
      if (container == rdb::kQuicklistNodePlain) {
        const uint64_t pat = in.offset();
        if (absl::Status s = in.ReadString(&elem, "a plain quicklist node"); !s.ok()) return s;
        if (elem.empty()) return Corrupt(pat, "empty plain quicklist node");  // as Redis refuses
        list->Push(ListEnd::kTail, elem);
        continue;
      }
      PackedBlob blob;
      const Blob kind = type == rdb::kTypeListQuicklist2 ? Blob::kListpack : Blob::kZiplist;
      if (absl::Status s = blob.Load(in, kind, "a quicklist node"); !s.ok()) return s;
      push_blob(blob);  // an empty node is skipped, as Redis does
    }
  }
  if (list->empty()) {
    *empty = true;
    return absl::OkStatus();
  }
  // Redis 7.2 leaves a list of the old ziplist type (10) a quicklist whatever its size.
  list->ConvertAfterBuilding(/*try_listpack=*/type != rdb::kTypeListZiplist);
  *out = std::move(cell);
  return absl::OkStatus();
}

absl::Status ReadSet(RdbInput& in, uint8_t type, CompactValue* out, bool* empty) {
  SetBuilder set;
  const uint64_t at = in.offset();
  auto dup = [&] { return Corrupt(at, "duplicate set member"); };
  if (type == rdb::kTypeSet) {
    uint64_t n;
    if (absl::Status s = in.ReadLength(&n, "the size of a set"); !s.ok()) return s;
    std::string m;
    for (uint64_t i = 0; i < n; ++i) {
      if (absl::Status s = in.ReadString(&m, "a set member"); !s.ok()) return s;
      if (!set.Add(m)) return dup();
    }
  } else if (type == rdb::kTypeSetIntset) {
    std::string blob;
    if (absl::Status s = in.ReadString(&blob, "an intset"); !s.ok()) return s;
    std::vector<int64_t> values;
    std::string why;
    if (!DecodeRedisIntset(blob, &values, &why)) return Corrupt(at, Cat({"invalid intset: ", why}));
    char scratch[kInt64BufSize];
    for (int64_t v : values) {
      if (!set.Add(std::string_view(scratch, FormatInt64(v, scratch)))) return dup();
    }
  } else {  // kTypeSetListpack
    PackedBlob blob;
    if (absl::Status s = blob.Load(in, Blob::kListpack, "a set listpack"); !s.ok()) return s;
    char scratch[kInt64BufSize];
    PackedEntry e;
    while (blob.Next(&e)) {
      if (!set.Add(e.Str(scratch))) return dup();
    }
  }
  if (set.empty()) {
    *empty = true;
    return absl::OkStatus();
  }
  *out = set.Take();
  return absl::OkStatus();
}

absl::Status ReadHash(RdbInput& in, uint8_t type, CompactValue* out, bool* empty) {
  HashBuilder hash;
  const uint64_t at = in.offset();
  auto dup = [&] { return Corrupt(at, "duplicate hash field"); };
  if (type == rdb::kTypeHash) {
    uint64_t n;
    if (absl::Status s = in.ReadLength(&n, "the size of a hash"); !s.ok()) return s;
    std::string f, v;
    for (uint64_t i = 0; i < n; ++i) {
      if (absl::Status s = in.ReadString(&f, "a hash field"); !s.ok()) return s;
      if (absl::Status s = in.ReadString(&v, "a hash value"); !s.ok()) return s;
      if (!hash.Add(f, v)) return dup();
    }
  } else if (type == rdb::kTypeHashZipmap) {
    std::string blob;
    if (absl::Status s = in.ReadString(&blob, "a zipmap"); !s.ok()) return s;
    std::string why;
    if (!ValidateZipmap(blob, &why)) return Corrupt(at, Cat({"invalid zipmap: ", why}));
    ZipmapReader r(blob);
    std::string_view f, v;
    while (r.Next(&f, &v)) {
      if (!hash.Add(f, v)) return dup();
    }
  } else {
    PackedBlob blob;
    const Blob kind = type == rdb::kTypeHashListpack ? Blob::kListpack : Blob::kZiplist;
    if (absl::Status s = blob.Load(in, kind, "a hash blob"); !s.ok()) return s;
    if (blob.count() % 2 != 0) return Corrupt(at, "hash blob with an odd number of elements");
    char fs[kInt64BufSize], vs[kInt64BufSize];
    PackedEntry f, v;
    while (blob.Next(&f) && blob.Next(&v)) {
      if (!hash.Add(f.Str(fs), v.Str(vs))) return dup();
    }
  }
  if (hash.empty()) {
    *empty = true;
    return absl::OkStatus();
  }
  *out = hash.Take();
  return absl::OkStatus();
}

absl::Status ReadZSet(RdbInput& in, uint8_t type, CompactValue* out, bool* empty) {
  ZSetBuilder zset;
  const uint64_t at = in.offset();
  auto dup = [&] { return Corrupt(at, "duplicate sorted set member"); };
  if (type == rdb::kTypeZSet || type == rdb::kTypeZSet2) {
    uint64_t n;
    if (absl::Status s = in.ReadLength(&n, "the size of a sorted set"); !s.ok()) return s;
    std::string m;
    for (uint64_t i = 0; i < n; ++i) {
      if (absl::Status s = in.ReadString(&m, "a sorted set member"); !s.ok()) return s;
      const uint64_t sat = in.offset();
      double score;
      absl::Status s = type == rdb::kTypeZSet2 ? in.ReadBinaryDouble(&score, "a score")
                                               : in.ReadStringDouble(&score, "a score");
      if (!s.ok()) return s;
      if (std::isnan(score)) return Corrupt(sat, "sorted set score is NaN");
      if (!zset.Add(m, score)) return dup();
    }
  } else {
    PackedBlob blob;
    const Blob kind = type == rdb::kTypeZSetListpack ? Blob::kListpack : Blob::kZiplist;
    if (absl::Status s = blob.Load(in, kind, "a sorted set blob"); !s.ok()) return s;
    if (blob.count() % 2 != 0) return Corrupt(at, "sorted set blob with an odd number of elements");
    char ms[kInt64BufSize];
    PackedEntry m, sc;
    while (blob.Next(&m) && blob.Next(&sc)) {
      double score;
      if (!ParseScore(sc, &score)) return Corrupt(at, "sorted set blob with an invalid score");
      if (!zset.Add(m.Str(ms), score)) return dup();
    }
  }
  if (zset.empty()) {
    *empty = true;
    return absl::OkStatus();
  }
  *out = zset.Take();
  return absl::OkStatus();
}

// ---- Streams.

// Walks one stream node listpack (Redis' format, see t_stream.c): the master entry, then each
// entry relative to the master ID. Checks what streamValidateListpackIntegrity checks, plus that
// the IDs ascend.
class StreamNodeParser {
 public:
  StreamNodeParser(PackedBlob* blob, StreamID master, uint64_t at)
      : blob_(blob), master_(master), at_(at) {}

  absl::Status Parse(Stream* s, StreamID* prev, bool* have_prev,
                     std::vector<StreamID>* deleted) {
    int64_t count, dels, nmaster;
    if (!Int(&count) || !Int(&dels) || !Int(&nmaster) || count < 0 || dels < 0 || nmaster < 0 ||
        uint64_t(nmaster) > blob_->count()) {
      return Bad("bad master entry");
    }
    std::vector<std::string> master_fields;
    for (int64_t i = 0; i < nmaster; ++i) {
      std::string f;
      if (!Str(&f)) return Bad("missing master field");
      master_fields.push_back(std::move(f));
    }
    int64_t zero;
    if (!Int(&zero) || zero != 0) return Bad("master entry without its terminator");
    if (count + dels == 0) return Bad("empty node");
    std::vector<std::string> storage;
    std::vector<std::string_view> fv;
    for (int64_t k = 0; k < count + dels; ++k) {
      int64_t flags, msd, seqd;
      if (!Int(&flags) || !Int(&msd) || !Int(&seqd)) return Bad("truncated entry");
      const StreamID id{master_.ms + uint64_t(msd), master_.seq + uint64_t(seqd)};
      if (*have_prev && id <= *prev) return Bad("entry IDs do not ascend");
      int64_t nfields = nmaster;
      const bool same = (flags & rdb::kStreamItemSameFields) != 0;
      storage.clear();
      if (!same) {
        if (!Int(&nfields) || nfields < 0 || uint64_t(nfields) > blob_->count()) {
          return Bad("bad field count");
        }
      }
      // Field/value pairs, or only the values when the fields are the master's.
      for (int64_t i = 0; i < nfields; ++i) {
        if (same) {
          storage.emplace_back(master_fields[i]);
        } else {
          storage.emplace_back();
          if (!Str(&storage.back())) return Bad("missing field");
        }
        storage.emplace_back();
        if (!Str(&storage.back())) return Bad("missing value");
      }
      int64_t lp_count;
      const int64_t expected = same ? nfields + 3 : 2 * nfields + 4;
      if (!Int(&lp_count) || lp_count != expected) return Bad("wrong lp-count");
      fv.assign(storage.begin(), storage.end());
      s->Append(id, fv);
      if (flags & rdb::kStreamItemDeleted) deleted->push_back(id);
      *prev = id;
      *have_prev = true;
    }
    PackedEntry extra;
    if (blob_->Next(&extra)) return Bad("elements after the last entry");
    return absl::OkStatus();
  }

 private:
  absl::Status Bad(std::string_view what) {
    return Corrupt(at_, Cat({"invalid stream node: ", what}));
  }
  bool Int(int64_t* v) {
    PackedEntry e;
    if (!blob_->Next(&e)) return false;
    if (e.is_int) {
      *v = e.ival;
      return true;
    }
    return ParseInt64(e.sval, v);  // Redis' lpGetInteger also reads an integer kept as text
  }
  bool Str(std::string* out) {
    PackedEntry e;
    if (!blob_->Next(&e)) return false;
    char scratch[kInt64BufSize];
    out->assign(e.Str(scratch));
    return true;
  }

  PackedBlob* blob_;
  StreamID master_;
  uint64_t at_;
};

absl::Status ReadStream(RdbInput& in, uint8_t type, CompactValue* out) {
  Stream* s = ShardNew<Stream>();
  CompactValue cell = CompactValue::FromObject(ValueType::kStream, s);
  uint64_t nodes;
  if (absl::Status st = in.ReadLength(&nodes, "the number of stream nodes"); !st.ok()) return st;
  StreamID prev;
  bool have_prev = false;
  std::vector<StreamID> deleted;
  bool have_node = false;
  StreamID prev_master;
  for (uint64_t i = 0; i < nodes; ++i) {
    const uint64_t kat = in.offset();
    std::string key;
    if (absl::Status st = in.ReadString(&key, "a stream node key"); !st.ok()) return st;
    if (key.size() != 16) return Corrupt(kat, "stream node key is not a 16-byte stream ID");
    StreamID master;
    for (int b = 0; b < 8; ++b) master.ms = master.ms << 8 | uint8_t(key[b]);
    for (int b = 8; b < 16; ++b) master.seq = master.seq << 8 | uint8_t(key[b]);
    if (have_node && master <= prev_master) return Corrupt(kat, "stream node keys do not ascend");
    have_node = true;
    prev_master = master;
    PackedBlob blob;
    if (absl::Status st = blob.Load(in, Blob::kListpack, "a stream node listpack"); !st.ok()) {
      return st;
    }
    StreamNodeParser parser(&blob, master, blob.at());
    if (absl::Status st = parser.Parse(s, &prev, &have_prev, &deleted); !st.ok()) return st;
  }
  // Tombstones go last, so that a node whose first entries are deleted is not dropped before
  // its live ones arrive.
  for (StreamID id : deleted) s->Delete(id);
  const uint64_t mat = in.offset();
  uint64_t length, last_ms, last_seq;
  if (absl::Status st = in.ReadLength(&length, "the length of a stream"); !st.ok()) return st;
  if (absl::Status st = in.ReadLength(&last_ms, "a stream's last ID"); !st.ok()) return st;
  if (absl::Status st = in.ReadLength(&last_seq, "a stream's last ID"); !st.ok()) return st;
  if (length != s->length()) {
    return Corrupt(mat, Cat({"stream length ", Num(length), " but ", Num(s->length()),
                             " entries in its nodes"}));
  }
  const StreamID last_id{last_ms, last_seq};
  if (have_prev && last_id < prev) return Corrupt(mat, "stream last ID below its last entry");
  s->set_last_id(last_id);
  const bool v2 = type != rdb::kTypeStreamListpacks;
  if (v2) {
    uint64_t f_ms, f_seq, d_ms, d_seq, added;
    for (uint64_t* v : {&f_ms, &f_seq, &d_ms, &d_seq, &added}) {
      if (absl::Status st = in.ReadLength(v, "stream metadata"); !st.ok()) return st;
    }
    s->set_max_deleted_entry_id(StreamID{d_ms, d_seq});
    s->set_entries_added(added);
  } else {
    // Redis 7.0 loading a 6.2 stream: no tombstones known, every entry counted as added.
    s->set_max_deleted_entry_id(StreamID{});
    s->set_entries_added(length);
  }
  uint64_t ngroups;
  if (absl::Status st = in.ReadLength(&ngroups, "the number of consumer groups"); !st.ok()) {
    return st;
  }
  for (uint64_t g = 0; g < ngroups; ++g) {
    const uint64_t gat = in.offset();
    std::string name;
    uint64_t gms, gseq;
    if (absl::Status st = in.ReadString(&name, "a consumer group name"); !st.ok()) return st;
    if (absl::Status st = in.ReadLength(&gms, "a group's last ID"); !st.ok()) return st;
    if (absl::Status st = in.ReadLength(&gseq, "a group's last ID"); !st.ok()) return st;
    const StreamID gid{gms, gseq};
    int64_t entries_read;
    if (v2) {
      uint64_t er;
      if (absl::Status st = in.ReadLength(&er, "a group's entries-read"); !st.ok()) return st;
      entries_read = static_cast<int64_t>(er);
    } else {
      entries_read = s->EstimateDistanceFromFirstEverEntry(gid);
    }
    StreamGroup* group = s->CreateGroup(name, gid, entries_read);
    if (group == nullptr) return Corrupt(gat, "duplicate consumer group");
    uint64_t npel;
    if (absl::Status st = in.ReadLength(&npel, "the size of a group PEL"); !st.ok()) return st;
    for (uint64_t k = 0; k < npel; ++k) {
      const uint64_t pat = in.offset();
      uint64_t ms, seq, count;
      int64_t time;
      if (absl::Status st = in.ReadRawStreamId(&ms, &seq, "a PEL ID"); !st.ok()) return st;
      if (absl::Status st = in.ReadMillis(&time, "a delivery time"); !st.ok()) return st;
      if (absl::Status st = in.ReadLength(&count, "a delivery count"); !st.ok()) return st;
      StreamNack* nack = ShardNew<StreamNack>();
      nack->delivery_time = time;
      nack->delivery_count = count;
      if (!group->pel.emplace(StreamID{ms, seq}, nack).second) {
        ShardDelete(nack);
        return Corrupt(pat, "duplicate group PEL entry");
      }
    }
    uint64_t nconsumers;
    if (absl::Status st = in.ReadLength(&nconsumers, "the number of consumers"); !st.ok()) {
      return st;
    }
    for (uint64_t c = 0; c < nconsumers; ++c) {
      const uint64_t cat = in.offset();
      std::string cname;
      int64_t seen, active = 0;
      if (absl::Status st = in.ReadString(&cname, "a consumer name"); !st.ok()) return st;
      if (absl::Status st = in.ReadMillis(&seen, "a consumer's seen time"); !st.ok()) return st;
      if (type == rdb::kTypeStreamListpacks3) {
        if (absl::Status st = in.ReadMillis(&active, "a consumer's active time"); !st.ok()) {
          return st;
        }
      }
      bool created;
      StreamConsumer* consumer = group->GetOrCreateConsumer(cname, seen, &created);
      if (!created) return Corrupt(cat, "duplicate consumer");
      // Files without it (Redis 7.0's) take the seen time, as Redis 7.2 loads them.
      consumer->active_time = type == rdb::kTypeStreamListpacks3 ? active : seen;
      uint64_t ncpel;
      if (absl::Status st = in.ReadLength(&ncpel, "the size of a consumer PEL"); !st.ok()) {
        return st;
      }
      for (uint64_t k = 0; k < ncpel; ++k) {
        const uint64_t pat = in.offset();
        uint64_t ms, seq;
        if (absl::Status st = in.ReadRawStreamId(&ms, &seq, "a consumer PEL ID"); !st.ok()) {
          return st;
        }
        auto it = group->pel.find(StreamID{ms, seq});
        if (it == group->pel.end()) return Corrupt(pat, "consumer PEL entry not in the group PEL");
        if (it->second->consumer != nullptr) return Corrupt(pat, "PEL entry of two consumers");
        it->second->consumer = consumer;
        consumer->pel.emplace(it->first, it->second);
      }
    }
    for (const auto& [id, nack] : group->pel) {
      if (nack->consumer == nullptr) return Corrupt(gat, "group PEL entry without a consumer");
    }
  }
  *out = std::move(cell);
  return absl::OkStatus();
}

}  // namespace

std::string RdbModuleTypeName(uint64_t module_id) {
  static constexpr char kCharset[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string name(9, ' ');
  uint64_t id = module_id >> 10;
  for (int j = 8; j >= 0; --j) {
    name[j] = kCharset[id & 63];
    id >>= 6;
  }
  return name;
}

bool IsRdbValueType(uint8_t type) {
  return type <= rdb::kTypeModule2 || (type >= rdb::kTypeHashZipmap &&
                                     type <= rdb::kTypeStreamListpacks3);
}

absl::Status ReadRdbValue(RdbInput& in, uint8_t type, int version, CompactValue* out,
                          bool* empty) {
  *empty = false;
  switch (type) {
    case rdb::kTypeString: {
      std::string s;
      if (absl::Status st = in.ReadString(&s, "a string value"); !st.ok()) return st;
      *out = CompactValue::FromString(s);
      return absl::OkStatus();
    }
    case rdb::kTypeList:
    case rdb::kTypeListZiplist:
    case rdb::kTypeListQuicklist:
    case rdb::kTypeListQuicklist2:
      return ReadList(in, type, out, empty);
    case rdb::kTypeSet:
    case rdb::kTypeSetIntset:
    case rdb::kTypeSetListpack:
      return ReadSet(in, type, out, empty);
    case rdb::kTypeHash:
    case rdb::kTypeHashZipmap:
    case rdb::kTypeHashZiplist:
    case rdb::kTypeHashListpack:
      return ReadHash(in, type, out, empty);
    case rdb::kTypeZSet:
    case rdb::kTypeZSet2:
    case rdb::kTypeZSetZiplist:
    case rdb::kTypeZSetListpack:
      return ReadZSet(in, type, out, empty);
    case rdb::kTypeStreamListpacks:
    case rdb::kTypeStreamListpacks2:
    case rdb::kTypeStreamListpacks3:
      return ReadStream(in, type, out);
    case rdb::kTypeModule:
    case rdb::kTypeModule2: {
      const uint64_t at = in.offset();
      uint64_t id;
      if (absl::Status st = in.ReadLength(&id, "a module type id"); !st.ok()) return st;
      return Corrupt(at, Cat({"module data type '", RdbModuleTypeName(id),
                              "' cannot be loaded (shardis has no modules)"}));
    }
    default:
      break;
  }
  (void)version;
  return Corrupt(in.offset(), Cat({"unknown value type ", Num(type)}));
}

namespace {

// The bytes of a payload that is exactly one string with a plain length (no integer or LZF
// encoding), or nullopt.
std::optional<std::string_view> PlainRdbString(std::string_view payload) {
  if (payload.empty()) return std::nullopt;
  const auto byte = [&](size_t i) { return uint64_t(static_cast<unsigned char>(payload[i])); };
  const uint8_t first = static_cast<uint8_t>(byte(0));
  uint64_t len = 0;
  size_t header = 0;
  if ((first >> 6) == rdb::k6BitLen) {
    len = first & 0x3f;
    header = 1;
  } else if ((first >> 6) == rdb::k14BitLen) {
    if (payload.size() < 2) return std::nullopt;
    len = (uint64_t(first & 0x3f) << 8) | byte(1);
    header = 2;
  } else if (first == rdb::k32BitLen || first == rdb::k64BitLen) {
    header = first == rdb::k32BitLen ? 5 : 9;
    if (payload.size() < header) return std::nullopt;
    for (size_t i = 1; i < header; ++i) len = (len << 8) | byte(i);
  } else {
    return std::nullopt;  // an encoded string: the reader decodes it
  }
  if (payload.size() - header != len) return std::nullopt;
  return payload.substr(header);
}

}  // namespace

absl::Status DecodeRdbValue(uint8_t type, int version, std::string_view payload,
                            CompactValue* out, bool* empty) {
  // Most keys of a cache are plain strings: their bytes are taken as they are, with no reader.
  if (type == rdb::kTypeString) {
    if (std::optional<std::string_view> s = PlainRdbString(payload)) {
      *empty = false;
      *out = CompactValue::FromString(*s);
      return absl::OkStatus();
    }
  }
  StringSource src(payload);
  RdbInput in(&src, std::min(payload.size(), RdbInput::kDefaultBufferSize));
  if (absl::Status s = ReadRdbValue(in, type, version, out, empty); !s.ok()) return s;
  if (in.offset() != payload.size()) {
    return Corrupt(in.offset(), "bytes left after the value");
  }
  return absl::OkStatus();
}

absl::Status SkipRdbValue(RdbInput& in, uint8_t type) {
  uint64_t n;
  auto len = [&](std::string_view what) { return in.ReadLength(&n, what); };
  auto strings = [&](uint64_t count, std::string_view what) {
    for (uint64_t i = 0; i < count; ++i) {
      if (absl::Status s = in.SkipString(what); !s.ok()) return s;
    }
    return absl::OkStatus();
  };
  switch (type) {
    case rdb::kTypeString:
    case rdb::kTypeListZiplist:
    case rdb::kTypeSetIntset:
    case rdb::kTypeSetListpack:
    case rdb::kTypeHashZipmap:
    case rdb::kTypeHashZiplist:
    case rdb::kTypeHashListpack:
    case rdb::kTypeZSetZiplist:
    case rdb::kTypeZSetListpack:
      return in.SkipString("a value");
    case rdb::kTypeList:
    case rdb::kTypeSet:
    case rdb::kTypeListQuicklist:
      if (absl::Status s = len("the size of a value"); !s.ok()) return s;
      return strings(n, "an element");
    case rdb::kTypeHash:
      if (absl::Status s = len("the size of a hash"); !s.ok()) return s;
      if (n > UINT64_MAX / 2) return Corrupt(in.offset(), "hash size too large");
      return strings(2 * n, "a hash field or value");
    case rdb::kTypeListQuicklist2: {
      if (absl::Status s = len("the length of a list"); !s.ok()) return s;
      const uint64_t nodes = n;
      for (uint64_t i = 0; i < nodes; ++i) {
        if (absl::Status s = len("a quicklist node container"); !s.ok()) return s;
        if (absl::Status s = in.SkipString("a quicklist node"); !s.ok()) return s;
      }
      return absl::OkStatus();
    }
    case rdb::kTypeZSet:
    case rdb::kTypeZSet2: {
      if (absl::Status s = len("the size of a sorted set"); !s.ok()) return s;
      const uint64_t members = n;
      for (uint64_t i = 0; i < members; ++i) {
        if (absl::Status s = in.SkipString("a sorted set member"); !s.ok()) return s;
        if (type == rdb::kTypeZSet2) {
          if (absl::Status s = in.Skip(8, "a score"); !s.ok()) return s;
        } else {
          uint8_t l;
          if (absl::Status s = in.ReadByte(&l, "a score"); !s.ok()) return s;
          if (l < 253) {
            if (absl::Status s = in.Skip(l, "a score"); !s.ok()) return s;
          }
        }
      }
      return absl::OkStatus();
    }
    case rdb::kTypeStreamListpacks:
    case rdb::kTypeStreamListpacks2:
    case rdb::kTypeStreamListpacks3: {
      const bool v2 = type != rdb::kTypeStreamListpacks;
      if (absl::Status s = len("the number of stream nodes"); !s.ok()) return s;
      if (n > UINT64_MAX / 2) return Corrupt(in.offset(), "too many stream nodes");
      if (absl::Status s = strings(2 * n, "a stream node"); !s.ok()) return s;
      for (int i = 0; i < (v2 ? 8 : 3); ++i) {
        if (absl::Status s = len("stream metadata"); !s.ok()) return s;
      }
      if (absl::Status s = len("the number of consumer groups"); !s.ok()) return s;
      const uint64_t groups = n;
      for (uint64_t g = 0; g < groups; ++g) {
        if (absl::Status s = in.SkipString("a consumer group name"); !s.ok()) return s;
        for (int i = 0; i < (v2 ? 3 : 2); ++i) {
          if (absl::Status s = len("a group's IDs"); !s.ok()) return s;
        }
        if (absl::Status s = len("the size of a group PEL"); !s.ok()) return s;
        const uint64_t pel = n;
        for (uint64_t k = 0; k < pel; ++k) {
          if (absl::Status s = in.Skip(24, "a PEL entry"); !s.ok()) return s;
          if (absl::Status s = len("a delivery count"); !s.ok()) return s;
        }
        if (absl::Status s = len("the number of consumers"); !s.ok()) return s;
        const uint64_t consumers = n;
        for (uint64_t c = 0; c < consumers; ++c) {
          if (absl::Status s = in.SkipString("a consumer name"); !s.ok()) return s;
          const int times = type == rdb::kTypeStreamListpacks3 ? 16 : 8;
          if (absl::Status s = in.Skip(times, "a consumer's times"); !s.ok()) return s;
          if (absl::Status s = len("the size of a consumer PEL"); !s.ok()) return s;
          if (n > UINT64_MAX / 16) return Corrupt(in.offset(), "consumer PEL too large");
          if (absl::Status s = in.Skip(16 * n, "a consumer PEL"); !s.ok()) return s;
        }
      }
      return absl::OkStatus();
    }
    default: {
      // Module values (refused) and unknown types: the decoder says why.
      bool empty;
      CompactValue ignored;
      return ReadRdbValue(in, type, 0, &ignored, &empty);
    }
  }
}

// ---- The file.

RdbReader::RdbReader(RdbSource* source, uint32_t databases)
    : in_(source), databases_(databases) {}

absl::Status RdbReader::ReadHeader() {
  char magic[9];
  if (absl::Status s = in_.ReadExact(magic, 9, "the RDB signature"); !s.ok()) return s;
  if (std::memcmp(magic, "REDIS", 5) != 0) {
    return Corrupt(0, "not an RDB file (no REDIS signature)");
  }
  int v = 0;
  for (int i = 5; i < 9; ++i) {
    if (magic[i] < '0' || magic[i] > '9') return Corrupt(5, "the RDB version is not a number");
    v = v * 10 + (magic[i] - '0');
  }
  if (v < rdb::kMinReadVersion || v > rdb::kMaxReadVersion) {
    return absl::FailedPreconditionError(
        Cat({"RDB version ", Num(v), " is not supported (shardis reads versions 9 to 11: Redis "
             "6.2 to 7.2, Valkey 8)"}));
  }
  version_ = v;
  return absl::OkStatus();
}

absl::Status RdbReader::SkipModuleAux(uint64_t at) {
  uint64_t id, when_op, when;
  if (absl::Status s = in_.ReadLength(&id, "a module id"); !s.ok()) return s;
  if (absl::Status s = in_.ReadLength(&when_op, "a module aux opcode"); !s.ok()) return s;
  if (when_op != rdb::kModuleOpUint) return Corrupt(at, "bad module aux 'when' opcode");
  if (absl::Status s = in_.ReadLength(&when, "a module aux 'when'"); !s.ok()) return s;
  // The module value is a sequence of typed fields up to an EOF opcode, so it can be skipped
  // without the module (what redis-check-rdb does).
  std::string scratch;
  while (true) {
    const uint64_t oat = in_.offset();
    uint64_t op, v;
    if (absl::Status s = in_.ReadLength(&op, "a module value opcode"); !s.ok()) return s;
    switch (op) {
      case rdb::kModuleOpEof:
        skipped_module_aux_.push_back(RdbModuleTypeName(id));
        return absl::OkStatus();
      case rdb::kModuleOpSint:
      case rdb::kModuleOpUint:
        if (absl::Status s = in_.ReadLength(&v, "a module integer"); !s.ok()) return s;
        break;
      case rdb::kModuleOpFloat: {
        char f[4];
        if (absl::Status s = in_.ReadExact(f, 4, "a module float"); !s.ok()) return s;
        break;
      }
      case rdb::kModuleOpDouble: {
        double d;
        if (absl::Status s = in_.ReadBinaryDouble(&d, "a module double"); !s.ok()) return s;
        break;
      }
      case rdb::kModuleOpString:
        if (absl::Status s = in_.ReadString(&scratch, "a module string"); !s.ok()) return s;
        break;
      default:
        return Corrupt(oat, Cat({"unknown module value opcode ", Num(op)}));
    }
  }
}

absl::StatusOr<bool> RdbReader::NextKey(uint8_t* type_out, std::string* key,
                                        int64_t* expire_out, int64_t* idle_out, int* freq_out) {
  if (done_) return false;
  if (version_ == 0) return absl::FailedPreconditionError("ReadHeader first");
  int64_t expire = -1, idle = -1;
  int freq = -1;
  while (true) {
    const uint64_t at = in_.offset();
    uint8_t type;
    if (absl::Status s = in_.ReadByte(&type, "a type or opcode"); !s.ok()) return s;
    switch (type) {
      case rdb::kOpExpireTimeMs:
        if (absl::Status s = in_.ReadMillis(&expire, "an expire time"); !s.ok()) return s;
        continue;
      case rdb::kOpExpireTime: {
        unsigned char b[4];
        if (absl::Status s = in_.ReadExact(reinterpret_cast<char*>(b), 4, "an expire time");
            !s.ok()) {
          return s;
        }
        const int32_t secs = int32_t(uint32_t{b[0]} | uint32_t{b[1]} << 8 |
                                     uint32_t{b[2]} << 16 | uint32_t{b[3]} << 24);
        expire = int64_t{secs} * 1000;
        continue;
      }
      case rdb::kOpFreq: {
        uint8_t f;
        if (absl::Status s = in_.ReadByte(&f, "an LFU frequency"); !s.ok()) return s;
        freq = f;
        continue;
      }
      case rdb::kOpIdle: {
        uint64_t v;
        if (absl::Status s = in_.ReadLength(&v, "an LRU idle time"); !s.ok()) return s;
        idle = static_cast<int64_t>(v);
        continue;
      }
      case rdb::kOpEof: {
        const uint64_t computed = in_.crc();
        const uint64_t cat = in_.offset();
        unsigned char b[8];
        if (absl::Status s = in_.ReadExact(reinterpret_cast<char*>(b), 8, "the checksum");
            !s.ok()) {
          return s;
        }
        uint64_t stored = 0;
        for (int i = 0; i < 8; ++i) stored |= uint64_t(b[i]) << (8 * i);
        if (stored != 0 && stored != computed) {
          char buf[96];
          snprintf(buf, sizeof(buf),
                   "wrong checksum: the file says %016llx, its content has %016llx",
                   static_cast<unsigned long long>(stored),
                   static_cast<unsigned long long>(computed));
          return Corrupt(cat, buf);
        }
        checksum_checked_ = stored != 0;
        done_ = true;
        return false;
      }
      case rdb::kOpSelectDb: {
        uint64_t db;
        if (absl::Status s = in_.ReadLength(&db, "a database number"); !s.ok()) return s;
        if (db >= databases_) {
          return Corrupt(at, Cat({"database ", Num(db), " out of range (", Num(databases_),
                                  " databases)"}));
        }
        db_ = static_cast<uint32_t>(db);
        continue;
      }
      case rdb::kOpResizeDb: {
        uint64_t keys, expires;
        if (absl::Status s = in_.ReadLength(&keys, "a RESIZEDB key count"); !s.ok()) return s;
        if (absl::Status s = in_.ReadLength(&expires, "a RESIZEDB expire count"); !s.ok()) {
          return s;
        }
        resize_hints_[db_] = {keys, expires};
        continue;
      }
      case rdb::kOpAux: {
        std::string k, v;
        if (absl::Status s = in_.ReadString(&k, "an aux field name"); !s.ok()) return s;
        if (absl::Status s = in_.ReadString(&v, "an aux field value"); !s.ok()) return s;
        aux_.emplace_back(std::move(k), std::move(v));
        continue;
      }
      case rdb::kOpModuleAux:
        if (absl::Status s = SkipModuleAux(at); !s.ok()) return s;
        continue;
      case rdb::kOpFunction2: {
        std::string code;
        if (absl::Status s = in_.ReadString(&code, "a function library"); !s.ok()) return s;
        functions_.push_back(std::move(code));
        continue;
      }
      case rdb::kOpFunctionPreGa:
        return Corrupt(at, "functions in the format of Redis 7.0's release candidates are not "
                           "supported");
      case rdb::kOpSlotInfo: {
        uint64_t v;
        for (int i = 0; i < 3; ++i) {
          if (absl::Status s = in_.ReadLength(&v, "slot info"); !s.ok()) return s;
        }
        continue;
      }
      default:
        break;
    }
    if (!IsRdbValueType(type)) {
      return Corrupt(at, Cat({"unknown type or opcode ", Num(type)}));
    }
    if (absl::Status s = in_.ReadString(key, "a key"); !s.ok()) return s;
    *type_out = type;
    *expire_out = expire;
    *idle_out = idle;
    *freq_out = freq;
    return true;
  }
}

absl::StatusOr<bool> RdbReader::Next(RdbEntry* entry) {
  while (true) {
    uint8_t type;
    absl::StatusOr<bool> more =
        NextKey(&type, &entry->key, &entry->expire_ms, &entry->idle_seconds, &entry->freq);
    if (!more.ok() || !*more) return more;
    bool empty = false;
    CompactValue value;
    if (absl::Status s = ReadRdbValue(in_, type, version_, &value, &empty); !s.ok()) return s;
    if (empty) {
      // Redis skips empty collections (old versions could write them) instead of failing.
      ++empty_keys_skipped_;
      continue;
    }
    entry->db = db_;
    entry->value = std::move(value);
    return true;
  }
}

absl::StatusOr<bool> RdbReader::NextRaw(RdbRawEntry* entry) {
  absl::StatusOr<bool> more =
      NextKey(&entry->type, &entry->key, &entry->expire_ms, &entry->idle_seconds, &entry->freq);
  if (!more.ok() || !*more) return more;
  entry->db = db_;
  entry->payload.clear();
  in_.set_capture(&entry->payload);
  absl::Status s = SkipRdbValue(in_, entry->type);
  in_.set_capture(nullptr);
  if (!s.ok()) return s;
  return true;
}

}  // namespace shardis::core
