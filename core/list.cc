#include "core/list.h"

#include <glog/logging.h>

#include <algorithm>
#include <cstring>

#include "core/number.h"
#include "core/runtime_setting.h"
#include "core/sampled_bytes.h"
#include "core/shard_heap.h"
#include "core/value_object.h"

namespace shardis::core {

namespace {

RuntimeSetting<int> g_list_max_listpack_size{kListMaxListpackSizeDefault};
RuntimeSetting<int> g_list_compress_depth{0};

// Redis' SIZE_SAFETY_LIMIT: the byte cap of a node when the limit is a count of entries.
constexpr size_t kSafetyLimitBytes = 8192;

// ---- Entry coding (see list.h).

constexpr uint8_t kBigStrTag = 0xF0;
constexpr uint8_t kIntTag = 0xE0;  // | (n - 1), n payload bytes
constexpr uint8_t kTinyIntTag = 0xC0;
constexpr int64_t kTinyIntMax = 31;

inline uint32_t BacklenSize(uint32_t len) {
  if (len < (1u << 7)) return 1;
  if (len < (1u << 14)) return 2;
  if (len < (1u << 21)) return 3;
  return len < (1u << 28) ? 4 : 5;
}

// Writes len as a reverse varint of BacklenSize(len) bytes at p.
inline void WriteBacklen(char* p, uint32_t len) {
  const uint32_t k = BacklenSize(len);
  for (uint32_t i = 0; i < k; ++i) {
    uint8_t b = static_cast<uint8_t>((len >> (7 * i)) & 0x7f);
    if (i + 1 < k) b |= 0x80;
    p[k - 1 - i] = static_cast<char>(b);
  }
}

// The header+payload length of the entry that ends just before `end`.
inline uint32_t ReadBacklen(const char* end) {
  uint32_t v = 0;
  int shift = 0;
  const char* p = end - 1;
  for (;;) {
    const uint8_t b = static_cast<uint8_t>(*p);
    v |= static_cast<uint32_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) break;
    shift += 7;
    --p;
  }
  return v;
}

struct Decoded {
  bool is_int;
  int64_t iv;
  const char* s;
  uint32_t slen;
  uint32_t len;  // header + payload
  uint32_t total() const { return len + BacklenSize(len); }
};

inline Decoded Decode(const char* p) {
  const uint8_t h = static_cast<uint8_t>(p[0]);
  if (h < 0x80) return {false, 0, p + 1, h, 1u + h};
  if (h < 0xC0) {
    const uint32_t n = (static_cast<uint32_t>(h & 0x3f) << 8) | static_cast<uint8_t>(p[1]);
    return {false, 0, p + 2, n, 2 + n};
  }
  if (h < 0xE0) return {true, h & 0x1f, nullptr, 0, 1};
  if (h < 0xE8) {
    const uint32_t n = (h & 7) + 1;
    uint64_t u = 0;
    std::memcpy(&u, p + 1, n);
    if (n < 8 && (u >> (8 * n - 1)) & 1) u |= ~uint64_t{0} << (8 * n);  // sign-extend
    return {true, static_cast<int64_t>(u), nullptr, 0, 1 + n};
  }
  DCHECK_EQ(h, kBigStrTag);
  uint32_t n;
  std::memcpy(&n, p + 1, 4);
  return {false, 0, p + 5, n, 5 + n};
}

inline uint32_t EntryTotal(const char* p) { return Decode(p).total(); }

inline std::string_view View(const Decoded& d, char* scratch) {
  if (!d.is_int) return {d.s, d.slen};
  return {scratch, FormatInt64(d.iv, scratch)};
}

// What the entry takes in Redis' listpack (for the encoding label).
inline size_t PackedEntryBytes(const Decoded& d) {
  return d.is_int ? ListpackBuilder::IntEntrySize(d.iv)
                  : ListpackBuilder::EntrySize(std::string_view(d.s, d.slen));
}

// Redis' quicklistNodeLimit: a size fill (negative) bounds a listpack's bytes, a count fill
// its entries (0 counts as 1); the other bound is open.
void PackedLimits(size_t* max_bytes, size_t* max_count) {
  const int fill = ListMaxListpackSize();
  *max_bytes = SIZE_MAX;
  *max_count = SIZE_MAX;
  if (fill >= 0) {
    *max_count = fill == 0 ? 1 : static_cast<size_t>(fill);
  } else {
    *max_bytes = size_t{4096} << ((fill < -5 ? 5 : -fill) - 1);
  }
}

// Redis' quicklistNodeExceedsLimit: would a listpack of `bytes` bytes and `count` elements pass
// the limit? A count fill still caps the bytes at SIZE_SAFETY_LIMIT.
bool ExceedsPackedLimit(size_t bytes, size_t count) {
  size_t max_bytes, max_count;
  PackedLimits(&max_bytes, &max_count);
  if (max_bytes != SIZE_MAX) return bytes > max_bytes;
  return bytes > kSafetyLimitBytes || count > max_count;
}

}  // namespace

void SetListMaxListpackSize(int value) { g_list_max_listpack_size.set(value); }
int ListMaxListpackSize() { return g_list_max_listpack_size.get(); }

void SetListCompressDepth(int depth) { g_list_compress_depth.set(depth); }
int ListCompressDepth() { return g_list_compress_depth.get(); }

// A node: header then `cap` bytes of entries, of which `bytes` are used. One heap block.
struct List::Node {
  Node* prev;
  Node* next;
  uint32_t count;  // entries
  uint32_t bytes;  // used bytes of data
  uint32_t cap;    // data capacity
  uint32_t unused;
  char* data() { return reinterpret_cast<char*>(this + 1); }
  const char* data() const { return reinterpret_cast<const char*>(this + 1); }
};

// A value as it would be stored: its encoded size and how to compare entries with it.
struct List::Encoded {
  explicit Encoded(std::string_view v) : s(v) {
    if (v.size() <= 20 && ParseInt64(v, &iv)) {
      is_int = true;
      if (iv >= 0 && iv <= kTinyIntMax) {
        len = 1;
      } else {
        // Fewest bytes that hold iv in two's complement.
        int n = 1;
        while (n < 8) {
          const int64_t lo = -(int64_t{1} << (8 * n - 1)), hi = (int64_t{1} << (8 * n - 1)) - 1;
          if (iv >= lo && iv <= hi) break;
          ++n;
        }
        int_bytes = n;
        len = 1 + n;
      }
    } else {
      const size_t n = v.size();
      len = static_cast<uint32_t>(n < 128 ? 1 + n : n < 16384 ? 2 + n : 5 + n);
    }
    total = len + BacklenSize(len);
  }

  void Write(char* p) const {
    char* const start = p;
    if (is_int) {
      if (int_bytes == 0) {
        *p++ = static_cast<char>(kTinyIntTag | iv);
      } else {
        *p++ = static_cast<char>(kIntTag | (int_bytes - 1));
        const uint64_t u = static_cast<uint64_t>(iv);
        std::memcpy(p, &u, int_bytes);
        p += int_bytes;
      }
    } else {
      const size_t n = s.size();
      if (n < 128) {
        *p++ = static_cast<char>(n);
      } else if (n < 16384) {
        *p++ = static_cast<char>(0x80 | (n >> 8));
        *p++ = static_cast<char>(n & 0xff);
      } else {
        *p++ = static_cast<char>(kBigStrTag);
        const uint32_t n32 = static_cast<uint32_t>(n);
        std::memcpy(p, &n32, 4);
        p += 4;
      }
      if (n > 0) std::memcpy(p, s.data(), n);
      p += n;
    }
    DCHECK_EQ(static_cast<uint32_t>(p - start), len);
    WriteBacklen(p, len);
  }

  size_t PackedBytes() const {
    return is_int ? ListpackBuilder::IntEntrySize(iv) : ListpackBuilder::EntrySize(s);
  }

  bool Matches(const Decoded& d) const {
    if (is_int) return d.is_int && d.iv == iv;
    return !d.is_int && d.slen == s.size() &&
           (d.slen == 0 || std::memcmp(d.s, s.data(), d.slen) == 0);
  }

  std::string_view s;
  bool is_int = false;
  int64_t iv = 0;
  int int_bytes = 0;  // 0: tiny int in the header
  uint32_t len = 0;   // header + payload
  uint32_t total = 0;
};

// ---- Limits and nodes.

void List::NodeLimits(size_t* max_bytes, size_t* max_count) {
  const int fill = ListMaxListpackSize();
  if (fill < 0) {
    const int level = fill < -5 ? 5 : -fill;  // -1..-5: 4 KiB << (level - 1); less is -5
    *max_bytes = (size_t{4096} << (level - 1)) - kNodeHeaderBytes;
    *max_count = SIZE_MAX;
  } else {
    *max_bytes = kSafetyLimitBytes - kNodeHeaderBytes;
    *max_count = fill == 0 ? 1 : static_cast<size_t>(fill);
  }
}

bool List::NodeAllows(const Node* n, size_t entry_bytes) {
  size_t max_bytes, max_count;
  NodeLimits(&max_bytes, &max_count);
  return n->count < max_count && n->bytes + entry_bytes <= max_bytes;
}

List::Node* List::NewNode(size_t data_bytes) {
  static_assert(sizeof(Node) == kNodeHeaderBytes);
  const size_t block = ShardHeap::GoodSize(sizeof(Node) + std::max<size_t>(data_bytes, 1));
  void* p = ShardHeap::Current()->Allocate(block);
  Node* n = static_cast<Node*>(p);
  n->prev = n->next = nullptr;
  n->count = 0;
  n->bytes = 0;
  n->cap = static_cast<uint32_t>(ShardHeap::UsableSize(p) - sizeof(Node));
  n->unused = 0;
  return n;
}

void List::LinkAfter(Node* pos, Node* n) {
  n->prev = pos;
  n->next = pos != nullptr ? pos->next : head_;
  if (n->next != nullptr) {
    n->next->prev = n;
  } else {
    tail_ = n;
  }
  if (pos != nullptr) {
    pos->next = n;
  } else {
    head_ = n;
  }
  ++nodes_;
}

void List::Unlink(Node* n) {
  if (n->prev != nullptr) {
    n->prev->next = n->next;
  } else {
    head_ = n->next;
  }
  if (n->next != nullptr) {
    n->next->prev = n->prev;
  } else {
    tail_ = n->prev;
  }
  --nodes_;
}

void List::FreeNode(Node* n) { ShardHeap::Current()->Free(n); }

List::Node* List::Resize(Node* n, size_t cap) {
  DCHECK_GE(cap, n->bytes);
  Node* m = NewNode(cap);
  m->prev = n->prev;
  m->next = n->next;
  m->count = n->count;
  m->bytes = n->bytes;
  if (n->bytes > 0) std::memcpy(m->data(), n->data(), n->bytes);
  if (m->prev != nullptr) {
    m->prev->next = m;
  } else {
    head_ = m;
  }
  if (m->next != nullptr) {
    m->next->prev = m;
  } else {
    tail_ = m;
  }
  FreeNode(n);
  return m;
}

size_t List::DefragNodes(BlockMover& mover, size_t first_node, size_t max_entries) {
  Node* n = head_;
  size_t index = 0;
  for (; n != nullptr && index < first_node; n = n->next) ++index;
  size_t entries = 0;
  for (; n != nullptr && entries < max_entries; n = n->next, ++index) {
    entries += n->count;
    if (!mover.Move(&n)) continue;
    // The copy still points at its neighbours; they point at the old block.
    (n->prev != nullptr ? n->prev->next : head_) = n;
    (n->next != nullptr ? n->next->prev : tail_) = n;
  }
  return n == nullptr ? 0 : index;
}

List::Node* List::MaybeShrink(Node* n) {
  // Hysteresis: shrink only below half, so alternating push/pop does not reallocate each time.
  if (n->cap > 64 && n->bytes < n->cap / 2) return Resize(n, n->bytes);
  return n;
}

List::Node* List::Splice(Node* n, uint32_t off, uint32_t old_len, uint32_t new_len) {
  DCHECK_LE(off + old_len, n->bytes);
  const size_t new_bytes = size_t{n->bytes} - old_len + new_len;
  if (new_bytes > n->cap) {
    // Geometric growth (by an eighth, about mimalloc's size-class step), never past the node
    // limit unless one entry alone needs more.
    size_t max_bytes, max_count;
    NodeLimits(&max_bytes, &max_count);
    size_t want = std::max<size_t>(new_bytes, n->cap + n->cap / 8);
    want = std::min(want, std::max(max_bytes, new_bytes));
    n = Resize(n, want);
  }
  char* d = n->data();
  const uint32_t tail = n->bytes - off - old_len;
  if (tail > 0 && old_len != new_len) std::memmove(d + off + new_len, d + off + old_len, tail);
  n->bytes = static_cast<uint32_t>(new_bytes);
  return n;
}

void List::RemoveEntries(Node* n, uint32_t off, uint32_t bytes, uint32_t count) {
  size_ -= count;
  packed_bytes_ -= PackedBytesOf(n, off, off + bytes);
  if (count == n->count) {
    Unlink(n);
    FreeNode(n);
    return;
  }
  n = Splice(n, off, bytes, 0);
  n->count -= count;
  MaybeShrink(n);
}

size_t List::PackedBytesOf(const Node* n, uint32_t from, uint32_t to) {
  size_t total = 0;
  for (uint32_t off = from; off < to;) {
    const Decoded d = Decode(n->data() + off);
    total += PackedEntryBytes(d);
    off += d.total();
  }
  return total;
}

uint32_t List::LastOffset(const Node* n) {
  return n->bytes - ReadBacklen(n->data() + n->bytes) -
         BacklenSize(ReadBacklen(n->data() + n->bytes));
}

List::~List() {
  Node* n = head_;
  while (n != nullptr) {
    Node* next = n->next;
    FreeNode(n);
    n = next;
  }
}

static_assert(sizeof(List) == 40, "List: 4 words and the node count with the label's flag");

List* List::Clone() const {
  List* copy = ShardNew<List>();
  for (const Node* n = head_; n != nullptr; n = n->next) {
    Node* m = copy->NewNode(n->bytes);
    m->count = n->count;
    m->bytes = n->bytes;
    std::memcpy(m->data(), n->data(), n->bytes);
    copy->LinkAfter(copy->tail_, m);
  }
  copy->size_ = size_;
  copy->packed_bytes_ = packed_bytes_;
  copy->listpack_ = listpack_;
  return copy;
}

size_t List::NodeBytes(size_t samples) const {
  SampledBytes nodes(samples, nodes_);
  for (const Node* n = head_; n != nullptr && !nodes.Done(); n = n->next) {
    nodes.Add(ShardHeap::UsableSize(n));
  }
  return nodes.Total();
}

// ---- Ends.

void List::Push(ListEnd end, std::string_view value) {
  const Encoded e(value);
  Node* n = end == ListEnd::kHead ? head_ : tail_;
  if (n == nullptr || !NodeAllows(n, e.total)) {
    Node* m = NewNode(e.total);
    LinkAfter(end == ListEnd::kHead ? nullptr : tail_, m);
    n = m;
  }
  const uint32_t off = end == ListEnd::kHead ? 0 : n->bytes;
  n = Splice(n, off, 0, e.total);
  e.Write(n->data() + off);
  ++n->count;
  ++size_;
  packed_bytes_ += e.PackedBytes();
}

bool List::Pop(ListEnd end, std::string* out) {
  if (size_ == 0) return false;
  Node* n = end == ListEnd::kHead ? head_ : tail_;
  const uint32_t off = end == ListEnd::kHead ? 0 : LastOffset(n);
  const Decoded d = Decode(n->data() + off);
  char scratch[kInt64BufSize];
  out->assign(View(d, scratch));
  RemoveEntries(n, off, d.total(), 1);
  return true;
}

size_t List::PopN(ListEnd end, size_t n, absl::FunctionRef<void(std::string_view)> fn) {
  size_t popped = 0;
  char scratch[kInt64BufSize];
  while (popped < n && size_ > 0) {
    Node* node = end == ListEnd::kHead ? head_ : tail_;
    uint32_t k = 0;
    if (end == ListEnd::kHead) {
      uint32_t off = 0;
      while (k < node->count && popped < n) {
        const Decoded d = Decode(node->data() + off);
        fn(View(d, scratch));
        off += d.total();
        ++k;
        ++popped;
      }
      RemoveEntries(node, 0, off, k);
    } else {
      uint32_t off = node->bytes;
      while (k < node->count && popped < n) {
        const uint32_t len = ReadBacklen(node->data() + off);
        off -= len + BacklenSize(len);
        fn(View(Decode(node->data() + off), scratch));
        ++k;
        ++popped;
      }
      RemoveEntries(node, off, node->bytes - off, k);
    }
  }
  return popped;
}

// ---- Iteration.

std::string_view List::Iterator::Get(char* scratch) const {
  return View(Decode(node_->data() + offset_), scratch);
}

void List::Iterator::Next() {
  offset_ += EntryTotal(node_->data() + offset_);
  if (offset_ >= node_->bytes) {
    node_ = node_->next;
    offset_ = 0;
  }
}

void List::Iterator::Prev() {
  if (offset_ == 0) {
    node_ = node_->prev;
    if (node_ == nullptr) return;
    offset_ = node_->bytes;
  }
  const uint32_t len = ReadBacklen(node_->data() + offset_);
  offset_ -= len + BacklenSize(len);
}

List::Iterator List::At(int64_t index) const {
  const int64_t size = static_cast<int64_t>(size_);
  if (index < 0) index += size;
  if (index < 0 || index >= size) return Iterator();
  const Node* n;
  size_t in_node;  // index within the node
  if (static_cast<size_t>(index) < size_ / 2) {
    size_t left = static_cast<size_t>(index);
    n = head_;
    while (left >= n->count) {
      left -= n->count;
      n = n->next;
    }
    in_node = left;
  } else {
    size_t right = size_ - 1 - static_cast<size_t>(index);  // from the tail
    n = tail_;
    while (right >= n->count) {
      right -= n->count;
      n = n->prev;
    }
    in_node = n->count - 1 - right;
  }
  // Inside the node, walk from its nearer end too.
  Iterator it;
  it.node_ = n;
  if (in_node < n->count / 2) {
    uint32_t off = 0;
    for (size_t i = 0; i < in_node; ++i) off += EntryTotal(n->data() + off);
    it.offset_ = off;
  } else {
    uint32_t off = n->bytes;
    for (size_t i = n->count; i > in_node; --i) {
      const uint32_t len = ReadBacklen(n->data() + off);
      off -= len + BacklenSize(len);
    }
    it.offset_ = off;
  }
  return it;
}

bool List::Index(int64_t index, std::string* out) const {
  Iterator it = At(index);
  if (!it.Valid()) return false;
  char scratch[kInt64BufSize];
  out->assign(it.Get(scratch));
  return true;
}

bool List::NormalizeRange(int64_t start, int64_t stop, size_t* first, size_t* count) const {
  const int64_t llen = static_cast<int64_t>(size_);
  if (start < 0) start = llen + start;
  if (stop < 0) stop = llen + stop;
  if (start < 0) start = 0;
  if (start > stop || start >= llen) return false;
  if (stop >= llen) stop = llen - 1;
  *first = static_cast<size_t>(start);
  *count = static_cast<size_t>(stop - start + 1);
  return true;
}

void List::ForRange(size_t first, size_t count,
                    absl::FunctionRef<void(std::string_view)> fn) const {
  char scratch[kInt64BufSize];
  Iterator it = At(static_cast<int64_t>(first));
  for (size_t i = 0; i < count && it.Valid(); ++i, it.Next()) fn(it.Get(scratch));
}

void List::Pos(std::string_view value, int64_t rank, size_t count, size_t maxlen,
               absl::FunctionRef<void(size_t)> on_match) const {
  const Encoded e(value);
  const bool forward = rank > 0;
  uint64_t skip = static_cast<uint64_t>(forward ? rank : -rank) - 1;  // matches to skip
  size_t found = 0;
  size_t seen = 0;
  Iterator it = forward ? At(0) : At(-1);
  size_t index = forward ? 0 : size_ - 1;
  while (it.Valid() && (maxlen == 0 || seen < maxlen)) {
    if (e.Matches(Decode(it.node_->data() + it.offset_))) {
      if (skip > 0) {
        --skip;
      } else {
        on_match(index);
        if (++found == count) return;
      }
    }
    ++seen;
    if (forward) {
      it.Next();
      ++index;
    } else {
      it.Prev();
      --index;
    }
  }
}

// ---- The middle.

void List::SplitIfNeeded(Node* n) {
  size_t max_bytes, max_count;
  NodeLimits(&max_bytes, &max_count);
  while (n != nullptr && n->count > 1 && (n->bytes > max_bytes || n->count > max_count)) {
    // Cut at the first entry boundary past half the bytes (or half the entries for counts).
    const bool by_count = n->count > max_count;
    uint32_t off = 0, k = 0;
    while (k < n->count) {
      if (k > 0 && (by_count ? k >= n->count / 2 : off >= n->bytes / 2)) break;
      off += EntryTotal(n->data() + off);
      ++k;
    }
    if (k >= n->count) {  // one huge last entry: cut before it
      k = n->count - 1;
      off = LastOffset(n);
    }
    Node* m = NewNode(n->bytes - off);
    m->count = n->count - k;
    m->bytes = n->bytes - off;
    std::memcpy(m->data(), n->data() + off, m->bytes);
    LinkAfter(n, m);
    n->count = k;
    n->bytes = off;
    n = MaybeShrink(n);
    // Either half may still be too big (a huge entry); check the right one next, then the left.
    if (m->count > 1 && (m->bytes > max_bytes || m->count > max_count)) {
      SplitIfNeeded(m);
    }
  }
}

List::Node* List::MergeWithNext(Node* n) {
  Node* next = n->next;
  if (next == nullptr) return n;
  size_t max_bytes, max_count;
  NodeLimits(&max_bytes, &max_count);
  if (n->bytes + next->bytes > max_bytes || n->count + next->count > max_count) return n;
  const uint32_t off = n->bytes;
  const uint32_t add = next->bytes, add_count = next->count;
  Unlink(next);
  // Splice may move n; next is unlinked, so its bytes stay put until freed.
  n = Splice(n, off, 0, add);
  std::memcpy(n->data() + off, next->data(), add);
  n->count += add_count;
  FreeNode(next);
  return n;
}

void List::MergeWindow(Node* from, int steps) {
  Node* n = from != nullptr ? from : head_;
  for (int i = 0; i < steps && n != nullptr && n->next != nullptr; ++i) {
    Node* next = n->next;
    Node* merged = MergeWithNext(n);
    // Not merged: move on; merged: try the new neighbour too. (next is freed when merged, and
    // merged->next is then next's successor, never next.)
    n = merged->next == next ? next : merged;
  }
}

bool List::Set(int64_t index, std::string_view value) {
  Iterator it = At(index);
  if (!it.Valid()) return false;
  Node* n = const_cast<Node*>(it.node_);
  const uint32_t off = it.offset_;
  const Encoded e(value);
  const Decoded old = Decode(n->data() + off);
  packed_bytes_ = packed_bytes_ - PackedEntryBytes(old) + e.PackedBytes();
  n = Splice(n, off, old.total(), e.total);
  e.Write(n->data() + off);
  SplitIfNeeded(n);
  return true;
}

bool List::Insert(std::string_view pivot, std::string_view value, bool after) {
  const Encoded p(pivot);
  for (Iterator it = At(0); it.Valid(); it.Next()) {
    const Decoded d = Decode(it.node_->data() + it.offset_);
    if (!p.Matches(d)) continue;
    Node* n = const_cast<Node*>(it.node_);
    const uint32_t off = after ? it.offset_ + d.total() : it.offset_;
    const Encoded e(value);
    n = Splice(n, off, 0, e.total);
    e.Write(n->data() + off);
    ++n->count;
    ++size_;
    packed_bytes_ += e.PackedBytes();
    SplitIfNeeded(n);
    return true;
  }
  return false;
}

size_t List::Remove(std::string_view value, int64_t count) {
  const Encoded e(value);
  // Where to start and how many to remove: for count < 0, find the |count|-th match from the
  // tail; from there on, every match is removed by the forward pass below.
  Node* start = head_;
  uint32_t start_off = 0;
  size_t limit = SIZE_MAX;
  if (count > 0) {
    limit = static_cast<size_t>(count);
  } else if (count < 0) {
    const uint64_t want = count == INT64_MIN ? uint64_t{1} << 63 : static_cast<uint64_t>(-count);
    uint64_t found = 0;
    for (Iterator it = At(-1); it.Valid(); it.Prev()) {
      if (e.Matches(Decode(it.node_->data() + it.offset_))) {
        start = const_cast<Node*>(it.node_);
        start_off = it.offset_;
        if (++found == want) break;
      }
    }
    if (found == 0) return 0;
    limit = found;
  }
  size_t removed = 0;
  Node* n = start;
  uint32_t off = start_off;
  while (n != nullptr && removed < limit) {
    char* d = n->data();
    uint32_t r = off, w = off, here = 0;
    while (r < n->bytes) {
      const Decoded entry = Decode(d + r);
      const uint32_t tot = entry.total();
      if (removed < limit && e.Matches(entry)) {
        ++removed;
        ++here;
        packed_bytes_ -= PackedEntryBytes(entry);
      } else {
        if (w != r) std::memmove(d + w, d + r, tot);
        w += tot;
      }
      r += tot;
    }
    Node* next = n->next;
    if (here > 0) {
      size_ -= here;
      n->count -= here;
      n->bytes = w;
      if (n->count == 0) {
        Unlink(n);
        FreeNode(n);
      } else {
        MaybeShrink(n);
      }
    }
    n = next;
    off = 0;
  }
  if (removed > 0) MergeWindow(nullptr, static_cast<int>(std::min<size_t>(nodes_, INT32_MAX)));
  return removed;
}

void List::Erase(size_t first, size_t n) {
  if (first >= size_ || n == 0) return;
  n = std::min(n, size_ - first);
  Iterator it = At(static_cast<int64_t>(first));
  Node* node = const_cast<Node*>(it.node_);
  uint32_t off = it.offset_;
  Node* before = node->prev;  // untouched: where the merge window starts
  while (n > 0) {
    Node* next = node->next;
    if (off == 0 && node->count <= n) {
      n -= node->count;
      size_ -= node->count;
      packed_bytes_ -= PackedBytesOf(node, 0, node->bytes);
      Unlink(node);
      FreeNode(node);
    } else {
      uint32_t end = off, k = 0;
      while (k < n && end < node->bytes) {
        end += EntryTotal(node->data() + end);
        ++k;
      }
      n -= k;
      RemoveEntries(node, off, end - off, k);
    }
    node = next;
    off = 0;
  }
  MergeWindow(before, 3);
}

void List::Trim(int64_t start, int64_t stop) {
  const int64_t llen = static_cast<int64_t>(size_);
  if (start < 0) start = llen + start;
  if (stop < 0) stop = llen + stop;
  if (start < 0) start = 0;
  size_t ltrim, rtrim;
  if (start > stop || start >= llen) {
    ltrim = size_;
    rtrim = 0;
  } else {
    if (stop >= llen) stop = llen - 1;
    ltrim = static_cast<size_t>(start);
    rtrim = static_cast<size_t>(llen - stop - 1);
  }
  if (rtrim > 0) Erase(size_ - rtrim, rtrim);
  if (ltrim > 0) Erase(0, ltrim);
}

// ---- Encoding label.

void List::ConvertBeforeGrowing(size_t add_bytes, size_t add_count) {
  if (listpack_ && ExceedsPackedLimit(packed_bytes_ + add_bytes, size_ + add_count)) {
    listpack_ = false;
  }
}

void List::ConvertAfterShrinking() {
  if (listpack_ || nodes_ != 1) return;
  size_t max_bytes, max_count;
  PackedLimits(&max_bytes, &max_count);
  // Half of either limit; Redis checks no byte cap for a count fill here (its byte limit is open).
  if (packed_bytes_ > max_bytes / 2 || size_ > max_count / 2) return;
  listpack_ = true;
}

void List::ConvertAfterBuilding(bool try_listpack) {
  // Redis' quicklist built by pushes at the tail is one node exactly when the elements fit the
  // limit, so this needs no node count (shardis' nodes may split a byte earlier or later).
  listpack_ = try_listpack && !ExceedsPackedLimit(packed_bytes_, size_);
}

bool List::Verify() const {
  size_t total = 0, nodes = 0, packed = ListpackBuilder::kHeaderSize + 1;
  const Node* prev = nullptr;
  for (const Node* n = head_; n != nullptr; n = n->next) {
    if (n->prev != prev || n->count == 0 || n->bytes > n->cap) return false;
    uint32_t off = 0, k = 0;
    while (off < n->bytes) {
      const Decoded d = Decode(n->data() + off);
      if (ReadBacklen(n->data() + off + d.total()) != d.len) return false;
      off += d.total();
      ++k;
    }
    if (off != n->bytes || k != n->count) return false;
    packed += PackedBytesOf(n, 0, n->bytes);
    total += n->count;
    ++nodes;
    prev = n;
  }
  return prev == tail_ && total == size_ && nodes == nodes_ && packed == packed_bytes_;
}

}  // namespace shardis::core
