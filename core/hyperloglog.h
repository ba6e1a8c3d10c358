// HyperLogLog in Redis' own string format, byte for byte, so that an HLL string copied between
// redis-server and shardis (GET/SET, DUMP, RDB) counts the same on both sides.
//
// Facts of the format (Redis' documentation of hyperloglog.c):
//   - 16-byte header: "HYLL", the encoding byte (0 dense, 1 sparse), 3 unused bytes, then the
//     cached cardinality as 8 bytes little-endian; the top bit of the last byte set means the
//     cache is stale.
//   - 2^14 registers of 6 bits. Dense: 12288 bytes, register i at bit i*6, least significant
//     bits first (a register may straddle two bytes).
//   - Sparse: run-length opcodes over the registers, in order:
//       ZERO  00xxxxxx           xxxxxx+1 (1..64) zero registers
//       XZERO 01xxxxxx yyyyyyyy  (xxxxxx<<8|yyyyyyyy)+1 (1..16384) zero registers
//       VAL   1vvvvvxx           xx+1 (1..4) registers of value vvvvv+1 (1..32)
//     A sparse HLL turns dense when a register needs a value above 32 or when the string would
//     grow past hll-sparse-max-bytes (default 3000).
//   - An element hashes with MurmurHash64A (seed 0xadc83b19): the low 14 bits pick the
//     register, the run of zeros in the remaining 50 bits (from the low end) plus one is the
//     value offered to it.
//   - The count is Ertl's improved estimator over the histogram of register values.
//
// No threads, no I/O: the server family decides where the bytes live (sparse edits work on a
// std::string because they move bytes; dense edits work in place on the value's own buffer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace shardis::core::hll {

inline constexpr int kP = 14;  // register index bits
inline constexpr int kQ = 64 - kP;
inline constexpr size_t kRegisters = size_t{1} << kP;
inline constexpr int kBits = 6;
inline constexpr uint8_t kRegisterMax = (1 << kBits) - 1;
inline constexpr size_t kHeaderSize = 16;
inline constexpr size_t kDenseRegistersSize = (kRegisters * kBits + 7) / 8;
inline constexpr size_t kDenseSize = kHeaderSize + kDenseRegistersSize;
inline constexpr uint8_t kDense = 0;
inline constexpr uint8_t kSparse = 1;
inline constexpr int kSparseValMax = 32;
// Redis' hll-sparse-max-bytes default (the server's --hll_sparse_max_bytes).
inline constexpr size_t kSparseMaxBytesDefault = 3000;
// The configured hll-sparse-max-bytes (the flag gives the start value; CONFIG SET changes it).
size_t SparseMaxBytes();
void SetSparseMaxBytes(size_t n);

// Redis' MurmurHash64A (the little-endian reading of 8-byte words).
uint64_t MurmurHash64A(const void* key, size_t len, uint64_t seed);

// The register an element goes to (*index) and the value it offers (1..51).
int PatLen(std::string_view element, size_t* index);

// An empty HLL: sparse, the registers as one XZERO run, cached cardinality 0 (valid).
std::string NewSparse();

// Redis' isHLLObjectOrReply checks on a string value: long enough for the header, "HYLL",
// a known encoding, and exactly kDenseSize bytes when dense. (A sparse body is only checked when
// it is walked: a corrupted one is reported then, see the -1/false results below.)
bool IsValid(std::string_view s);
inline uint8_t EncodingOf(std::string_view s) { return static_cast<uint8_t>(s[4]); }

// The cache in the header.
inline bool CacheValid(std::string_view s) { return (static_cast<uint8_t>(s[15]) & 0x80) == 0; }
inline void InvalidateCache(char* s) { s[15] = static_cast<char>(s[15] | 0x80); }
uint64_t CachedCardinality(std::string_view s);
void SetCachedCardinality(char* s, uint64_t card);

// Dense registers (the bytes after the header).
uint8_t DenseGet(const uint8_t* registers, size_t index);
// Sets the register when count is larger than its value; true when it changed.
bool DenseSet(uint8_t* registers, size_t index, uint8_t count);

// Adds one element to an HLL whose bytes are at hll (dense only), in place: 1 when a register
// changed, else 0.
int DenseAdd(char* hll, std::string_view element);

// Sets a register of a sparse HLL to count when that is larger (Redis' hllSparseSet, with its
// exact opcode splitting and merging), converting to dense when needed. Returns 1 when the HLL
// changed, 0 when not, -1 when the sparse body is corrupted.
int SparseSet(std::string* hll, size_t index, uint8_t count, size_t sparse_max_bytes);
// Adds one element to a sparse or dense HLL held in a std::string: 1, 0 or -1 as SparseSet.
int Add(std::string* hll, std::string_view element, size_t sparse_max_bytes);

// Sparse to dense (the header, cache bytes included, is kept; the encoding byte becomes dense).
// No-op for a dense one. False (and *hll unchanged) when the sparse body is corrupted.
bool SparseToDense(std::string* hll);

// Max-merges the registers of a valid HLL string into raw[kRegisters] (one byte per register).
// False when a sparse body is corrupted.
bool MergeInto(uint8_t* raw, std::string_view hll);

// PFDEBUG DECODE: the opcodes of a sparse HLL as "z:<len>", "Z:<len>", "v:<value>,<len>",
// separated by spaces.
std::string DecodeSparse(std::string_view hll);

// The estimate of an HLL string (ignores the cache); false when a sparse body is corrupted.
bool Count(std::string_view hll, uint64_t* card);
// The estimate of raw registers (PFCOUNT of several keys).
uint64_t CountRaw(const uint8_t* raw);

// PFSELFTEST, the checks of Redis' pfselftestCommand: dense registers keep the values stored in
// them without disturbing their neighbours; a dense and a sparse HLL given the same 10^7
// distinct elements (from seed) agree, the sparse one stays sparse while small, and the estimate
// at 1, 10, 100, ... elements is within 6 standard errors. Returns "" when all pass, else the
// error reply (Redis' "TESTFAILED ..." texts).
std::string SelfTest(uint64_t seed, size_t sparse_max_bytes);

}  // namespace shardis::core::hll
