#include "core/hyperloglog.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/runtime_setting.h"

namespace shardis::core::hll {

namespace {

constexpr uint64_t kHashSeed = 0xadc83b19ull;
constexpr int kSparseZeroMaxLen = 64;
constexpr int kSparseXZeroMaxLen = 16384;
constexpr int kSparseValMaxLen = 4;
constexpr double kAlphaInf = 0.721347520444481703680;  // 0.5 / ln(2)

// Sparse opcodes (see the header).
bool IsZero(uint8_t b) { return (b & 0xc0) == 0; }
bool IsXZero(uint8_t b) { return (b & 0xc0) == 0x40; }
bool IsVal(uint8_t b) { return (b & 0x80) != 0; }
int ZeroLen(uint8_t b) { return (b & 0x3f) + 1; }
int XZeroLen(uint8_t b0, uint8_t b1) { return (((b0 & 0x3f) << 8) | b1) + 1; }
int ValValue(uint8_t b) { return ((b >> 2) & 0x1f) + 1; }
int ValLen(uint8_t b) { return (b & 0x3) + 1; }
uint8_t ValOp(int value, int len) {
  return static_cast<uint8_t>(((value - 1) << 2 | (len - 1)) | 0x80);
}
uint8_t ZeroOp(int len) { return static_cast<uint8_t>(len - 1); }
void XZeroOp(uint8_t* p, int len) {
  const int l = len - 1;
  p[0] = static_cast<uint8_t>((l >> 8) | 0x40);
  p[1] = static_cast<uint8_t>(l & 0xff);
}
// A run of `len` zero registers as ZERO or XZERO at p; returns the bytes written.
int PutZeros(uint8_t* p, int len) {
  if (len > kSparseZeroMaxLen) {
    XZeroOp(p, len);
    return 2;
  }
  p[0] = ZeroOp(len);
  return 1;
}

// The second byte of an XZERO, or 0 past the end (where Redis reads its string's terminator).
uint8_t ByteOr0(const uint8_t* base, size_t i, size_t end) { return i < end ? base[i] : 0; }

uint8_t* Bytes(std::string* s) { return reinterpret_cast<uint8_t*>(s->data()); }
const uint8_t* Bytes(std::string_view s) { return reinterpret_cast<const uint8_t*>(s.data()); }

// Walks a sparse body, calling fn(first_register, run_length, value) for each run; returns false
// when the runs do not cover exactly the registers. Overflowing VAL runs stop the walk, as
// Redis' merge and conversion do.
template <typename Fn>
bool WalkSparse(std::string_view hll, Fn&& fn) {
  const uint8_t* p = Bytes(hll);
  const size_t end = hll.size();
  size_t i = kHeaderSize;
  size_t idx = 0;
  while (i < end) {
    const uint8_t b = p[i];
    if (IsZero(b)) {
      idx += ZeroLen(b);
      ++i;
    } else if (IsXZero(b)) {
      idx += XZeroLen(b, ByteOr0(p, i + 1, end));
      i += 2;
    } else {
      const size_t len = ValLen(b);
      if (idx + len > kRegisters) break;
      fn(idx, len, ValValue(b));
      idx += len;
      ++i;
    }
  }
  return idx == kRegisters;
}

double Sigma(double x) {
  if (x == 1.) return INFINITY;
  double z_prime;
  double y = 1;
  double z = x;
  do {
    x *= x;
    z_prime = z;
    z += x * y;
    y += y;
  } while (z_prime != z);
  return z;
}

double Tau(double x) {
  if (x == 0. || x == 1.) return 0.;
  double z_prime;
  double y = 1.0;
  double z = 1 - x;
  do {
    x = std::sqrt(x);
    z_prime = z;
    y *= 0.5;
    z -= std::pow(1 - x, 2) * y;
  } while (z_prime != z);
  return z / 3;
}

// Ertl's estimator over the register histogram (values above kQ+1 cannot come from a hash and
// are ignored, as in Redis).
uint64_t Estimate(const int* histo) {
  const double m = kRegisters;
  double z = m * Tau((m - histo[kQ + 1]) / m);
  for (int j = kQ; j >= 1; --j) {
    z += histo[j];
    z *= 0.5;
  }
  z += m * Sigma(histo[0] / m);
  return static_cast<uint64_t>(static_cast<double>(std::llroundl(kAlphaInf * m * m / z)));
}

// Copied from the flag at start (ApplyConfigFlags), then written by CONFIG SET.
RuntimeSetting<size_t> g_sparse_max_bytes{kSparseMaxBytesDefault};

}  // namespace

size_t SparseMaxBytes() { return g_sparse_max_bytes.get(); }
void SetSparseMaxBytes(size_t n) { g_sparse_max_bytes.set(n); }

uint64_t MurmurHash64A(const void* key, size_t len, uint64_t seed) {
  constexpr uint64_t m = 0xc6a4a7935bd1e995ull;
  constexpr int r = 47;
  uint64_t h = seed ^ (len * m);
  const uint8_t* data = static_cast<const uint8_t*>(key);
  const uint8_t* end = data + (len - (len & 7));
  while (data != end) {
    uint64_t k;
    std::memcpy(&k, data, 8);
    k *= m;
    k ^= k >> r;
    k *= m;
    h ^= k;
    h *= m;
    data += 8;
  }
  switch (len & 7) {
    case 7:
      h ^= uint64_t{data[6]} << 48;
      [[fallthrough]];
    case 6:
      h ^= uint64_t{data[5]} << 40;
      [[fallthrough]];
    case 5:
      h ^= uint64_t{data[4]} << 32;
      [[fallthrough]];
    case 4:
      h ^= uint64_t{data[3]} << 24;
      [[fallthrough]];
    case 3:
      h ^= uint64_t{data[2]} << 16;
      [[fallthrough]];
    case 2:
      h ^= uint64_t{data[1]} << 8;
      [[fallthrough]];
    case 1:
      h ^= uint64_t{data[0]};
      h *= m;
  }
  h ^= h >> r;
  h *= m;
  h ^= h >> r;
  return h;
}

int PatLen(std::string_view element, size_t* index) {
  uint64_t hash = MurmurHash64A(element.data(), element.size(), kHashSeed);
  *index = hash & (kRegisters - 1);
  hash >>= kP;
  hash |= uint64_t{1} << kQ;  // a run of at most kQ zeros
  int count = 1;
  for (uint64_t bit = 1; (hash & bit) == 0; bit <<= 1) ++count;
  return count;
}

std::string NewSparse() {
  std::string s(kHeaderSize, '\0');
  std::memcpy(s.data(), "HYLL", 4);
  s[4] = static_cast<char>(kSparse);
  for (size_t left = kRegisters; left > 0;) {
    const size_t run = left < size_t(kSparseXZeroMaxLen) ? left : size_t(kSparseXZeroMaxLen);
    uint8_t op[2];
    XZeroOp(op, int(run));
    s.append(reinterpret_cast<const char*>(op), 2);
    left -= run;
  }
  return s;
}

bool IsValid(std::string_view s) {
  if (s.size() < kHeaderSize || s.substr(0, 4) != "HYLL") return false;
  const uint8_t enc = EncodingOf(s);
  if (enc > kSparse) return false;
  return enc != kDense || s.size() == kDenseSize;
}

uint64_t CachedCardinality(std::string_view s) {
  uint64_t card = 0;
  for (int i = 7; i >= 0; --i) card = (card << 8) | static_cast<uint8_t>(s[8 + i]);
  return card;
}

void SetCachedCardinality(char* s, uint64_t card) {
  for (int i = 0; i < 8; ++i) s[8 + i] = static_cast<char>((card >> (8 * i)) & 0xff);
}

uint8_t DenseGet(const uint8_t* registers, size_t index) {
  const size_t bit = index * kBits;
  const size_t byte = bit / 8, fb = bit & 7;
  unsigned v = registers[byte] >> fb;
  // The last register ends inside its first byte: never read past the registers.
  if (fb + kBits > 8) v |= unsigned(registers[byte + 1]) << (8 - fb);
  return static_cast<uint8_t>(v & kRegisterMax);
}

bool DenseSet(uint8_t* registers, size_t index, uint8_t count) {
  if (count <= DenseGet(registers, index)) return false;
  const size_t bit = index * kBits;
  const size_t byte = bit / 8, fb = bit & 7;
  registers[byte] = static_cast<uint8_t>((registers[byte] & ~(kRegisterMax << fb)) | (count << fb));
  if (fb + kBits > 8) {
    const size_t fb8 = 8 - fb;
    registers[byte + 1] =
        static_cast<uint8_t>((registers[byte + 1] & ~(kRegisterMax >> fb8)) | (count >> fb8));
  }
  return true;
}

int DenseAdd(char* hll, std::string_view element) {
  size_t index;
  const int count = PatLen(element, &index);
  return DenseSet(reinterpret_cast<uint8_t*>(hll) + kHeaderSize, index, uint8_t(count)) ? 1 : 0;
}

bool SparseToDense(std::string* hll) {
  if (EncodingOf(*hll) == kDense) return true;
  std::string dense(kDenseSize, '\0');
  std::memcpy(dense.data(), hll->data(), kHeaderSize);  // magic, unused bytes and the cache
  dense[4] = static_cast<char>(kDense);
  uint8_t* regs = Bytes(&dense) + kHeaderSize;
  const bool ok = WalkSparse(*hll, [&](size_t first, size_t len, int value) {
    for (size_t i = first; i < first + len; ++i) DenseSet(regs, i, uint8_t(value));
  });
  if (!ok) return false;
  *hll = std::move(dense);
  return true;
}

int SparseSet(std::string* hll, size_t index, uint8_t count, size_t sparse_max_bytes) {
  if (count > kSparseValMax) {
    if (!SparseToDense(hll)) return -1;
    DenseSet(Bytes(hll) + kHeaderSize, index, count);
    return 1;
  }
  // Step 1: the opcode that covers the register.
  uint8_t* base = Bytes(hll);
  size_t end = hll->size();
  size_t p = kHeaderSize;
  size_t first = 0, span = 0;
  size_t prev = 0;  // 0: none (the header is never an opcode)
  while (p < end) {
    size_t oplen = 1;
    if (IsZero(base[p])) {
      span = ZeroLen(base[p]);
    } else if (IsVal(base[p])) {
      span = ValLen(base[p]);
    } else {
      span = XZeroLen(base[p], ByteOr0(base, p + 1, end));
      oplen = 2;
    }
    if (index <= first + span - 1) break;
    prev = p;
    p += oplen;
    first += span;
  }
  if (span == 0 || p >= end) return -1;

  const bool is_xzero = IsXZero(base[p]);
  const bool is_zero = IsZero(base[p]);
  const bool is_val = IsVal(base[p]);
  const size_t runlen = is_zero ? ZeroLen(base[p]) : is_val ? ValLen(base[p]) : span;

  bool replaced_in_place = false;
  if (is_val) {
    if (ValValue(base[p]) >= count) return 0;
    if (runlen == 1) {
      base[p] = ValOp(count, 1);
      replaced_in_place = true;
    }
  }
  if (!replaced_in_place && is_zero && runlen == 1) {
    base[p] = ValOp(count, 1);
    replaced_in_place = true;
  }

  if (!replaced_in_place) {
    // Step 2: the run split into (before, the register, after), at most 5 bytes.
    uint8_t seq[5];
    int n = 0;
    const size_t last = first + span - 1;
    if (is_zero || is_xzero) {
      if (index != first) n += PutZeros(seq + n, int(index - first));
      seq[n++] = ValOp(count, 1);
      if (index != last) n += PutZeros(seq + n, int(last - index));
    } else {
      const int cur = ValValue(base[p]);
      if (index != first) seq[n++] = ValOp(cur, int(index - first));
      seq[n++] = ValOp(count, 1);
      if (index != last) seq[n++] = ValOp(cur, int(last - index));
    }
    // Step 3: substitute it, unless that makes the sparse form too large.
    const size_t oldlen = is_xzero ? 2 : 1;
    if (size_t(n) > oldlen && hll->size() + (n - oldlen) > sparse_max_bytes) {
      if (!SparseToDense(hll)) return -1;
      DenseSet(Bytes(hll) + kHeaderSize, index, count);
      return 1;
    }
    if (p + oldlen <= end) {
      hll->replace(p, oldlen, reinterpret_cast<const char*>(seq), size_t(n));
    } else {
      // A corrupted body ending in the first byte of an XZERO: Redis resizes by the difference
      // of the opcode lengths and writes the sequence at p, so its tail falls past the end.
      hll->resize(p);
      hll->append(reinterpret_cast<const char*>(seq), size_t(n));
      hll->resize(end + n - oldlen);
    }
    base = Bytes(hll);
    end = hll->size();
  }

  // Step 4: merge adjacent VAL opcodes of equal value, scanning up to 5 opcodes from the one
  // before the change (what Redis does, so the bytes come out the same).
  size_t q = prev != 0 ? prev : kHeaderSize;
  int scanlen = 5;
  while (q < end && scanlen-- != 0) {
    if (IsXZero(base[q])) {
      q += 2;
      continue;
    }
    if (IsZero(base[q])) {
      ++q;
      continue;
    }
    if (q + 1 < end && IsVal(base[q + 1])) {
      const int v1 = ValValue(base[q]), v2 = ValValue(base[q + 1]);
      if (v1 == v2) {
        const int len = ValLen(base[q]) + ValLen(base[q + 1]);
        if (len <= kSparseValMaxLen) {
          base[q + 1] = ValOp(v1, len);
          hll->erase(q, 1);
          base = Bytes(hll);
          end = hll->size();
          continue;  // the merged opcode may merge with the next one too
        }
      }
    }
    ++q;
  }
  InvalidateCache(hll->data());
  return 1;
}

int Add(std::string* hll, std::string_view element, size_t sparse_max_bytes) {
  size_t index;
  const int count = PatLen(element, &index);
  if (EncodingOf(*hll) == kDense) {
    return DenseSet(Bytes(hll) + kHeaderSize, index, uint8_t(count)) ? 1 : 0;
  }
  return SparseSet(hll, index, uint8_t(count), sparse_max_bytes);
}

bool MergeInto(uint8_t* raw, std::string_view hll) {
  if (EncodingOf(hll) == kDense) {
    const uint8_t* regs = Bytes(hll) + kHeaderSize;
    for (size_t i = 0; i < kRegisters; ++i) {
      const uint8_t v = DenseGet(regs, i);
      if (v > raw[i]) raw[i] = v;
    }
    return true;
  }
  return WalkSparse(hll, [&](size_t first, size_t len, int value) {
    for (size_t i = first; i < first + len; ++i) {
      if (value > raw[i]) raw[i] = uint8_t(value);
    }
  });
}

std::string DecodeSparse(std::string_view hll) {
  const uint8_t* p = Bytes(hll);
  const size_t end = hll.size();
  std::string out;
  for (size_t i = kHeaderSize; i < end;) {
    const uint8_t b = p[i];
    if (IsZero(b)) {
      out += "z:" + std::to_string(ZeroLen(b)) + " ";
      ++i;
    } else if (IsXZero(b)) {
      out += "Z:" + std::to_string(XZeroLen(b, ByteOr0(p, i + 1, end))) + " ";
      i += 2;
    } else {
      out += "v:" + std::to_string(ValValue(b)) + "," + std::to_string(ValLen(b)) + " ";
      ++i;
    }
  }
  if (!out.empty()) out.pop_back();
  return out;
}

bool Count(std::string_view hll, uint64_t* card) {
  int histo[64] = {};
  if (EncodingOf(hll) == kDense) {
    const uint8_t* regs = Bytes(hll) + kHeaderSize;
    for (size_t i = 0; i < kRegisters; ++i) ++histo[DenseGet(regs, i)];
  } else {
    // Every run counts, VAL runs included even past the registers, as in Redis' histogram; the
    // total decides validity.
    const uint8_t* p = Bytes(hll);
    const size_t end = hll.size();
    size_t i = kHeaderSize, idx = 0;
    while (i < end) {
      const uint8_t b = p[i];
      if (IsZero(b)) {
        idx += ZeroLen(b);
        histo[0] += ZeroLen(b);
        ++i;
      } else if (IsXZero(b)) {
        const int len = XZeroLen(b, ByteOr0(p, i + 1, end));
        idx += len;
        histo[0] += len;
        i += 2;
      } else {
        idx += ValLen(b);
        histo[ValValue(b)] += ValLen(b);
        ++i;
      }
    }
    if (idx != kRegisters) return false;
  }
  *card = Estimate(histo);
  return true;
}

uint64_t CountRaw(const uint8_t* raw) {
  int histo[64] = {};
  for (size_t i = 0; i < kRegisters; ++i) ++histo[raw[i] & 63];
  return Estimate(histo);
}

std::string SelfTest(uint64_t seed, size_t sparse_max_bytes) {
  // 1: registers. Each cycle stores random values in zeroed registers and reads them back.
  constexpr int kCycles = 1000;  // Redis' HLL_TEST_CYCLES
  std::vector<uint8_t> registers(kDenseRegistersSize), expected(kRegisters);
  uint64_t state = seed | 1;
  auto next_random = [&state] {  // xorshift64: any spread of values will do
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  for (int cycle = 0; cycle < kCycles; ++cycle) {
    std::fill(registers.begin(), registers.end(), 0);
    for (size_t i = 0; i < kRegisters; ++i) {
      expected[i] = static_cast<uint8_t>(next_random() & kRegisterMax);
      DenseSet(registers.data(), i, expected[i]);
    }
    for (size_t i = 0; i < kRegisters; ++i) {
      const uint8_t got = DenseGet(registers.data(), i);
      if (got != expected[i]) {
        return "TESTFAILED Register " + std::to_string(i) + " should be " +
               std::to_string(expected[i]) + " but is " + std::to_string(got);
      }
    }
  }
  // 2: approximation, dense and sparse side by side.
  std::string dense = NewSparse(), other = NewSparse();
  SparseToDense(&dense);
  const double relerr = 1.04 / std::sqrt(double(kRegisters));
  uint64_t checkpoint = 1;
  for (uint64_t j = 1; j <= 10000000; ++j) {
    const uint64_t element = j ^ seed;
    char bytes[sizeof(element)];
    std::memcpy(bytes, &element, sizeof(element));  // little-endian, as Redis hashes it
    const std::string_view e(bytes, sizeof(bytes));
    DenseAdd(dense.data(), e);
    Add(&other, e, sparse_max_bytes);
    if (j != checkpoint) continue;
    if (j < sparse_max_bytes / 2 && EncodingOf(other) != kSparse) {
      return "TESTFAILED sparse encoding not used";
    }
    uint64_t dense_card = 0, other_card = 0;
    Count(dense, &dense_card);
    Count(other, &other_card);
    if (dense_card != other_card) return "TESTFAILED dense/sparse disagree";
    // Cardinality 10 allows an error of 1 only: a bigger one is a likely collision there.
    const uint64_t max_err = j == 10 ? 1 : uint64_t(std::ceil(relerr * 6 * double(checkpoint)));
    const uint64_t abs_err = checkpoint > dense_card ? checkpoint - dense_card
                                                     : dense_card - checkpoint;
    if (abs_err > max_err) {
      return "TESTFAILED Too big error. card:" + std::to_string(checkpoint) +
             " abserr:" + std::to_string(abs_err);
    }
    checkpoint *= 10;
  }
  return "";
}

}  // namespace shardis::core::hll
