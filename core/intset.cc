#include "core/intset.h"

#include <algorithm>

#include "core/shard_heap.h"

namespace shardis::core {

namespace {

uint32_t WidthFor(int64_t v) {
  if (v >= INT16_MIN && v <= INT16_MAX) return 2;
  if (v >= INT32_MIN && v <= INT32_MAX) return 4;
  return 8;
}

int64_t LoadAt(const char* p, uint32_t width) {
  if (width == 2) {
    int16_t x;
    std::memcpy(&x, p, 2);
    return x;
  }
  if (width == 4) {
    int32_t x;
    std::memcpy(&x, p, 4);
    return x;
  }
  int64_t x;
  std::memcpy(&x, p, 8);
  return x;
}

}  // namespace

char* IntSet::New() {
  char* buf = static_cast<char*>(ShardHeap::Current()->Allocate(kHeader));
  Store32(buf, 2);
  Store32(buf + 4, 0);
  return buf;
}

void IntSet::Free(char* buf) { ShardHeap::Current()->Free(buf); }

char* IntSet::Clone(const char* buf) {
  char* copy = static_cast<char*>(ShardHeap::Current()->Allocate(Bytes(buf)));
  std::memcpy(copy, buf, Bytes(buf));
  return copy;
}

int64_t IntSet::Get(const char* buf, uint32_t i) {
  const uint32_t w = Width(buf);
  return LoadAt(buf + kHeader + size_t{i} * w, w);
}

void IntSet::Set(char* buf, uint32_t width, uint32_t i, int64_t v) {
  char* p = buf + kHeader + size_t{i} * width;
  if (width == 2) {
    const int16_t x = static_cast<int16_t>(v);
    std::memcpy(p, &x, 2);
  } else if (width == 4) {
    const int32_t x = static_cast<int32_t>(v);
    std::memcpy(p, &x, 4);
  } else {
    std::memcpy(p, &v, 8);
  }
}

uint32_t IntSet::Search(const char* buf, int64_t v, bool* found) {
  uint32_t lo = 0, hi = Count(buf);
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    const int64_t x = Get(buf, mid);
    if (x < v) {
      lo = mid + 1;
    } else if (x > v) {
      hi = mid;
    } else {
      *found = true;
      return mid;
    }
  }
  *found = false;
  return lo;
}

bool IntSet::Contains(const char* buf, int64_t v) {
  if (WidthFor(v) > Width(buf)) return false;
  bool found;
  Search(buf, v, &found);
  return found;
}

char* IntSet::Insert(char* buf, int64_t v, bool* added) {
  const uint32_t width = Width(buf);
  const uint32_t count = Count(buf);
  const uint32_t need_width = std::max(width, WidthFor(v));
  uint32_t pos;
  if (need_width == width) {
    bool found;
    pos = Search(buf, v, &found);
    if (found) {
      *added = false;
      return buf;
    }
  } else {
    // A value wider than every member is below or above all of them.
    pos = v < 0 ? 0 : count;
  }
  *added = true;
  const size_t new_bytes = kHeader + size_t{need_width} * (count + 1);
  char* out = buf;
  if (new_bytes > ShardHeap::UsableSize(buf)) {
    // The next size class (mimalloc's usable size leaves the room): an insert moves the tail
    // anyway, so a copy on growth does not change its O(n) cost.
    out = static_cast<char*>(ShardHeap::Current()->Allocate(new_bytes));
    std::memcpy(out, buf, Bytes(buf));
    ShardHeap::Current()->Free(buf);
  }
  if (need_width != width) {
    // Widen in place from the back, leaving a gap at pos.
    for (uint32_t i = count; i-- > 0;) {
      const int64_t x = LoadAt(out + kHeader + size_t{i} * width, width);
      Set(out, need_width, i + (i >= pos ? 1 : 0), x);
    }
    Store32(out, need_width);
  } else {
    char* at = out + kHeader + size_t{pos} * width;
    std::memmove(at + width, at, size_t{count - pos} * width);
  }
  Set(out, need_width, pos, v);
  Store32(out + 4, count + 1);
  return out;
}

bool IntSet::Remove(char* buf, int64_t v) {
  if (WidthFor(v) > Width(buf)) return false;
  bool found;
  const uint32_t pos = Search(buf, v, &found);
  if (!found) return false;
  RemoveAt(buf, pos);
  return true;
}

void IntSet::RemoveAt(char* buf, uint32_t i) {
  const uint32_t w = Width(buf), count = Count(buf);
  char* at = buf + kHeader + size_t{i} * w;
  std::memmove(at, at + w, size_t{count - i - 1} * w);
  Store32(buf + 4, count - 1);
}

}  // namespace shardis::core
