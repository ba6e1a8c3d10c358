// The constants of Redis' RDB format (the numbers in Redis' rdb.h), shared by the writer, the
// reader and the DUMP payload code. A file is
//   "REDIS" + 4 ASCII digits of the version, then opcodes and key records, then EOF (255) and the
//   CRC64 of everything before it, 8 bytes little-endian (0 when the writer had rdbchecksum off).
// A key record is [EXPIRETIME_MS t] [IDLE n | FREQ b] <type byte> <key string> <value>.
#pragma once

#include <cstdint>

namespace shardis::core::rdb {

// What the writer produces: Redis 7.0's version. The reader takes 9 (Redis 6.2) to 11 (Redis 7.2,
// Valkey 8).
inline constexpr int kVersion = 10;
inline constexpr int kMinReadVersion = 9;
inline constexpr int kMaxReadVersion = 11;

// ---- Lengths: the two top bits of the first byte.
inline constexpr uint8_t k6BitLen = 0;      // 00xxxxxx
inline constexpr uint8_t k14BitLen = 1;     // 01xxxxxx xxxxxxxx (big-endian)
inline constexpr uint8_t k32BitLen = 0x80;  // then 4 bytes big-endian
inline constexpr uint8_t k64BitLen = 0x81;  // then 8 bytes big-endian
inline constexpr uint8_t kEncVal = 3;       // 11xxxxxx: a specially encoded string follows
// The encodings of a 11xxxxxx string.
inline constexpr uint8_t kEncInt8 = 0;
inline constexpr uint8_t kEncInt16 = 1;  // little-endian
inline constexpr uint8_t kEncInt32 = 2;  // little-endian
inline constexpr uint8_t kEncLzf = 3;    // compressed length, original length, the LZF bytes

// ---- Value types (the type byte of a key record and of a DUMP payload).
inline constexpr uint8_t kTypeString = 0;
inline constexpr uint8_t kTypeList = 1;  // linked list of strings (old; read only)
inline constexpr uint8_t kTypeSet = 2;
inline constexpr uint8_t kTypeZSet = 3;  // scores as strings (old; read only)
inline constexpr uint8_t kTypeHash = 4;
inline constexpr uint8_t kTypeZSet2 = 5;  // scores as binary doubles
inline constexpr uint8_t kTypeModule = 6;
inline constexpr uint8_t kTypeModule2 = 7;
inline constexpr uint8_t kTypeHashZipmap = 9;
inline constexpr uint8_t kTypeListZiplist = 10;
inline constexpr uint8_t kTypeSetIntset = 11;
inline constexpr uint8_t kTypeZSetZiplist = 12;
inline constexpr uint8_t kTypeHashZiplist = 13;
inline constexpr uint8_t kTypeListQuicklist = 14;  // nodes are ziplists (Redis < 7)
inline constexpr uint8_t kTypeStreamListpacks = 15;
inline constexpr uint8_t kTypeHashListpack = 16;
inline constexpr uint8_t kTypeZSetListpack = 17;
inline constexpr uint8_t kTypeListQuicklist2 = 18;  // nodes are listpacks or plain strings
inline constexpr uint8_t kTypeStreamListpacks2 = 19;
inline constexpr uint8_t kTypeSetListpack = 20;      // RDB 11 (Redis 7.2)
inline constexpr uint8_t kTypeStreamListpacks3 = 21;  // RDB 11: consumers' active time

// The container of a kTypeListQuicklist2 node.
inline constexpr uint64_t kQuicklistNodePlain = 1;
inline constexpr uint64_t kQuicklistNodePacked = 2;

// ---- Opcodes (in place of a type byte).
inline constexpr uint8_t kOpSlotInfo = 244;  // Valkey 8 / Redis 7.4 cluster hint: 3 lengths
inline constexpr uint8_t kOpFunction2 = 245;
inline constexpr uint8_t kOpFunctionPreGa = 246;
inline constexpr uint8_t kOpModuleAux = 247;
inline constexpr uint8_t kOpIdle = 248;
inline constexpr uint8_t kOpFreq = 249;
inline constexpr uint8_t kOpAux = 250;
inline constexpr uint8_t kOpResizeDb = 251;
inline constexpr uint8_t kOpExpireTimeMs = 252;
inline constexpr uint8_t kOpExpireTime = 253;  // seconds, 4 bytes (old; read only)
inline constexpr uint8_t kOpSelectDb = 254;
inline constexpr uint8_t kOpEof = 255;

// The opcodes inside a module value (MODULE_2 and MODULE_AUX), enough to skip one.
inline constexpr uint64_t kModuleOpEof = 0;
inline constexpr uint64_t kModuleOpSint = 1;
inline constexpr uint64_t kModuleOpUint = 2;
inline constexpr uint64_t kModuleOpFloat = 3;
inline constexpr uint64_t kModuleOpDouble = 4;
inline constexpr uint64_t kModuleOpString = 5;

// Stream listpack entry flags.
inline constexpr int64_t kStreamItemDeleted = 1;
inline constexpr int64_t kStreamItemSameFields = 2;

// Redis stores a list element of at least this many bytes in a node of its own, plain (7.0's
// packed_threshold default, 1 GiB).
inline constexpr uint64_t kListPlainThreshold = uint64_t{1} << 30;

}  // namespace shardis::core::rdb
