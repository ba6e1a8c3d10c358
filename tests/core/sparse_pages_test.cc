#include "core/sparse_pages.h"

#include <gtest/gtest.h>
#include <mimalloc.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/dash_table.h"
#include "core/hash_object.h"
#include "core/list.h"
#include "core/rdb_writer.h"
#include "core/set_object.h"
#include "core/stream.h"
#include "core/value_defrag.h"
#include "core/value_object.h"
#include "core/zset.h"

namespace shardis::core {
namespace {

TEST(SparsePagesTest, FindsThePageOfAnAddress) {
  const SparsePages pages = SparsePages::FromRanges({{3000, 4000}, {1000, 2000}});
  EXPECT_EQ(pages.size(), 2u);
  EXPECT_FALSE(pages.Contains(reinterpret_cast<void*>(999)));
  EXPECT_EQ(pages.PageOf(reinterpret_cast<void*>(1000)), 0u);
  EXPECT_EQ(pages.PageOf(reinterpret_cast<void*>(1999)), 0u);
  EXPECT_FALSE(pages.Contains(reinterpret_cast<void*>(2000)));
  EXPECT_FALSE(pages.Contains(reinterpret_cast<void*>(2999)));
  EXPECT_EQ(pages.PageOf(reinterpret_cast<void*>(3500)), 1u);
  EXPECT_FALSE(pages.Contains(reinterpret_cast<void*>(4000)));
  EXPECT_FALSE(SparsePages().Contains(reinterpret_cast<void*>(1000)));
}

// A page made of exactly this block.
std::pair<uintptr_t, uintptr_t> RangeOf(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  return {a, a + ShardHeap::UsableSize(p)};
}

TEST(SparsePagesTest, MovesABlockOnASparsePageAndKeepsItsBytes) {
  ShardHeap* heap = ShardHeap::Current();
  char* on_page = static_cast<char*>(heap->Allocate(100));
  char* elsewhere = static_cast<char*>(heap->Allocate(100));
  std::memset(on_page, 'a', ShardHeap::UsableSize(on_page));
  const SparsePages pages = SparsePages::FromRanges({RangeOf(on_page)});
  BlockMover mover(heap, &pages);
  char* const old = on_page;
  EXPECT_TRUE(mover.Move(&on_page));
  EXPECT_NE(on_page, old);
  EXPECT_EQ(std::string(on_page, 100), std::string(100, 'a'));
  EXPECT_FALSE(mover.Move(&elsewhere));
  EXPECT_EQ(mover.hits(), 1u);
  EXPECT_EQ(mover.misses(), 1u);
  heap->Free(on_page);
  heap->Free(elsewhere);
}

TEST(SparsePagesTest, ABlockWhoseCopyLandsOnItsOwnPageStays) {
  ShardHeap* heap = ShardHeap::Current();
  void* p = heap->Allocate(64);
  // One "page" that holds every address: the copy is bound to land on it.
  const SparsePages pages = SparsePages::FromRanges({{0, ~uintptr_t{0}}});
  BlockMover mover(heap, &pages);
  void* const old = p;
  EXPECT_FALSE(mover.Move(&p));
  EXPECT_EQ(p, old);
  EXPECT_EQ(mover.misses(), 1u);
  heap->Free(p);
}

// A block the caller moves itself (a table's segment): an aligned fresh block off its page, or
// nothing when it is not on a sparse page or the fresh block would land on the same page.
TEST(SparsePagesTest, FreshBlockForABlockTheCallerMoves) {
  ShardHeap* heap = ShardHeap::Current();
  const size_t used_before = heap->used_bytes();
  void* p = heap->AllocateAligned(20000, 64);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  const SparsePages pages = SparsePages::FromRanges({RangeOf(p)});
  BlockMover mover(heap, &pages);
  void* q = mover.FreshBlockFor(p, 20000, 64);
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(q) % 64, 0u);
  EXPECT_FALSE(pages.Contains(q));
  EXPECT_GE(ShardHeap::UsableSize(q), 20000u);
  EXPECT_EQ(mover.FreshBlockFor(q, 20000, 64), nullptr);
  EXPECT_EQ(mover.hits(), 1u);
  EXPECT_EQ(mover.misses(), 1u);
  const SparsePages everything = SparsePages::FromRanges({{0, ~uintptr_t{0}}});
  BlockMover same_page(heap, &everything);
  EXPECT_EQ(same_page.FreshBlockFor(p, 20000, 64), nullptr);
  EXPECT_EQ(same_page.misses(), 1u);
  heap->Free(p);
  heap->Free(q);
  EXPECT_EQ(heap->used_bytes(), used_before);
}

#if !SHARDIS_ASAN
// With mimalloc (not under ASan, where ShardHeap uses malloc and has no pages to find).

// Every live block of the heap as its own page: everything a value owns is "sparse".
SparsePages EveryBlock(const ShardHeap& heap) {
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges;
  mi_heap_visit_blocks(
      heap.mi_heap(), true,
      [](const mi_heap_t*, const mi_heap_area_t*, void* block, size_t, void* arg) {
        if (block != nullptr) static_cast<decltype(ranges)*>(arg)->push_back(RangeOf(block));
        return true;
      },
      &ranges);
  return SparsePages::FromRanges(std::move(ranges));
}

std::string Serialized(const CompactValue& value) {
  std::string out;
  AppendRdbKey(&out, "k", value, RdbKeyMeta{}, /*compression=*/false);
  return out;
}

class ValueDefragTest : public ::testing::Test {
 protected:
  void SetUp() override { heap_.Install(); }
  void TearDown() override { heap_.Uninstall(); }

  // Moves every block of value and checks that the value reads the same.
  void ExpectMovedIntact(CompactValue& value, size_t max_scan_fields = 1000) {
    const std::string before = Serialized(value);
    const void* old = value.HeapData();
    const SparsePages pages = EveryBlock(heap_);
    BlockMover mover(&heap_, &pages);
    EXPECT_TRUE(DefragCell(value, mover, pages, max_scan_fields));
    EXPECT_GT(mover.hits(), 0u);
    EXPECT_NE(value.HeapData(), old);
    EXPECT_EQ(Serialized(value), before);
  }

  ShardHeap heap_;
};

TEST_F(ValueDefragTest, HeapString) {
  CompactValue v = CompactValue::FromString(std::string(300, 'x'));
  ExpectMovedIntact(v);
}

TEST_F(ValueDefragTest, ListNodes) {
  auto* list = ShardNew<List>();
  for (int i = 0; i < 2000; ++i) list->Push(ListEnd::kTail, "element-" + std::to_string(i));
  CompactValue v = CompactValue::FromObject(ValueType::kList, list);
  ExpectMovedIntact(v, 5000);
}

TEST_F(ValueDefragTest, HashesPackedAndAsTables) {
  for (int fields : {3, 500}) {
    CompactValue v;
    HashRef::InitCell(&v);
    for (int i = 0; i < fields; ++i) HashRef(v).Set("f" + std::to_string(i), "v" + std::to_string(i));
    ExpectMovedIntact(v);
  }
}

TEST_F(ValueDefragTest, SetsIntsetPackedAndAsTables) {
  for (const std::string prefix : {"", "m"}) {
    for (int members : {3, 1000}) {
      CompactValue v;
      SetRef::InitCell(&v, prefix + "0");
      for (int i = 0; i < members; ++i) SetRef(v).Add(prefix + std::to_string(i));
      ExpectMovedIntact(v);
    }
  }
}

TEST_F(ValueDefragTest, SortedSetsPackedAndAsSkiplists) {
  for (int members : {3, 500}) {
    auto* z = ShardNew<ZSet>();
    for (int i = 0; i < members; ++i) z->Add("member-" + std::to_string(i), i * 0.5, 0, nullptr);
    CompactValue v = CompactValue::FromObject(ValueType::kZSet, z);
    ExpectMovedIntact(v);
  }
}

TEST_F(ValueDefragTest, Streams) {
  auto* s = ShardNew<Stream>();
  for (uint64_t i = 1; i <= 300; ++i) {
    const std::string value = "value-" + std::to_string(i);
    s->Append(StreamID{i, 0}, {"field", value});
  }
  CompactValue v = CompactValue::FromObject(ValueType::kStream, s);
  ExpectMovedIntact(v);
}

TEST_F(ValueDefragTest, CollectionsAboveMaxScanFieldsMoveInSteps) {
  auto* list = ShardNew<List>();
  for (int i = 0; i < 2000; ++i) list->Push(ListEnd::kTail, "element-" + std::to_string(i));
  CompactValue big_list = CompactValue::FromObject(ValueType::kList, list);
  CompactValue big_hash;
  HashRef::InitCell(&big_hash);
  // Past hash-max-listpack-entries (512): a hash table, moved in steps.
  for (int i = 0; i < 800; ++i) HashRef(big_hash).Set("f" + std::to_string(i), "v");
  CompactValue big_set;
  SetRef::InitCell(&big_set, "m");
  for (int i = 0; i < 1000; ++i) SetRef(big_set).Add("m" + std::to_string(i));
  for (CompactValue* v : {&big_list, &big_hash, &big_set}) {
    const std::string before = Serialized(*v);
    const void* old = v->HeapData();
    const SparsePages pages = EveryBlock(heap_);
    BlockMover mover(&heap_, &pages);
    // DefragCell leaves it whole; the steps move it, about 99 elements at a time.
    EXPECT_FALSE(DefragCell(*v, mover, pages, /*max_scan_fields=*/99));
    EXPECT_EQ(v->HeapData(), old);
    ASSERT_TRUE(DefragsInSteps(*v, 99));
    EXPECT_FALSE(DefragsInSteps(*v, 5000));
    size_t pos = 0, steps = 0;
    do {
      const uint64_t hits_before = mover.hits();
      pos = DefragCellStep(*v, mover, pos, 99);
      ++steps;
      // A step moves at most one list node or table entry past the limit, plus the object
      // and the slot array on the first step.
      EXPECT_LE(mover.hits() - hits_before, 99u + 2 + 200);
    } while (pos != 0);
    EXPECT_GE(steps, 4u);  // the list: a node (hundreds of entries) at least per step
    EXPECT_NE(v->HeapData(), old);
    EXPECT_EQ(Serialized(*v), before);
  }
  // A skiplist sorted set that big is not stepped (it moves only by a whole copy).
  auto* z = ShardNew<ZSet>();
  for (int i = 0; i < 500; ++i) z->Add("member-" + std::to_string(i), i, 0, nullptr);
  CompactValue big_zset = CompactValue::FromObject(ValueType::kZSet, z);
  EXPECT_FALSE(DefragsInSteps(big_zset, 99));
}

TEST_F(ValueDefragTest, AStepPastTheEndOfAShrunkCollectionEndsIt) {
  auto* list = ShardNew<List>();
  for (int i = 0; i < 50; ++i) list->Push(ListEnd::kTail, "e");
  CompactValue v = CompactValue::FromObject(ValueType::kList, list);
  const SparsePages pages = EveryBlock(heap_);
  BlockMover mover(&heap_, &pages);
  EXPECT_EQ(DefragCellStep(v, mover, /*pos=*/1000, 10), 0u);  // the list lost its nodes
  CompactValue set;
  SetRef::InitCell(&set, "m");
  for (int i = 0; i < 300; ++i) SetRef(set).Add("m" + std::to_string(i));
  EXPECT_EQ(DefragCellStep(set, mover, /*pos=*/1 << 20, 10), 0u);  // the table was rehashed
}

TEST_F(ValueDefragTest, BuildFindsTheSparsePagesAfterChurn) {
  // Fill pages of one size class, then free three blocks of four: every page is a quarter used.
  std::vector<void*> blocks;
  for (int i = 0; i < 20000; ++i) blocks.push_back(heap_.Allocate(100));
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (i % 4 != 0) heap_.Free(blocks[i]);
  }
  SparsePages pages;
  pages.Build(heap_);
  EXPECT_GT(pages.size(), 0u);
  EXPECT_GT(pages.totals().page_bytes, 3 * pages.totals().used_bytes);
  // Moving the survivors fills the pages mimalloc allocates from and empties the others.
  BlockMover mover(&heap_, &pages);
  for (size_t i = 0; i < blocks.size(); i += 4) mover.Move(&blocks[i]);
  EXPECT_GT(mover.hits(), blocks.size() / 8);
  mi_heap_collect(heap_.mi_heap(), true);
  SparsePages after;
  after.Build(heap_);
  EXPECT_LT(after.totals().page_bytes, pages.totals().page_bytes / 2);
  for (size_t i = 0; i < blocks.size(); i += 4) heap_.Free(blocks[i]);
}

struct MixPolicy {
  static uint64_t Hash(uint64_t k) { return k * 0x9E3779B97F4A7C15ULL ^ (k >> 7); }
  static bool Equal(uint64_t key, uint64_t probe) { return key == probe; }
};
using NumberTable = DashTable<uint64_t, uint64_t, MixPolicy>;

// Two tables grown side by side share the pages of their segments' size classes; once one is
// cleared those pages are half used. The walk over the other moves its segments off them, and
// the pages go back.
TEST_F(ValueDefragTest, TableSegmentsLeaveSparsePages) {
  NumberTable kept(&heap_);
  {
    NumberTable gone(&heap_);
    for (uint64_t i = 0; i < 200'000; ++i) {
      kept.Insert(MixPolicy::Hash(i), i, i + 1);
      gone.Insert(MixPolicy::Hash(i + (1ull << 40)), i + (1ull << 40), 0);
    }
  }
  SparsePages pages;
  pages.Build(heap_);
  EXPECT_GT(pages.size(), 0u);
  BlockMover mover(&heap_, &pages);
  uint64_t cursor = 0;
  do {
    cursor = kept.DefragSegments(cursor, 16, mover);
  } while (cursor != 0);
  EXPECT_GT(mover.hits(), kept.segment_count() / 4);
  EXPECT_EQ(mover.hits() + mover.misses(), kept.segment_count());
  EXPECT_EQ(kept.memory_bytes(), heap_.used_bytes());
  mi_heap_collect(heap_.mi_heap(), true);
  SparsePages after;
  after.Build(heap_);
  EXPECT_LT(after.totals().page_bytes, pages.totals().page_bytes * 3 / 4);
  for (uint64_t i = 0; i < 200'000; ++i) {
    auto it = kept.Find(MixPolicy::Hash(i), i);
    ASSERT_FALSE(it == kept.end()) << i;
    EXPECT_EQ(it.value(), i + 1);
  }
}
#endif  // !SHARDIS_ASAN

}  // namespace
}  // namespace shardis::core
