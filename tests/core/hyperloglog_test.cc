#include "core/hyperloglog.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace shardis::core::hll {
namespace {

// Golden values were taken from redis-server 7.0.15 (PFADD, then PFCOUNT, then GET).

uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string Unhex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

// PFADD of all elements into a new key, then PFCOUNT (which caches the count), as Redis does.
std::string BuildAndCount(const std::vector<std::string>& elements, uint64_t* card,
                          size_t max_bytes = kSparseMaxBytesDefault) {
  std::string h = NewSparse();
  for (const std::string& e : elements) EXPECT_GE(Add(&h, e, max_bytes), 0);
  InvalidateCache(h.data());
  EXPECT_FALSE(CacheValid(h));
  EXPECT_TRUE(Count(h, card));
  SetCachedCardinality(h.data(), *card);
  return h;
}

std::vector<std::string> Elements(std::string_view prefix, int n) {
  std::vector<std::string> v;
  for (int i = 0; i < n; ++i) v.push_back(std::string(prefix) + std::to_string(i));
  return v;
}

TEST(HyperLogLogTest, EmptyIsSparseXZeroRuns) {
  const std::string h = NewSparse();
  EXPECT_EQ(h, Unhex("48594c4c0100000000000000000000007fff"));
  EXPECT_TRUE(IsValid(h));
  EXPECT_TRUE(CacheValid(h));
  uint64_t card = 99;
  ASSERT_TRUE(Count(h, &card));
  EXPECT_EQ(card, 0u);
}

TEST(HyperLogLogTest, SparseBytesMatchRedis) {
  std::string h = NewSparse();
  for (const char* e : {"a", "b", "c"}) EXPECT_EQ(Add(&h, e, kSparseMaxBytesDefault), 1);
  InvalidateCache(h.data());
  EXPECT_EQ(h, Unhex("48594c4c01000000000000000000008060f38050b1844bfb80425a"));
  uint64_t card;
  ASSERT_TRUE(Count(h, &card));
  EXPECT_EQ(card, 3u);
  SetCachedCardinality(h.data(), card);
  EXPECT_EQ(h, Unhex("48594c4c01000000030000000000000060f38050b1844bfb80425a"));
  EXPECT_EQ(CachedCardinality(h), 3u);
  // Adding an element again changes nothing.
  EXPECT_EQ(Add(&h, "a", kSparseMaxBytesDefault), 0);
}

TEST(HyperLogLogTest, LargerSparseAndDenseMatchRedis) {
  uint64_t card;
  std::string sparse = BuildAndCount(Elements("z", 200), &card);
  EXPECT_EQ(EncodingOf(sparse), kSparse);
  EXPECT_EQ(sparse.size(), 497u);
  EXPECT_EQ(card, 201u);
  EXPECT_EQ(Fnv1a(sparse), 0xd193733a2e2e3232ull);

  std::string dense = BuildAndCount(Elements("y", 5000), &card);
  EXPECT_EQ(EncodingOf(dense), kDense);
  EXPECT_EQ(dense.size(), kDenseSize);
  EXPECT_EQ(card, 4954u);
  EXPECT_EQ(Fnv1a(dense), 0x4e9e3a080488a340ull);

  std::string h100 = BuildAndCount(Elements("x", 100), &card);
  EXPECT_EQ(card, 99u);
}

TEST(HyperLogLogTest, SparseToDenseKeepsRegistersAndHeader) {
  uint64_t card;
  std::string sparse = BuildAndCount(Elements("e", 300), &card);
  ASSERT_EQ(EncodingOf(sparse), kSparse);
  std::string dense = sparse;
  ASSERT_TRUE(SparseToDense(&dense));
  EXPECT_EQ(dense.size(), kDenseSize);
  EXPECT_EQ(EncodingOf(dense), kDense);
  EXPECT_EQ(dense.substr(8, 8), sparse.substr(8, 8));  // the cached cardinality travels
  std::vector<uint8_t> a(kRegisters, 0), b(kRegisters, 0);
  ASSERT_TRUE(MergeInto(a.data(), sparse));
  ASSERT_TRUE(MergeInto(b.data(), dense));
  EXPECT_EQ(a, b);
  uint64_t c1, c2;
  ASSERT_TRUE(Count(sparse, &c1));
  ASSERT_TRUE(Count(dense, &c2));
  EXPECT_EQ(c1, c2);
  EXPECT_EQ(CountRaw(a.data()), c1);
}

TEST(HyperLogLogTest, SmallSparseLimitPromotes) {
  uint64_t card;
  std::string h = BuildAndCount(Elements("p", 100), &card, /*max_bytes=*/64);
  EXPECT_EQ(EncodingOf(h), kDense);
  std::string ref = BuildAndCount(Elements("p", 100), &card);
  ASSERT_EQ(EncodingOf(ref), kSparse);
  ASSERT_TRUE(SparseToDense(&ref));
  // The same registers whichever way they became dense.
  EXPECT_EQ(h.substr(kHeaderSize), ref.substr(kHeaderSize));
}

TEST(HyperLogLogTest, ValueAbove32PromotesToDense) {
  std::string h = NewSparse();
  ASSERT_EQ(SparseSet(&h, 5, 33, kSparseMaxBytesDefault), 1);
  EXPECT_EQ(EncodingOf(h), kDense);
  EXPECT_EQ(DenseGet(reinterpret_cast<const uint8_t*>(h.data()) + kHeaderSize, 5), 33);
}

TEST(HyperLogLogTest, SparseSetSplitsAndMerges) {
  std::string h = NewSparse();
  ASSERT_EQ(SparseSet(&h, 0, 3, kSparseMaxBytesDefault), 1);
  // VAL(3,1) then XZERO(16383).
  EXPECT_EQ(h.substr(kHeaderSize), Unhex("887ffe"));
  ASSERT_EQ(SparseSet(&h, 1, 3, kSparseMaxBytesDefault), 1);
  // Two adjacent VAL(3,1) merge into VAL(3,2); the rest is XZERO(16382).
  EXPECT_EQ(h.substr(kHeaderSize), Unhex("897ffd"));
  EXPECT_EQ(SparseSet(&h, 1, 2, kSparseMaxBytesDefault), 0);  // not larger: no change
  ASSERT_EQ(SparseSet(&h, 16383, 1, kSparseMaxBytesDefault), 1);
  EXPECT_EQ(h.substr(kHeaderSize), Unhex("897ffc80"));
  uint64_t card;
  ASSERT_TRUE(Count(h, &card));
  EXPECT_EQ(card, 3u);
}

TEST(HyperLogLogTest, LastDenseRegisterStaysInside) {
  std::vector<uint8_t> regs(kDenseRegistersSize, 0);
  EXPECT_TRUE(DenseSet(regs.data(), kRegisters - 1, 63));
  EXPECT_EQ(DenseGet(regs.data(), kRegisters - 1), 63);
  EXPECT_EQ(DenseGet(regs.data(), kRegisters - 2), 0);
  EXPECT_FALSE(DenseSet(regs.data(), kRegisters - 1, 10));
  // Every register independently.
  std::mt19937 rng(7);
  std::vector<uint8_t> model(kRegisters, 0);
  model[kRegisters - 1] = 63;
  for (int i = 0; i < 100000; ++i) {
    const size_t idx = rng() % kRegisters;
    const uint8_t v = uint8_t(rng() % 64);
    EXPECT_EQ(DenseSet(regs.data(), idx, v), v > model[idx]);
    if (v > model[idx]) model[idx] = v;
  }
  for (size_t i = 0; i < kRegisters; ++i) ASSERT_EQ(DenseGet(regs.data(), i), model[i]) << i;
}

TEST(HyperLogLogTest, Validity) {
  EXPECT_FALSE(IsValid(""));
  EXPECT_FALSE(IsValid("HYLL"));
  EXPECT_FALSE(IsValid(Unhex("48594c4c0200000000000000000000007fff")));  // encoding 2
  EXPECT_FALSE(IsValid(Unhex("48594c4c0000000000000000000000007fff")));  // dense, wrong size
  EXPECT_FALSE(IsValid(Unhex("58594c4c0100000000000000000000007fff")));  // magic
  EXPECT_TRUE(IsValid(std::string(kDenseSize, '\0').replace(0, 4, "HYLL")));

  // A sparse body that does not cover every register is corrupted.
  const std::string short_body = Unhex("48594c4c01000000000000000000008000");  // ZERO(1)
  ASSERT_TRUE(IsValid(short_body));
  uint64_t card;
  EXPECT_FALSE(Count(short_body, &card));
  std::string copy = short_body;
  EXPECT_FALSE(SparseToDense(&copy));
  EXPECT_EQ(copy, short_body);
  std::vector<uint8_t> raw(kRegisters, 0);
  EXPECT_FALSE(MergeInto(raw.data(), short_body));
  EXPECT_EQ(SparseSet(&copy, 100, 1, kSparseMaxBytesDefault), -1);
}

TEST(HyperLogLogTest, EstimateIsClose) {
  for (int n : {10, 1000, 100000}) {
    uint64_t card;
    BuildAndCount(Elements("n", n), &card);
    EXPECT_LT(std::abs(double(card) - n), 0.03 * n + 1) << n;
  }
}

TEST(HyperLogLogTest, MurmurHashStable) {
  // The hash must not depend on alignment.
  std::string buf = "xxabcdefghijkl";
  EXPECT_EQ(MurmurHash64A(buf.data() + 2, 12, 0xadc83b19),
            MurmurHash64A(std::string("abcdefghijkl").data(), 12, 0xadc83b19));
  size_t i1, i2;
  EXPECT_EQ(PatLen("a", &i1), PatLen(std::string("a"), &i2));
  EXPECT_EQ(i1, i2);
}

// PFSELFTEST's checks pass on a correct HLL, whatever the seed.
TEST(HyperLogLogTest, SelfTestPasses) {
  EXPECT_EQ(SelfTest(1, kSparseMaxBytesDefault), "");
  EXPECT_EQ(SelfTest(0x9e3779b97f4a7c15ULL, kSparseMaxBytesDefault), "");
}

}  // namespace
}  // namespace shardis::core::hll

