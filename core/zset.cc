#include "core/zset.h"

#include <absl/container/flat_hash_set.h>
#include <absl/container/inlined_vector.h>
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/number.h"
#include "core/runtime_setting.h"
#include "core/shard_heap.h"
#include "core/string_util.h"
#include "core/value_object.h"
#include "core/varint.h"

DEFINE_uint32(zset_max_listpack_entries, 128,
              "sorted sets with more members use the skiplist encoding (Redis' config)");
DEFINE_uint32(zset_max_listpack_value, 64,
              "sorted sets with a longer member use the skiplist encoding (Redis' config)");

namespace shardis::core {

namespace {

// The flags' values are copied in at start (ApplyConfigFlags), then CONFIG SET writes them.
RuntimeSetting<size_t> g_zset_max_listpack_entries{128};
RuntimeSetting<size_t> g_zset_max_listpack_value{64};

}  // namespace

size_t ZSetMaxListpackEntries() { return g_zset_max_listpack_entries.get(); }
size_t ZSetMaxListpackValue() { return g_zset_max_listpack_value.get(); }
void SetZSetMaxListpackEntries(size_t n) { g_zset_max_listpack_entries.set(n); }
void SetZSetMaxListpackValue(size_t n) { g_zset_max_listpack_value.set(n); }

// ---- Ranges.

namespace {

// strtod over the whole of s (NUL-terminated copy), as Redis' "(" branch of zslParseRange does:
// a NUL inside s ends the number there, like in Redis' C string.
bool ParseExclusiveBound(std::string_view s, double* out) {
  std::string copy(s);
  char* end = nullptr;
  const double v = std::strtod(copy.c_str(), &end);
  if (*end != '\0' || std::isnan(v)) return false;
  *out = v;
  return true;
}

bool ParseScoreBound(std::string_view s, double* v, bool* ex) {
  if (!s.empty() && s[0] == '(') {
    *ex = true;
    return ParseExclusiveBound(s.substr(1), v);
  }
  *ex = false;
  return ParseDouble(s, v);
}

bool ParseLexBound(std::string_view s, ZLexBound* b) {
  if (s.empty()) return false;
  switch (s[0]) {
    case '+':
      if (s.size() != 1) return false;
      b->kind = ZLexBound::kPosInf;
      return true;
    case '-':
      if (s.size() != 1) return false;
      b->kind = ZLexBound::kNegInf;
      return true;
    case '(':
      b->kind = ZLexBound::kExclusive;
      b->s = s.substr(1);
      return true;
    case '[':
      b->kind = ZLexBound::kInclusive;
      b->s = s.substr(1);
      return true;
    default:
      return false;
  }
}

// memcmp order of bytes, shorter first on a common prefix (Redis' sdscmp).
int CompareBytes(std::string_view a, std::string_view b) {
  const size_t n = a.size() < b.size() ? a.size() : b.size();
  const int c = n == 0 ? 0 : std::memcmp(a.data(), b.data(), n);
  if (c != 0) return c;
  return a.size() < b.size() ? -1 : (a.size() > b.size() ? 1 : 0);
}

// Redis' sdscmplex: -inf below everything, +inf above.
int CompareLex(const ZLexBound& a, const ZLexBound& b) {
  if (a.kind == b.kind && (a.kind == ZLexBound::kNegInf || a.kind == ZLexBound::kPosInf)) return 0;
  if (a.kind == ZLexBound::kNegInf || b.kind == ZLexBound::kPosInf) return -1;
  if (a.kind == ZLexBound::kPosInf || b.kind == ZLexBound::kNegInf) return 1;
  return CompareBytes(a.s, b.s);
}

// (score, member) order.
bool Less(double s1, std::string_view m1, double s2, std::string_view m2) {
  return s1 < s2 || (s1 == s2 && CompareBytes(m1, m2) < 0);
}

}  // namespace

bool ParseScoreRange(std::string_view min, std::string_view max, ZScoreRange* out) {
  return ParseScoreBound(min, &out->min, &out->minex) &&
         ParseScoreBound(max, &out->max, &out->maxex);
}

bool ParseLexRange(std::string_view min, std::string_view max, ZLexRange* out) {
  return ParseLexBound(min, &out->min) && ParseLexBound(max, &out->max);
}

bool ZLexRange::AboveMin(std::string_view v) const {
  if (min.kind == ZLexBound::kNegInf) return true;
  if (min.kind == ZLexBound::kPosInf) return false;
  const int c = CompareBytes(v, min.s);
  return min.kind == ZLexBound::kExclusive ? c > 0 : c >= 0;
}

bool ZLexRange::BelowMax(std::string_view v) const {
  if (max.kind == ZLexBound::kPosInf) return true;
  if (max.kind == ZLexBound::kNegInf) return false;
  const int c = CompareBytes(v, max.s);
  return max.kind == ZLexBound::kExclusive ? c < 0 : c <= 0;
}

bool ZLexRange::Empty() const {
  const int c = CompareLex(min, max);
  return c > 0 || (c == 0 && (min.kind == ZLexBound::kExclusive ||
                              max.kind == ZLexBound::kExclusive));
}

// ---- The packed encoding: [u32 count][u32 used bytes] then entries in order, each
// [varint member length][member][score: see ScoreCode].

namespace {

constexpr uint32_t kHeader = 8;

uint32_t PCount(const char* p) {
  if (p == nullptr) return 0;
  uint32_t n;
  std::memcpy(&n, p, 4);
  return n;
}
uint32_t PUsed(const char* p) {
  if (p == nullptr) return kHeader;
  uint32_t n;
  std::memcpy(&n, p + 4, 4);
  return n;
}
void PSetHeader(char* p, uint32_t count, uint32_t used) {
  std::memcpy(p, &count, 4);
  std::memcpy(p + 4, &used, 4);
}

// A score is stored as the varint (zigzag(m) << 4) | k when it equals m / 10^k exactly (k <= 14,
// |m| < 2^53), else as the varint 15 and the 8 bytes of the double. Scores people use are integers
// (timestamps, counters) or short decimals: 3 => 1 byte, 0.5 or 9.5 => 2 bytes, a Unix time in
// seconds => 5 bytes, where a raw double takes 8 (Redis' listpack keeps such scores as short
// strings or small integers for the same reason). The division decodes exactly: m and 10^k are
// exact doubles and IEEE division rounds correctly, so m / 10^k is the double nearest the decimal.
constexpr int kRawScore = 15;
constexpr double kPow10[kRawScore] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6, 1e7,
                                      1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14};
constexpr double kExactIntLimit = 9007199254740992.0;  // 2^53

uint64_t ScoreCode(double score) {
  if (std::isfinite(score)) {
    for (int k = 0; k < kRawScore; ++k) {
      const double t = score * kPow10[k];
      if (std::fabs(t) >= kExactIntLimit) break;
      if (t != std::nearbyint(t)) continue;
      const int64_t m = static_cast<int64_t>(t);
      if (static_cast<double>(m) / kPow10[k] != score) continue;
      const uint64_t zigzag = (static_cast<uint64_t>(m) << 1) ^ static_cast<uint64_t>(m >> 63);
      return (zigzag << 4) | uint64_t(k);
    }
  }
  return kRawScore;
}
size_t ScoreSize(uint64_t code) { return VarintSize(code) + (code == kRawScore ? 8 : 0); }

size_t EntrySize(size_t member_len, uint64_t score_code) {
  return VarintSize(member_len) + member_len + ScoreSize(score_code);
}

struct PEntry {
  std::string_view member;
  double score;
  uint32_t size;  // bytes of the whole entry
};

PEntry PDecode(const char* p, uint32_t off) {
  uint64_t len, code;
  const char* q = GetVarint(p + off, &len);
  PEntry e;
  e.member = std::string_view(q, len);
  q = GetVarint(q + len, &code);
  if (code == kRawScore) {
    std::memcpy(&e.score, q, 8);
    q += 8;
  } else {
    const uint64_t zigzag = code >> 4;
    const int64_t m = static_cast<int64_t>(zigzag >> 1) ^ -static_cast<int64_t>(zigzag & 1);
    e.score = static_cast<double>(m) / kPow10[code & 15];
  }
  e.size = static_cast<uint32_t>(q - (p + off));
  return e;
}

// Writes the ScoreSize(code) bytes of a score; code is ScoreCode(score). Redis' listpack keeps a
// score as the text "-0", which it stores as the integer 0: a packed set loses the sign of zero,
// and so do we (-0 == 0, so -0 gets the code of 0).
void PutScore(char* dst, double score, uint64_t code) {
  dst = PutVarint(dst, code);
  if (code == kRawScore) std::memcpy(dst, &score, 8);
}

// Writes an entry of EntrySize(member.size(), code) bytes.
void PEncode(char* dst, std::string_view member, double score, uint64_t code) {
  dst = PutVarint(dst, member.size());
  if (!member.empty()) std::memcpy(dst, member.data(), member.size());
  PutScore(dst + member.size(), score, code);
}

// Makes room for `extra` more bytes, returns the block. It grows to the exact size needed, as a
// listpack does: a small set lives for long after the command that filled it, and geometric
// growth left up to a third of every block unused (1M 10-member sets cost 37% more than in
// Redis). The allocator's size classes (~1/8 apart) still spare most reallocations.
char* PReserve(char* p, size_t extra) {
  const size_t used = PUsed(p);
  const size_t need = used + extra;
  if (p != nullptr && ShardHeap::UsableSize(p) >= need) return p;
  const size_t cap = need;
  char* q = static_cast<char*>(ShardHeap::Current()->Allocate(cap));
  if (p != nullptr) {
    std::memcpy(q, p, used);
    ShardHeap::Current()->Free(p);
  } else {
    PSetHeader(q, 0, kHeader);
  }
  return q;
}

// Inserts at byte offset off (an entry boundary).
void PInsertAt(char*& p, uint32_t off, std::string_view member, double score) {
  const uint64_t code = ScoreCode(score);
  const size_t es = EntrySize(member.size(), code);
  p = PReserve(p, es);
  const uint32_t used = PUsed(p);
  std::memmove(p + off + es, p + off, used - off);
  PEncode(p + off, member, score, code);
  PSetHeader(p, PCount(p) + 1, static_cast<uint32_t>(used + es));
}

// Appends (the caller knows it sorts last).
void PAppend(char*& p, std::string_view member, double score) {
  PInsertAt(p, PUsed(p), member, score);
}

// Removes `count` entries spanning bytes [off, off + bytes).
void PEraseBytes(char*& p, uint32_t off, uint32_t bytes, uint32_t count) {
  const uint32_t used = PUsed(p);
  std::memmove(p + off, p + off + bytes, used - off - bytes);
  const uint32_t n = PCount(p) - count;
  if (n == 0) {
    ShardHeap::Current()->Free(p);
    p = nullptr;
    return;
  }
  PSetHeader(p, n, used - bytes);
}

// The offset of the member's entry, or 0.
uint32_t PFind(const char* p, std::string_view member, PEntry* out) {
  const uint32_t used = PUsed(p);
  for (uint32_t off = kHeader; off < used;) {
    PEntry e = PDecode(p, off);
    if (e.member == member) {
      *out = e;
      return off;
    }
    off += e.size;
  }
  return 0;
}

void PInsertSorted(char*& p, std::string_view member, double score) {
  const uint32_t used = PUsed(p);
  uint32_t off = kHeader;
  while (off < used) {
    PEntry e = PDecode(p, off);
    if (Less(score, member, e.score, e.member)) break;
    off += e.size;
  }
  PInsertAt(p, off, member, score);
}

// Gives the entry at off (decoded as e) a new score: in place when its neighbours keep it in order,
// else it moves (the member is copied first: it lives in the block).
void PUpdateScore(char*& p, uint32_t off, const PEntry& e, double score) {
  const uint32_t next = off + e.size;
  bool in_place = true;
  if (next < PUsed(p)) {
    const PEntry ne = PDecode(p, next);
    in_place = Less(score, e.member, ne.score, ne.member);
  }
  if (in_place && off > kHeader) {
    // The previous entry: scan from the start (the block is small).
    uint32_t prev = kHeader;
    while (prev + PDecode(p, prev).size < off) prev += PDecode(p, prev).size;
    const PEntry pe = PDecode(p, prev);
    in_place = Less(pe.score, pe.member, score, e.member);
  }
  const uint64_t code = ScoreCode(score);
  if (in_place && EntrySize(e.member.size(), code) == e.size) {
    PutScore(p + next - ScoreSize(code), score, code);
    return;
  }
  const std::string member(e.member);
  PEraseBytes(p, off, e.size, 1);
  PInsertSorted(p, member, score);
}

// The byte offset of the entry at a rank (rank <= count: count gives the end).
uint32_t POffsetOf(const char* p, size_t rank) {
  uint32_t off = kHeader;
  for (size_t i = 0; i < rank; ++i) off += PDecode(p, off).size;
  return off;
}

}  // namespace

// ---- The large encoding: Redis' skiplist (t_zset.c) with a member -> node index.

namespace {

constexpr int kMaxLevel = 32;

struct ZNode {
  struct Level {
    ZNode* forward;
    uint64_t span;
  };
  double score;
  ZNode* backward;
  uint32_t len;
  uint8_t level;

  Level* levels() { return reinterpret_cast<Level*>(this + 1); }
  const Level* levels() const { return reinterpret_cast<const Level*>(this + 1); }
  std::string_view member() const {
    return {reinterpret_cast<const char*>(levels() + level), len};
  }
  ZNode* next() const { return levels()[0].forward; }
};
static_assert(sizeof(ZNode) % alignof(ZNode::Level) == 0);

ZNode* NewNode(int level, double score, std::string_view member) {
  const size_t bytes = sizeof(ZNode) + level * sizeof(ZNode::Level) + member.size();
  ZNode* n = static_cast<ZNode*>(ShardHeap::Current()->Allocate(bytes));
  n->score = score;
  n->backward = nullptr;
  n->len = static_cast<uint32_t>(member.size());
  n->level = static_cast<uint8_t>(level);
  for (int i = 0; i < level; ++i) n->levels()[i] = {nullptr, 0};
  if (!member.empty()) {
    std::memcpy(reinterpret_cast<char*>(n->levels() + level), member.data(), member.size());
  }
  return n;
}
void FreeNode(ZNode* n) { ShardHeap::Current()->Free(n); }

// Redis' zslRandomLevel: p = 1/4, so ~1.33 levels per node.
int RandomLevel() {
  thread_local uint64_t state = 0x9E3779B97F4A7C15ull ^ reinterpret_cast<uintptr_t>(&state);
  int level = 1;
  for (;;) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    if ((state & 0xffff) >= 0x4000 || level >= kMaxLevel) break;  // 0x4000/0x10000 = 1/4
    ++level;
  }
  return level;
}

// The index: node pointers, found by member bytes (heterogeneous lookup).
struct NodeHash {
  using is_transparent = void;
  size_t operator()(const ZNode* n) const { return StringHash{}(n->member()); }
  size_t operator()(std::string_view s) const { return StringHash{}(s); }
};
struct NodeEq {
  using is_transparent = void;
  static std::string_view Key(const ZNode* n) { return n->member(); }
  static std::string_view Key(std::string_view s) { return s; }
  template <typename A, typename B>
  bool operator()(const A& a, const B& b) const {
    return Key(a) == Key(b);
  }
};

// ShardAllocator that also keeps the usable size of the blocks it holds out, for MallocBytes: the
// index is one large block, and mimalloc's size for a large block is not predictable from the
// request (mi_good_size does not tell it).
template <typename T>
struct CountingShardAllocator {
  using value_type = T;
  explicit CountingShardAllocator(size_t* bytes) noexcept : bytes(bytes) {}
  template <typename U>
  CountingShardAllocator(const CountingShardAllocator<U>& other) noexcept : bytes(other.bytes) {}
  T* allocate(size_t n) {
    void* p = ShardHeap::Current()->Allocate(n * sizeof(T));
    *bytes += ShardHeap::UsableSize(p);
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) noexcept {
    *bytes -= ShardHeap::UsableSize(p);
    ShardHeap::Current()->Free(p);
  }
  template <typename U>
  bool operator==(const CountingShardAllocator<U>& other) const noexcept {
    return bytes == other.bytes;
  }

  size_t* bytes;
};

}  // namespace

struct ZSet::Large {
  using Index = absl::flat_hash_set<ZNode*, NodeHash, NodeEq, CountingShardAllocator<ZNode*>>;

  ZNode* header;
  ZNode* tail = nullptr;
  size_t length = 0;
  int level = 1;
  size_t index_bytes = 0;  // the index's block, kept by its allocator
  // The nodes' blocks (usable sizes), kept as they come and go: a node's size depends on its
  // random level, so a sample of a few nodes can be far off (MEMORY USAGE).
  size_t node_bytes = 0;
  Index index{0, NodeHash{}, NodeEq{}, CountingShardAllocator<ZNode*>(&index_bytes)};

  Large() : header(NewNode(kMaxLevel, 0, {})) {}
  ~Large() {
    ZNode* x = header->next();
    while (x != nullptr) {
      ZNode* next = x->next();
      FreeNode(x);
      x = next;
    }
    FreeNode(header);
  }

  ZNode* first() const { return header->next(); }

  ZNode* Insert(double score, std::string_view member) {
    ZNode* x = NewNode(RandomLevel(), score, member);
    node_bytes += ShardHeap::UsableSize(x);
    Link(x);
    index.insert(x);
    return x;
  }

  // Links a node that is in no list at its place for (score, member), with its own level.
  void Link(ZNode* x) {
    ZNode* update[kMaxLevel];
    uint64_t rank[kMaxLevel];
    const double score = x->score;
    const std::string_view member = x->member();
    ZNode* p = header;
    for (int i = level - 1; i >= 0; --i) {
      rank[i] = i == level - 1 ? 0 : rank[i + 1];
      while (ZNode* f = p->levels()[i].forward) {
        if (!Less(f->score, f->member(), score, member)) break;
        rank[i] += p->levels()[i].span;
        p = f;
      }
      update[i] = p;
    }
    const int lvl = x->level;
    if (lvl > level) {
      for (int i = level; i < lvl; ++i) {
        rank[i] = 0;
        update[i] = header;
        header->levels()[i].span = length;
      }
      level = lvl;
    }
    for (int i = 0; i < lvl; ++i) {
      ZNode::Level& ul = update[i]->levels()[i];
      x->levels()[i].forward = ul.forward;
      ul.forward = x;
      x->levels()[i].span = ul.span - (rank[0] - rank[i]);
      ul.span = (rank[0] - rank[i]) + 1;
    }
    for (int i = lvl; i < level; ++i) update[i]->levels()[i].span++;
    x->backward = update[0] == header ? nullptr : update[0];
    if (x->next() != nullptr) {
      x->next()->backward = x;
    } else {
      tail = x;
    }
    ++length;
  }

  // Redis' zslUpdateScore: in place when the order does not change, else the same node is
  // unlinked and linked again (no allocation, the index keeps pointing at it).
  void UpdateScore(ZNode* x, double new_score) {
    if ((x->backward == nullptr || x->backward->score < new_score) &&
        (x->next() == nullptr || x->next()->score > new_score)) {
      x->score = new_score;
      return;
    }
    ZNode* update[kMaxLevel];
    FindUpdate(x, update);
    DeleteNode(x, update);
    x->score = new_score;
    Link(x);
  }

  // The predecessors of node n at every level.
  void FindUpdate(const ZNode* n, ZNode** update) const {
    ZNode* x = header;
    for (int i = level - 1; i >= 0; --i) {
      while (ZNode* f = x->levels()[i].forward) {
        if (!Less(f->score, f->member(), n->score, n->member())) break;
        x = f;
      }
      update[i] = x;
    }
    DCHECK(x->next() == n);
  }

  void DeleteNode(ZNode* x, ZNode** update) {
    for (int i = 0; i < level; ++i) {
      ZNode::Level& ul = update[i]->levels()[i];
      if (ul.forward == x) {
        ul.span += x->levels()[i].span - 1;
        ul.forward = x->levels()[i].forward;
      } else {
        ul.span -= 1;
      }
    }
    if (x->next() != nullptr) {
      x->next()->backward = x->backward;
    } else {
      tail = x->backward;
    }
    while (level > 1 && header->levels()[level - 1].forward == nullptr) --level;
    --length;
  }

  // Unlinks and frees node n (which is in the list).
  void Erase(ZNode* n) {
    ZNode* update[kMaxLevel];
    FindUpdate(n, update);
    index.erase(n->member());
    DeleteNode(n, update);
    node_bytes -= ShardHeap::UsableSize(n);
    FreeNode(n);
  }

  // 0-based rank of a node in the list.
  size_t RankOf(const ZNode* n) const {
    const ZNode* x = header;
    uint64_t rank = 0;
    for (int i = level - 1; i >= 0; --i) {
      while (const ZNode* f = x->levels()[i].forward) {
        if (Less(n->score, n->member(), f->score, f->member())) break;
        rank += x->levels()[i].span;
        x = f;
      }
      if (x == n) return rank - 1;
    }
    LOG(FATAL) << "zset node not in its list";
    return 0;
  }

  // The node at a 0-based rank (< length).
  ZNode* ByRank(size_t rank0) const {
    const uint64_t rank = rank0 + 1;
    ZNode* x = header;
    uint64_t traversed = 0;
    for (int i = level - 1; i >= 0; --i) {
      while (x->levels()[i].forward != nullptr && traversed + x->levels()[i].span <= rank) {
        traversed += x->levels()[i].span;
        x = x->levels()[i].forward;
      }
      if (traversed == rank) return x;
    }
    LOG(FATAL) << "zset rank out of range";
    return nullptr;
  }

  // Removes 0-based ranks [start, end]; returns how many.
  size_t EraseRanks(size_t start0, size_t end0) {
    const uint64_t start = start0 + 1, end = end0 + 1;
    ZNode* update[kMaxLevel];
    ZNode* x = header;
    uint64_t traversed = 0;
    for (int i = level - 1; i >= 0; --i) {
      while (x->levels()[i].forward != nullptr && traversed + x->levels()[i].span < start) {
        traversed += x->levels()[i].span;
        x = x->levels()[i].forward;
      }
      update[i] = x;
    }
    ++traversed;
    x = x->next();
    size_t removed = 0;
    while (x != nullptr && traversed <= end) {
      ZNode* next = x->next();
      DeleteNode(x, update);
      index.erase(x->member());
      node_bytes -= ShardHeap::UsableSize(x);
      FreeNode(x);
      ++removed;
      ++traversed;
      x = next;
    }
    return removed;
  }

  template <typename Pred>
  size_t LeadingCount(Pred&& pred) const {
    const ZNode* x = header;
    uint64_t rank = 0;
    for (int i = level - 1; i >= 0; --i) {
      while (const ZNode* f = x->levels()[i].forward) {
        if (!pred(f->member(), f->score)) break;
        rank += x->levels()[i].span;
        x = f;
      }
    }
    return rank;
  }

  ZNode* Find(std::string_view member) const {
    auto it = index.find(member);
    return it == index.end() ? nullptr : *it;
  }
};

// ---- ZSet.

ZSet::ZSet(Encoding encoding) {
  if (encoding == kLarge) large_ = ShardNew<Large>();
}

ZSet::~ZSet() {
  if (packed_ != nullptr) ShardHeap::Current()->Free(packed_);
  ShardDelete(large_);
}

ZSet::Encoding ZSet::StartsLarge(size_t first_member_len) {
  return ZSetMaxListpackEntries() == 0 || first_member_len > ZSetMaxListpackValue() ? kLarge
                                                                                    : kPacked;
}

ZSet* ZSet::Clone() const {
  ZSet* copy = ShardNew<ZSet>(encoding());
  if (large_ != nullptr) {
    for (ZNode* x = large_->first(); x != nullptr; x = x->next()) {
      copy->large_->Insert(x->score, x->member());
    }
  } else if (packed_ != nullptr) {
    const uint32_t used = PUsed(packed_);
    copy->packed_ = static_cast<char*>(ShardHeap::Current()->Allocate(used));
    std::memcpy(copy->packed_, packed_, used);
  }
  return copy;
}

size_t ZSet::size() const { return large_ != nullptr ? large_->length : PCount(packed_); }

size_t ZSet::SparseBlocks(const SparsePages& pages) const {
  if (large_ == nullptr) return packed_ != nullptr && pages.Contains(packed_) ? 1 : 0;
  size_t n = pages.Contains(large_) + pages.Contains(large_->header);
  for (const ZNode* x = large_->header->next(); x != nullptr; x = x->next()) n += pages.Contains(x);
  return n;
}

size_t ZSet::MallocBytes(size_t /*samples*/) const {
  // Exact whatever the samples: the nodes' bytes are counted as they come and go.
  if (large_ == nullptr) return packed_ != nullptr ? ShardHeap::UsableSize(packed_) : 0;
  return ShardHeap::UsableSize(large_) + ShardHeap::UsableSize(large_->header) +
         large_->index_bytes + large_->node_bytes;
}

unsigned ZSet::Add(std::string_view member, double score, unsigned flags, double* new_score) {
  const bool incr = flags & kZAddIncr, nx = flags & kZAddNx, xx = flags & kZAddXx,
             gt = flags & kZAddGt, lt = flags & kZAddLt;
  if (std::isnan(score)) return kZAddOutNan;

  double cur;
  ZNode* node = nullptr;
  uint32_t poff = 0;
  PEntry pe;
  bool exists;
  if (large_ != nullptr) {
    node = large_->Find(member);
    exists = node != nullptr;
    if (exists) cur = node->score;
  } else {
    poff = packed_ != nullptr ? PFind(packed_, member, &pe) : 0;
    exists = poff != 0;
    if (exists) cur = pe.score;
  }

  if (exists) {
    if (nx) return kZAddOutNop;
    if (incr) {
      score += cur;
      if (std::isnan(score)) return kZAddOutNan;
    }
    if ((lt && score >= cur) || (gt && score <= cur)) return kZAddOutNop;
    if (new_score != nullptr) *new_score = score;
    if (score == cur) return 0;
    if (large_ != nullptr) {
      large_->UpdateScore(node, score);
    } else {
      PUpdateScore(packed_, poff, pe, score);
    }
    return kZAddOutUpdated;
  }
  if (xx) return kZAddOutNop;
  if (large_ == nullptr &&
      (size() + 1 > ZSetMaxListpackEntries() || member.size() > ZSetMaxListpackValue())) {
    ConvertToLarge();
  }
  if (large_ != nullptr) {
    large_->Insert(score, member);
  } else {
    PInsertSorted(packed_, member, score);
  }
  if (new_score != nullptr) *new_score = score;
  return kZAddOutAdded;
}

bool ZSet::Erase(std::string_view member) {
  if (large_ != nullptr) {
    ZNode* n = large_->Find(member);
    if (n == nullptr) return false;
    large_->Erase(n);
    return true;
  }
  if (packed_ == nullptr) return false;
  PEntry e;
  const uint32_t off = PFind(packed_, member, &e);
  if (off == 0) return false;
  PEraseBytes(packed_, off, e.size, 1);
  return true;
}

bool ZSet::Score(std::string_view member, double* score) const {
  if (large_ != nullptr) {
    ZNode* n = large_->Find(member);
    if (n == nullptr) return false;
    *score = n->score;
    return true;
  }
  if (packed_ == nullptr) return false;
  PEntry e;
  if (PFind(packed_, member, &e) == 0) return false;
  *score = e.score;
  return true;
}

int64_t ZSet::Rank(std::string_view member, bool reverse, double* score) const {
  const size_t n = size();
  int64_t rank = -1;
  if (large_ != nullptr) {
    ZNode* node = large_->Find(member);
    if (node == nullptr) return -1;
    rank = static_cast<int64_t>(large_->RankOf(node));
    if (score != nullptr) *score = node->score;
  } else {
    const uint32_t used = PUsed(packed_);
    int64_t i = 0;
    for (uint32_t off = kHeader; off < used; ++i) {
      PEntry e = PDecode(packed_, off);
      if (e.member == member) {
        rank = i;
        if (score != nullptr) *score = e.score;
        break;
      }
      off += e.size;
    }
    if (rank < 0) return -1;
  }
  return reverse ? static_cast<int64_t>(n) - 1 - rank : rank;
}

// Visits entries from forward rank `start` upwards (reverse: downwards) while fn returns true.
template <typename Fn>
void ZSet::Walk(size_t start, bool reverse, Fn&& fn) const {
  const size_t n = size();
  if (start >= n) return;
  if (large_ != nullptr) {
    const ZNode* x = large_->ByRank(start);
    while (x != nullptr && fn(x->member(), x->score)) x = reverse ? x->backward : x->next();
    return;
  }
  if (!reverse) {
    const uint32_t used = PUsed(packed_);
    for (uint32_t off = POffsetOf(packed_, start); off < used;) {
      PEntry e = PDecode(packed_, off);
      if (!fn(e.member, e.score)) return;
      off += e.size;
    }
    return;
  }
  absl::InlinedVector<uint32_t, 256> offs;
  uint32_t off = kHeader;
  for (size_t i = 0; i <= start; ++i) {
    offs.push_back(off);
    off += PDecode(packed_, off).size;
  }
  for (size_t i = offs.size(); i-- > 0;) {
    PEntry e = PDecode(packed_, offs[i]);
    if (!fn(e.member, e.score)) return;
  }
}

// How many entries from the lowest satisfy pred (monotone on the large encoding; a linear count
// on the packed one, as Redis' listpack scans).
template <typename Pred>
size_t ZSet::LeadingCount(Pred&& pred) const {
  if (large_ != nullptr) return large_->LeadingCount(pred);
  size_t count = 0;
  Walk(0, false, [&](std::string_view m, double s) {
    if (!pred(m, s)) return false;
    ++count;
    return true;
  });
  return count;
}

template <typename Pred>
size_t ZSet::TrailingCount(Pred&& pred) const {
  const size_t n = size();
  if (large_ != nullptr) {
    return n - large_->LeadingCount([&](std::string_view m, double s) { return !pred(m, s); });
  }
  size_t count = 0;
  if (n == 0) return 0;
  Walk(n - 1, true, [&](std::string_view m, double s) {
    if (!pred(m, s)) return false;
    ++count;
    return true;
  });
  return count;
}

void ZSet::At(size_t rank, std::string_view* member, double* score) const {
  DCHECK_LT(rank, size());
  if (large_ != nullptr) {
    const ZNode* x = rank + 1 == large_->length ? large_->tail : large_->ByRank(rank);
    *member = x->member();
    *score = x->score;
    return;
  }
  PEntry e = PDecode(packed_, POffsetOf(packed_, rank));
  *member = e.member;
  *score = e.score;
}

// Redis' zsl/zzl FirstInRange (forward) or LastInRange (reverse) for an interval given by its two
// end predicates: false when nothing is in range, else *first is the forward rank to start at.
template <typename Lo, typename Hi>
bool ZSet::FindRange(bool empty, Lo&& lo_ok, Hi&& hi_ok, bool reverse, size_t* first) const {
  const size_t n = size();
  if (empty || n == 0) return false;
  std::string_view m;
  double s;
  At(n - 1, &m, &s);
  if (!lo_ok(m, s)) return false;
  At(0, &m, &s);
  if (!hi_ok(m, s)) return false;
  size_t r;
  if (!reverse) {
    r = LeadingCount([&](std::string_view mm, double ss) { return !lo_ok(mm, ss); });
    if (r >= n) return false;
    At(r, &m, &s);
    if (!hi_ok(m, s)) return false;
  } else {
    const size_t t = TrailingCount([&](std::string_view mm, double ss) { return !hi_ok(mm, ss); });
    if (t >= n) return false;
    r = n - 1 - t;
    At(r, &m, &s);
    if (!lo_ok(m, s)) return false;
  }
  *first = r;
  return true;
}

template <typename Lo, typename Hi>
void ZSet::RangeGeneric(bool empty, Lo&& lo_ok, Hi&& hi_ok, bool reverse, size_t offset,
                        int64_t limit, Visitor fn) const {
  size_t first;
  if (!FindRange(empty, lo_ok, hi_ok, reverse, &first)) return;
  // As Redis: the offset skips members without looking at them, then the far end is checked.
  Walk(first, reverse, [&](std::string_view m, double s) {
    if (offset > 0) {
      --offset;
      return true;
    }
    if (limit == 0) return false;
    if (reverse ? !lo_ok(m, s) : !hi_ok(m, s)) return false;
    fn(m, s);
    if (limit > 0) --limit;
    return true;
  });
}

template <typename Lo, typename Hi>
size_t ZSet::CountGeneric(bool empty, Lo&& lo_ok, Hi&& hi_ok, size_t* first) const {
  if (!FindRange(empty, lo_ok, hi_ok, false, first)) return 0;
  if (large_ != nullptr) {
    const size_t last =
        size() - 1 - TrailingCount([&](std::string_view m, double s) { return !hi_ok(m, s); });
    return last >= *first ? last - *first + 1 : 0;
  }
  size_t count = 0;
  Walk(*first, false, [&](std::string_view m, double s) {
    if (!hi_ok(m, s)) return false;
    ++count;
    return true;
  });
  return count;
}

void ZSet::RangeByRank(size_t start, size_t end, bool reverse, Visitor fn) const {
  const size_t n = size();
  DCHECK(start <= end && end < n);
  size_t left = end - start + 1;
  Walk(reverse ? n - 1 - start : start, reverse, [&](std::string_view m, double s) {
    fn(m, s);
    return --left > 0;
  });
}

namespace {
auto ScoreLo(const ZScoreRange& r) {
  return [&r](std::string_view, double s) { return r.AboveMin(s); };
}
auto ScoreHi(const ZScoreRange& r) {
  return [&r](std::string_view, double s) { return r.BelowMax(s); };
}
auto LexLo(const ZLexRange& r) {
  return [&r](std::string_view m, double) { return r.AboveMin(m); };
}
auto LexHi(const ZLexRange& r) {
  return [&r](std::string_view m, double) { return r.BelowMax(m); };
}
}  // namespace

void ZSet::RangeByScore(const ZScoreRange& range, bool reverse, size_t offset, int64_t limit,
                        Visitor fn) const {
  RangeGeneric(range.Empty(), ScoreLo(range), ScoreHi(range), reverse, offset, limit, fn);
}

void ZSet::RangeByLex(const ZLexRange& range, bool reverse, size_t offset, int64_t limit,
                      Visitor fn) const {
  RangeGeneric(range.Empty(), LexLo(range), LexHi(range), reverse, offset, limit, fn);
}

size_t ZSet::CountByScore(const ZScoreRange& range) const {
  size_t first;
  return CountGeneric(range.Empty(), ScoreLo(range), ScoreHi(range), &first);
}

size_t ZSet::CountByLex(const ZLexRange& range) const {
  size_t first;
  return CountGeneric(range.Empty(), LexLo(range), LexHi(range), &first);
}

size_t ZSet::EraseRangeByRank(size_t start, size_t end) {
  DCHECK(start <= end && end < size());
  if (large_ != nullptr) return large_->EraseRanks(start, end);
  const uint32_t from = POffsetOf(packed_, start);
  uint32_t to = from;
  for (size_t i = start; i <= end; ++i) to += PDecode(packed_, to).size;
  const uint32_t count = static_cast<uint32_t>(end - start + 1);
  PEraseBytes(packed_, from, to - from, count);
  return count;
}

size_t ZSet::EraseRangeByScore(const ZScoreRange& range) {
  size_t first;
  const size_t n = CountGeneric(range.Empty(), ScoreLo(range), ScoreHi(range), &first);
  return n == 0 ? 0 : EraseRangeByRank(first, first + n - 1);
}

size_t ZSet::EraseRangeByLex(const ZLexRange& range) {
  size_t first;
  size_t n;
  if (large_ != nullptr) {
    // Redis' zslDeleteRangeByLex: from the first member in range while the end bound holds.
    n = 0;
    if (FindRange(range.Empty(), LexLo(range), LexHi(range), false, &first)) {
      Walk(first, false, [&](std::string_view m, double) {
        if (!range.BelowMax(m)) return false;
        ++n;
        return true;
      });
    }
  } else {
    n = CountGeneric(range.Empty(), LexLo(range), LexHi(range), &first);
  }
  return n == 0 ? 0 : EraseRangeByRank(first, first + n - 1);
}

namespace {
// Doubles as unsigned integers in the same order (-0 just below +0).
uint64_t OrderKey(double d) {
  const uint64_t b = std::bit_cast<uint64_t>(d);
  return (b >> 63) ? ~b : b | (uint64_t{1} << 63);
}
double FromOrderKey(uint64_t k) {
  const uint64_t b = (k >> 63) ? k & ~(uint64_t{1} << 63) : ~k;
  return std::bit_cast<double>(b);
}
}  // namespace

uint64_t ZSet::Scan(uint64_t cursor, size_t count, Visitor fn) const {
  if (large_ == nullptr) {
    Walk(0, false, [&](std::string_view m, double s) {
      fn(m, s);
      return true;
    });
    return 0;
  }
  size_t start = 0;
  if (cursor != 0) {
    const double from = FromOrderKey(cursor - 1);
    if (std::isnan(from)) return 0;  // not a cursor we made: nothing after it
    start = large_->LeadingCount([&](std::string_view, double s) { return s < from; });
  }
  if (start >= large_->length) return 0;
  const ZNode* x = large_->ByRank(start);
  size_t visited = 0;
  while (x != nullptr) {
    fn(x->member(), x->score);
    ++visited;
    const ZNode* next = x->next();
    if (next == nullptr) return 0;
    if (visited >= count && next->score != x->score) return OrderKey(next->score) + 1;
    x = next;
  }
  return 0;
}

void ZSet::ConvertToPackedIfFits() {
  if (large_ == nullptr || large_->length > ZSetMaxListpackEntries()) return;
  for (ZNode* x = large_->first(); x != nullptr; x = x->next()) {
    if (x->len > ZSetMaxListpackValue()) return;
  }
  char* p = nullptr;
  for (ZNode* x = large_->first(); x != nullptr; x = x->next()) PAppend(p, x->member(), x->score);
  ShardDelete(large_);
  large_ = nullptr;
  packed_ = p;
}

void ZSet::ConvertToLarge() {
  if (large_ != nullptr) return;
  Large* l = ShardNew<Large>();
  Walk(0, false, [&](std::string_view m, double s) {
    l->Insert(s, m);
    return true;
  });
  if (packed_ != nullptr) ShardHeap::Current()->Free(packed_);
  packed_ = nullptr;
  large_ = l;
}

}  // namespace shardis::core
