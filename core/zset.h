// ZSet: the value of a sorted set (ZADD, ZRANGE, ...), ordered exactly as Redis orders it: by
// score, ties by memcmp of the member bytes.
//
// Two encodings, as in Redis (OBJECT ENCODING names in parentheses):
//   - packed ("listpack"): while the set has at most --zset_max_listpack_entries members of at
//     most --zset_max_listpack_value bytes, ONE contiguous heap block holds every (member, score)
//     in order: a header {count, used bytes} then entries [varint length][member][score], the
//     score in 1-5 bytes when it is an integer or a short decimal, else the 8-byte double.
//     Lookups are linear, which is faster than a pointer structure at this size and costs ~9 bytes
//     of overhead per member.
//   - large ("skiplist"): past those limits, Redis' skiplist with spans (O(log N) insert, delete,
//     rank and rank -> element) plus a member -> node index (an open-addressing set of node
//     pointers probed by member bytes: 8 bytes per slot). The member bytes live in the node.
// A set converts from packed to large when an insert crosses a limit and never back, except
// through ConvertToPackedIfFits (Redis does the same for the results of ZUNIONSTORE & co).
//
// Lex ranges (ZRANGEBYLEX) assume, like Redis, that all members have the same score. When they do
// not, the result follows Redis' listpack algorithm on the packed encoding (linear scans from
// either end); on the large one, Redis' answer depends on its random skiplist levels, and ours is
// that of a binary descent.
//
// Everything lives on the calling thread's ShardHeap; an object is used and destroyed on the shard
// thread that created it. Views (member string_views) stay valid until the next modification.
#pragma once

#include <absl/functional/function_ref.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/sparse_pages.h"

namespace shardis::core {

// The thresholds of the packed encoding (gflags zset_max_listpack_entries/_value give the start
// values; CONFIG SET changes them through the setters).
size_t ZSetMaxListpackEntries();
size_t ZSetMaxListpackValue();
void SetZSetMaxListpackEntries(size_t n);
void SetZSetMaxListpackValue(size_t n);

// A score interval with optionally exclusive ends (ZRANGEBYSCORE min max, "(" = exclusive).
struct ZScoreRange {
  double min = 0, max = 0;
  bool minex = false, maxex = false;

  bool AboveMin(double v) const { return minex ? v > min : v >= min; }
  bool BelowMax(double v) const { return maxex ? v < max : v <= max; }
  bool Empty() const { return min > max || (min == max && (minex || maxex)); }
};
// Redis' zslParseRange: "(x" is exclusive (strtod of the rest, which may even be empty), anything
// else is a float as ZADD reads it; NaN is refused. False on a malformed bound.
bool ParseScoreRange(std::string_view min, std::string_view max, ZScoreRange* out);

// A lex interval: "-" and "+" are the ends of the world, "[x" inclusive, "(x" exclusive.
struct ZLexBound {
  enum Kind : uint8_t { kNegInf, kPosInf, kInclusive, kExclusive };
  Kind kind = kNegInf;
  std::string_view s;  // points into the parsed argument
};
struct ZLexRange {
  ZLexBound min, max;

  bool AboveMin(std::string_view v) const;  // Redis' zslLexValueGteMin
  bool BelowMax(std::string_view v) const;  // Redis' zslLexValueLteMax
  bool Empty() const;
};
// Redis' zslParseLexRange. False on a malformed bound.
bool ParseLexRange(std::string_view min, std::string_view max, ZLexRange* out);

// ZADD's input flags and what happened (Redis' ZADD_IN_* / ZADD_OUT_*).
enum ZAddFlag : unsigned {
  kZAddIncr = 1 << 0,
  kZAddNx = 1 << 1,
  kZAddXx = 1 << 2,
  kZAddGt = 1 << 3,
  kZAddLt = 1 << 4,
};
enum ZAddResult : unsigned {
  kZAddOutNan = 1 << 0,      // the (resulting) score is NaN: nothing changed
  kZAddOutAdded = 1 << 1,    // a new member
  kZAddOutUpdated = 1 << 2,  // an existing member got another score
  kZAddOutNop = 1 << 3,      // refused by NX, XX, GT or LT
};

class ZSet {
 public:
  enum Encoding : uint8_t { kPacked = 0, kLarge = 1 };
  // What ZSet operations visit: a member (valid until the set changes) and its score.
  using Visitor = absl::FunctionRef<void(std::string_view member, double score)>;

  // An empty set in the given encoding. See StartsLarge for ZADD's choice.
  explicit ZSet(Encoding encoding = kPacked);
  ~ZSet();
  ZSet(const ZSet&) = delete;
  ZSet& operator=(const ZSet&) = delete;

  // Redis 7.0's choice for a key created by ZADD: large when the packed encoding is disabled or
  // the first member is already too long for it.
  static Encoding StartsLarge(size_t first_member_len);
  // A deep copy (COPY), on the calling thread's heap.
  ZSet* Clone() const;

  // Active defragmentation (see sparse_pages.h). The packed encoding's block moves in place;
  // the skiplist's nodes do not (the index and every level point at them): SparseBlocks counts
  // them, and the caller copies the whole set (Clone) when any is on a sparse page.
  void DefragPacked(BlockMover& mover) {
    if (packed_ != nullptr) mover.Move(&packed_);
  }
  size_t SparseBlocks(const SparsePages& pages) const;

  Encoding encoding() const { return large_ != nullptr ? kLarge : kPacked; }
  size_t size() const;
  // Heap bytes owned by the set (for tests and MEMORY USAGE), not counting this object. Exact:
  // `samples` is accepted for MEMORY USAGE's sake and not needed (the nodes' bytes are counted as
  // they come and go).
  size_t MallocBytes(size_t samples = 0) const;

  // Redis' zsetAdd for one member: applies flags (kZAdd*), returns what happened (kZAddOut*). With
  // kZAddIncr, score is the increment. *new_score gets the member's score when it was added or
  // updated (also when the score stayed the same); untouched on NOP and NaN.
  unsigned Add(std::string_view member, double score, unsigned flags, double* new_score);
  // Removes a member; false when missing.
  bool Erase(std::string_view member);
  // The member's score; false when missing.
  bool Score(std::string_view member, double* score) const;
  // The member's 0-based rank from the lowest score (reverse: from the highest), or -1; *score gets
  // its score when not null.
  int64_t Rank(std::string_view member, bool reverse, double* score = nullptr) const;

  // Ranks [start, end] (0 <= start <= end < size()), counted from the highest when reverse, in
  // that direction.
  void RangeByRank(size_t start, size_t end, bool reverse, Visitor fn) const;
  // The members in range, from the lowest (reverse: the highest), skipping `offset` of them, at
  // most `limit` (< 0: no limit).
  void RangeByScore(const ZScoreRange& range, bool reverse, size_t offset, int64_t limit,
                    Visitor fn) const;
  void RangeByLex(const ZLexRange& range, bool reverse, size_t offset, int64_t limit,
                  Visitor fn) const;
  size_t CountByScore(const ZScoreRange& range) const;
  size_t CountByLex(const ZLexRange& range) const;
  // Remove ranks [start, end] (from the lowest, 0 <= start <= end < size()) / the members in
  // range; return how many were removed.
  size_t EraseRangeByRank(size_t start, size_t end);
  size_t EraseRangeByScore(const ZScoreRange& range);
  size_t EraseRangeByLex(const ZLexRange& range);

  // The member at a rank from the lowest (rank < size()).
  void At(size_t rank, std::string_view* member, double* score) const;

  // ZSCAN: visits some members and returns the cursor of the next call (0: done). The packed
  // encoding visits everything at once (as Redis does for a listpack). The large one uses the
  // score as the cursor (order-preserving bits + 1) and always finishes a run of equal scores, so
  // that a member present for the whole scan is visited at least once whatever changes between
  // calls; count is a hint.
  uint64_t Scan(uint64_t cursor, size_t count, Visitor fn) const;

  // Converts a large set back to packed when it fits the limits (results of *STORE commands).
  void ConvertToPackedIfFits();
  // Forces the large encoding (a new set that is known to grow past the limits).
  void ConvertToLarge();

 private:
  struct Large;
  template <typename Fn>
  void Walk(size_t start, bool reverse, Fn&& fn) const;
  template <typename Pred>
  size_t LeadingCount(Pred&& pred) const;
  template <typename Pred>
  size_t TrailingCount(Pred&& pred) const;
  template <typename Lo, typename Hi>
  bool FindRange(bool empty, Lo&& lo_ok, Hi&& hi_ok, bool reverse, size_t* first) const;
  template <typename Lo, typename Hi>
  void RangeGeneric(bool empty, Lo&& lo_ok, Hi&& hi_ok, bool reverse, size_t offset,
                    int64_t limit, Visitor fn) const;
  template <typename Lo, typename Hi>
  size_t CountGeneric(bool empty, Lo&& lo_ok, Hi&& hi_ok, size_t* first) const;

  char* packed_ = nullptr;  // the packed encoding's block (null when empty or large)
  Large* large_ = nullptr;
};

}  // namespace shardis::core
