// List: the value of a Redis LIST, a doubly linked chain of packed nodes (Redis' quicklist of
// listpacks). Each node is ONE heap block: a 32-byte header and a buffer of entries, so a list of
// a few small items costs one object plus one block, and LRANGE over a node reads contiguous
// memory. Nodes hold at most list-max-listpack-size (default -2: 8 KiB per node, header
// included); an element bigger than that gets a node of its own.
//
// Entry encoding (all little-endian), designed to be walked in both directions:
//   header | payload | backlen
//   header 0xxxxxxx             string of 0..127 bytes
//          10xxxxxx xxxxxxxx    string of up to 16383 bytes (14-bit length, high byte first)
//          11110000 + 4 bytes   longer string (32-bit length)
//          110vvvvv             integer 0..31, no payload
//          11100nnn + n+1 bytes integer in n+1 bytes, two's complement
//   backlen: the length of header+payload as a reverse varint of 1..5 bytes: the last byte holds
//            the low 7 bits, bit 7 set when more (higher) groups precede it.
// A value is stored as an integer only when it is the canonical decimal form of an int64 (what
// ParseInt64 accepts), so reading formats back exactly the bytes that were pushed.
//
// Threads: a List lives on its shard's heap (ShardHeap::Current()) and must be used and destroyed
// on that thread, like every cell.
//
// For the blocking commands (BLPOP/BLMOVE, built on top): Push/Pop/PopN are the only calls a
// wake-up needs; they never allocate more than one node and never move other keys' memory.
#pragma once

#include <absl/functional/function_ref.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/listpack.h"
#include "core/sparse_pages.h"

namespace shardis::core {

// Which end of a list: LEFT (head, index 0) or RIGHT (tail, index -1).
enum class ListEnd : uint8_t { kHead = 0, kTail = 1 };

// Redis' list-max-listpack-size: negative -1..-5 = a node holds at most 4/8/16/32/64 KiB;
// positive N = at most N entries per node (and at most 8 KiB). Process-wide, read on every insert
// (relaxed atomic), so CONFIG SET may change it at any time; existing nodes are not rebuilt.
// The same limit decides the encoding name Redis 7.2 reports (see "Encoding label" below).
inline constexpr int kListMaxListpackSizeDefault = -2;
void SetListMaxListpackSize(int value);
int ListMaxListpackSize();
// Redis' list-compress-depth. shardis does not compress list nodes: the value is kept only so
// that CONFIG GET and CONFIG REWRITE show what was set.
void SetListCompressDepth(int depth);
int ListCompressDepth();

class List {
  struct Node;

 public:
  // The cell's object_encoding() for a list: always 0. The encoding OBJECT ENCODING reports is
  // the list's own label (listpack()), which every path that changes a list keeps up to date.
  static constexpr uint8_t kEncodingQuicklist = 0;
  // What a node header costs; nodes are sized so that header + entries fit the byte limit.
  static constexpr size_t kNodeHeaderBytes = 32;

  List() = default;
  ~List();
  List(const List&) = delete;
  List& operator=(const List&) = delete;

  // A deep copy on the calling thread's heap (allocated with ShardNew; the caller owns it).
  List* Clone() const;
  // Active defragmentation: moves the nodes that sit on sparse pages (see sparse_pages.h),
  // relinking their neighbours.
  void Defrag(BlockMover& mover) { DefragNodes(mover, 0, SIZE_MAX); }
  // The same in steps, for a big list: from node number `first_node`, the nodes holding about
  // `max_entries` entries (at least one node). Returns the next node's number, 0 when the walk
  // reached the tail. The list may change between steps: a step only counts nodes from the head.
  size_t DefragNodes(BlockMover& mover, size_t first_node, size_t max_entries);

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t node_count() const { return nodes_; }
  // Heap bytes of the nodes (usable sizes), not counting this object.
  // The nodes are estimated from the first `samples` of them (0 = all; see SampledBytes).
  size_t NodeBytes(size_t samples = 0) const;

  // ---- Both ends (LPUSH/RPUSH/LPOP/RPOP, and what the blocking commands reuse).
  void Push(ListEnd end, std::string_view value);
  // Removes the element at `end` into *out (replacing its content). False when the list is empty.
  bool Pop(ListEnd end, std::string* out);
  // Removes up to n elements from `end`, calling fn with each in pop order (the view is valid only
  // during the call). Returns how many were popped.
  size_t PopN(ListEnd end, size_t n, absl::FunctionRef<void(std::string_view)> fn);

  // ---- Reading. A read-only cursor over the entries; invalidated by any change to the list.
  class Iterator {
   public:
    Iterator() = default;
    bool Valid() const { return node_ != nullptr; }
    // The element; an integer entry is formatted into scratch (kInt64BufSize bytes, number.h).
    std::string_view Get(char* scratch) const;
    // Towards the tail / the head; becomes invalid past the end.
    void Next();
    void Prev();

   private:
    friend class List;
    Iterator(const Node* node, uint32_t offset) : node_(node), offset_(offset) {}
    const Node* node_ = nullptr;
    uint32_t offset_ = 0;
  };
  // The element at index (negative: from the tail, -1 the last); invalid when out of range.
  // Walks from the nearer end, skipping whole nodes by their counts.
  Iterator At(int64_t index) const;
  Iterator Begin() const { return At(0); }

  // LINDEX: the element at index into *out; false when out of range.
  bool Index(int64_t index, std::string* out) const;
  // LRANGE's clamping of [start, stop] (inclusive, negative from the tail) to this list: false
  // when the range is empty, else *first and *count.
  bool NormalizeRange(int64_t start, int64_t stop, size_t* first, size_t* count) const;
  // Calls fn for count elements from index first (valid indices, see NormalizeRange).
  void ForRange(size_t first, size_t count, absl::FunctionRef<void(std::string_view)> fn) const;

  // LPOS: compares elements with value from the head (rank > 0) or the tail (rank < 0), skips
  // the first |rank|-1 matches (rank is never INT64_MIN), then calls on_match(index
  // from the head) for up to `count` matches (0: all); looks at no more than maxlen elements
  // (0: all).
  void Pos(std::string_view value, int64_t rank, size_t count, size_t maxlen,
           absl::FunctionRef<void(size_t)> on_match) const;

  // ---- Changing the middle.
  // LSET: replaces the element at index; false when out of range.
  bool Set(int64_t index, std::string_view value);
  // LINSERT: inserts value before (or after) the first element from the head equal to pivot;
  // false when there is no such element.
  bool Insert(std::string_view pivot, std::string_view value, bool after);
  // LREM: removes elements equal to value: the first count from the head (count > 0), from the
  // tail (count < 0), or all (0). Returns how many.
  size_t Remove(std::string_view value, int64_t count);
  // Removes n elements starting at index first (clamped to the list).
  void Erase(size_t first, size_t n);
  // LTRIM's semantics: keeps [start, stop] (inclusive, negative from the tail); may empty the list.
  void Trim(int64_t start, int64_t stop);

  // ---- Encoding label: what Redis 7.2 reports as OBJECT ENCODING, "listpack" or "quicklist".
  // shardis stores every list the same way (the nodes above); the label follows 7.2's conversion
  // rules (t_list.c listTypeTryConversion*) so that clients see 7.2's answer. A new list is a
  // listpack. Redis decides by its listpack's byte size, which packed_bytes() tracks exactly (what
  // Redis' listpack of these elements would take, header and terminator included), and, when a
  // quicklist shrinks, by its node count, for which this list's own node count stands in (its
  // nodes follow the same fill limit; they may differ from Redis' at a byte boundary or after
  // LREM/LTRIM, where shardis merges neighbours and Redis does not).
  bool listpack() const { return listpack_; }
  size_t packed_bytes() const { return packed_bytes_; }
  // Before adding add_count elements of add_bytes raw bytes (LPUSH's arguments, LINSERT's and
  // LSET's element, LMOVE's moved element): a listpack that would pass the limit becomes a
  // quicklist (Redis' LIST_CONV_GROWING; a quicklist stays one).
  void ConvertBeforeGrowing(size_t add_bytes, size_t add_count);
  // After removing or replacing elements (pops, LREM, LTRIM, LSET): a quicklist of one node that
  // is under half the limit becomes a listpack again (LIST_CONV_SHRINKING; the half avoids
  // flipping back and forth).
  void ConvertAfterShrinking();
  // After building a list in one go (RDB load, RESTORE, SORT ... STORE): Redis builds a
  // quicklist, then makes it a listpack when it is one node within the limit (LIST_CONV_AUTO).
  // try_listpack false: stays a quicklist (what Redis 7.2 does with an RDB's old ziplist list).
  void ConvertAfterBuilding(bool try_listpack = true);

  // Checks the invariants (counts, sizes, links, entry framing, packed_bytes); for tests. False
  // on a violation.
  bool Verify() const;

 private:
  // A value prepared for storing or comparing: canonical ints as ints.
  struct Encoded;

  // Max data bytes (excluding the header) and max entries of a node under the current setting.
  static void NodeLimits(size_t* max_bytes, size_t* max_count);
  static bool NodeAllows(const Node* n, size_t entry_bytes);

  Node* NewNode(size_t data_bytes);
  void LinkAfter(Node* pos, Node* n);  // pos null: at the head
  void Unlink(Node* n);
  void FreeNode(Node* n);
  // Replaces old_len bytes at off with new_len bytes of room (content undefined); may move
  // the node.
  Node* Splice(Node* n, uint32_t off, uint32_t old_len, uint32_t new_len);
  Node* Resize(Node* n, size_t cap);
  Node* MaybeShrink(Node* n);
  // Splits a node that grew past the limit into halves (repeatedly), if it has 2+ entries.
  void SplitIfNeeded(Node* n);
  // Merges n with its next node when both fit in one; returns the surviving node.
  Node* MergeWithNext(Node* n);
  // Merges adjacent small nodes over up to `steps` nodes from `from` (null: the head).
  void MergeWindow(Node* from, int steps);
  // Removes count entries (bytes bytes) at off of n; deletes the node when it empties.
  void RemoveEntries(Node* n, uint32_t off, uint32_t bytes, uint32_t count);
  static uint32_t LastOffset(const Node* n);
  // Redis' listpack bytes of the entries in [from, to) of n.
  static size_t PackedBytesOf(const Node* n, uint32_t from, uint32_t to);

  Node* head_ = nullptr;
  Node* tail_ = nullptr;
  size_t size_ = 0;
  // 32 bits, so that the label's flag fits beside it (the object stays 40 bytes): 2^32 nodes
  // would take over 128 GiB of node headers alone.
  uint32_t nodes_ = 0;
  // The encoding label (see listpack()).
  bool listpack_ = true;
  size_t packed_bytes_ = ListpackBuilder::kHeaderSize + 1;  // an empty Redis listpack: 7 bytes
};

}  // namespace shardis::core
