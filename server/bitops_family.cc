// Bit commands on strings: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD, BITFIELD_RO, with
// Redis 7.0's argument rules, error texts and order of checks (bitops.c).
//
// Strings are CompactValue cells: writes go through CompactValue::EditBytes, which edits a heap
// string in its own block (growing it, zero padded, when a write reaches past the end) and
// re-encodes short results (a SETBIT may turn "0" into "1", which is an int again). BITOP is the
// one multi-key command: a read phase copies the sources on their shards, the coordinator
// computes, and one more hop stores the result on the destination's shard.
#include <bit>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "core/number.h"
#include "core/string_util.h"
#include "server/arg_parser.h"
#include "server/client_buffers.h"
#include "server/command.h"
#include "server/connection_state.h"
#include "server/key_lookup.h"
#include "shard/transaction.h"

namespace shardis::server {

namespace {

using core::CompactValue;
using core::ValueType;
using shard::Db;

constexpr std::string_view kBitOffsetErr = "ERR bit offset is not an integer or out of range";
constexpr std::string_view kBitValueErr = "ERR bit is not an integer or out of range";
constexpr std::string_view kBitArgErr = "ERR The bit argument must be 1 or 0.";
constexpr std::string_view kBitfieldTypeErr =
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 "
    "is.";

// Redis' getBitOffsetFromArgument: a non-negative integer whose byte is below proto-max-bulk-len.
// With `hash` (BITFIELD), "#N" means N * bits (multiplied with wrap-around, as Redis does in C).
bool ParseBitOffset(std::string_view arg, bool hash, int bits, uint64_t* out) {
  const bool use_hash = hash && bits > 0 && !arg.empty() && arg[0] == '#';
  int64_t v;
  if (!core::ParseInt64(use_hash ? arg.substr(1) : arg, &v)) return false;
  if (use_hash) v = static_cast<int64_t>(static_cast<uint64_t>(v) * static_cast<uint64_t>(bits));
  if (v < 0 || (v >> 3) >= ProtoMaxBulkLen()) return false;
  *out = static_cast<uint64_t>(v);
  return true;
}

// --- SETBIT / GETBIT.

void CmdSetBit(ArgSlice args, ShardContext& ctx) {
  uint64_t offset;
  if (!ParseBitOffset(args[2], false, 0, &offset)) return ctx.rb.Error(kBitOffsetErr);
  int64_t on;
  if (!core::ParseInt64(args[3], &on) || (on & ~int64_t{1}) != 0) {
    return ctx.rb.Error(kBitValueErr);
  }
  Db::Iterator it = LookupWrite(ctx, args[1]);
  if (Db::Found(it) && !it.value().IsString()) return ctx.rb.Error(kWrongTypeErr);
  const bool created = !Db::Found(it);
  if (created) {
    bool inserted;
    it = ctx.db.FindOrInsert(args[1], ctx.hash, ctx.now_ms, &inserted);
  }
  const size_t byte = offset >> 3;
  const unsigned bit = 7 - unsigned(offset & 7);
  // Redis counts a change when the key is new, the string grew, or the bit flipped.
  const bool grows = it.value().StringSize() < byte + 1;
  bool old = false;
  it.value().EditBytes(byte + 1, [&](char* p, size_t) {
    uint8_t v = static_cast<uint8_t>(p[byte]);
    old = (v >> bit) & 1;
    v = static_cast<uint8_t>((v & ~(1u << bit)) | (unsigned(on) << bit));
    p[byte] = static_cast<char>(v);
  });
  if (created || grows || old != bool(on)) {
    ctx.shard.AddDirty();
    NotifyKeyspaceEvent(ctx, kNotifyString, "setbit", args[1]);
  }
  ctx.rb.Integer(old ? 1 : 0);
}

void CmdGetBit(ArgSlice args, ShardContext& ctx) {
  uint64_t offset;
  if (!ParseBitOffset(args[2], false, 0, &offset)) return ctx.rb.Error(kBitOffsetErr);
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], ValueType::kString, kForRead, &wrong_type);
  if (wrong_type) return;
  if (!Db::Found(it)) return ctx.rb.Integer(0);
  char scratch[CompactValue::kScratchSize];
  const std::string_view s = it.value().GetString(scratch);
  const size_t byte = offset >> 3;
  int bit = 0;
  if (byte < s.size()) bit = (static_cast<uint8_t>(s[byte]) >> (7 - (offset & 7))) & 1;
  ctx.rb.Integer(bit);
}

// --- BITCOUNT / BITPOS.

int64_t PopCount(const char* p, size_t n) {
  int64_t count = 0;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    count += std::popcount(w);
  }
  for (; i < n; ++i) count += std::popcount(static_cast<uint8_t>(p[i]));
  return count;
}

// A [start, end] range argument pair resolved as Redis resolves it against a length `total` (in
// bytes, or bits with BIT): negative indices count from the end, then both are clamped. Returns
// false for an empty range.
bool ResolveRange(int64_t total, int64_t* start, int64_t* end) {
  int64_t s = *start, e = *end;
  if (s < 0) s += total;
  if (e < 0) e += total;
  if (s < 0) s = 0;
  if (e < 0) e = 0;
  if (e >= total) e = total - 1;
  *start = s;
  *end = e;
  return s <= e;
}

// The optional range unit: true for BIT; BYTE or nothing is bytes; anything else is a syntax
// error.
bool ReadRangeUnit(ArgParser& p) {
  if (!p.HasNext() || p.Check("byte")) return false;
  if (p.Check("bit")) return true;
  p.Fail(kSyntaxErr);
  return false;
}

bool GetBitAt(std::string_view s, int64_t pos) {
  return (static_cast<uint8_t>(s[size_t(pos >> 3)]) >> (7 - (pos & 7))) & 1;
}

// BITCOUNT key [start end [BYTE | BIT]]. Redis 7.0 looks the key up before it parses the range,
// so a missing key answers 0 (and a key of another type WRONGTYPE) whatever the arguments.
void CmdBitCount(ArgSlice args, ShardContext& ctx) {
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], ValueType::kString, kForRead, &wrong_type);
  if (wrong_type) return;
  if (!Db::Found(it)) return ctx.rb.Integer(0);
  char scratch[CompactValue::kScratchSize];
  const std::string_view s = it.value().GetString(scratch);
  const int64_t len = int64_t(s.size());
  if (args.size() == 2) return ctx.rb.Integer(PopCount(s.data(), s.size()));
  if (args.size() != 4 && args.size() != 5) return ctx.rb.Error(kSyntaxErr);
  ArgParser p(args, 2);
  int64_t start = p.Next<int64_t>();
  int64_t end = p.Next<int64_t>();
  if (p.ReplyError(ctx.rb)) return;
  if (start < 0 && end < 0 && start > end) return ctx.rb.Integer(0);
  const bool is_bit = ReadRangeUnit(p);
  if (p.ReplyError(ctx.rb)) return;
  if (!ResolveRange(is_bit ? len * 8 : len, &start, &end)) return ctx.rb.Integer(0);
  if (!is_bit) return ctx.rb.Integer(PopCount(s.data() + start, size_t(end - start + 1)));
  // Whole bytes in the middle, single bits at the two ragged edges.
  int64_t count = 0;
  int64_t pos = start;
  for (; pos <= end && (pos & 7) != 0; ++pos) count += GetBitAt(s, pos);
  const int64_t first_byte = pos >> 3, last_full = ((end + 1) >> 3) - 1;
  if (pos <= end && last_full >= first_byte) {
    count += PopCount(s.data() + first_byte, size_t(last_full - first_byte + 1));
    pos = (last_full + 1) * 8;
  }
  for (; pos <= end; ++pos) count += GetBitAt(s, pos);
  ctx.rb.Integer(count);
}

// The first bit equal to `bit` in bit positions [from, to] of s, or -1.
int64_t FindBit(std::string_view s, bool bit, int64_t from, int64_t to) {
  int64_t pos = from;
  for (; pos <= to && (pos & 7) != 0; ++pos) {
    if (GetBitAt(s, pos) == bit) return pos;
  }
  // Whole bytes: skip those with nothing to find (all zero when looking for 1, all ones for 0).
  const uint8_t skip = bit ? 0x00 : 0xff;
  while (pos + 7 <= to) {
    const uint8_t v = static_cast<uint8_t>(s[size_t(pos >> 3)]);
    if (v != skip) break;
    pos += 8;
  }
  for (; pos <= to; ++pos) {
    if (GetBitAt(s, pos) == bit) return pos;
  }
  return -1;
}

// BITPOS key bit [start [end [BYTE | BIT]]]. A string is padded with zeros on the right, so
// looking for a 0 without an explicit end finds the first bit past the string when all are 1.
void CmdBitPos(ArgSlice args, ShardContext& ctx) {
  int64_t bit;
  if (!core::ParseInt64(args[2], &bit)) return ctx.rb.Error(kNotIntegerErr);
  if (bit != 0 && bit != 1) return ctx.rb.Error(kBitArgErr);
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], ValueType::kString, kForRead, &wrong_type);
  if (wrong_type) return;
  if (!Db::Found(it)) return ctx.rb.Integer(bit ? -1 : 0);
  char scratch[CompactValue::kScratchSize];
  const std::string_view s = it.value().GetString(scratch);
  const int64_t len = int64_t(s.size());
  int64_t start = 0, end = len - 1;
  bool is_bit = false, end_given = false;
  if (args.size() >= 4 && args.size() <= 6) {
    // Redis reads the unit before the end: a bad unit is reported before a bad end.
    ArgParser p(args, 3);
    start = p.Next<int64_t>();
    end_given = args.size() >= 5;
    const std::string_view end_arg = end_given ? p.Next() : std::string_view();
    is_bit = ReadRangeUnit(p);
    if (end_given && p.ok() && !core::ParseInt64(end_arg, &end)) p.Fail(kNotIntegerErr);
    if (p.ReplyError(ctx.rb)) return;
    if (!end_given) end = is_bit ? len * 8 + 7 : len - 1;
    if (!ResolveRange(is_bit ? len * 8 : len, &start, &end)) return ctx.rb.Integer(-1);
  } else if (args.size() != 3) {
    return ctx.rb.Error(kSyntaxErr);
  } else if (start > end) {
    return ctx.rb.Integer(-1);  // the empty string
  }
  const int64_t from = is_bit ? start : start * 8;
  const int64_t to = is_bit ? end : end * 8 + 7;
  const int64_t pos = FindBit(s, bit, from, to);
  if (pos >= 0) return ctx.rb.Integer(pos);
  if (bit == 1 || end_given) return ctx.rb.Integer(-1);
  ctx.rb.Integer(to + 1);  // the zero padding right after the range
}

// --- BITOP.

enum class BitOp { kAnd, kOr, kXor, kNot };

// BITOP op destkey key [key ...]: the sources are read (and copied) on their shards, combined
// here, and the result is stored on the destination's shard, all in one transaction. A missing
// source is an empty string; the result is as long as the longest source (shorter ones count as
// zero bytes), and an empty result deletes the destination.
void CmdBitOp(ArgSlice args, ConnContext& ctx) {
  const std::string_view opname = args[1];
  BitOp op;
  if (core::EqualsIgnoreCase(opname, "and")) {
    op = BitOp::kAnd;
  } else if (core::EqualsIgnoreCase(opname, "or")) {
    op = BitOp::kOr;
  } else if (core::EqualsIgnoreCase(opname, "xor")) {
    op = BitOp::kXor;
  } else if (core::EqualsIgnoreCase(opname, "not")) {
    op = BitOp::kNot;
  } else {
    return ctx.rb.Error(kSyntaxErr);
  }
  if (op == BitOp::kNot && args.size() != 4) {
    return ctx.rb.Error("ERR BITOP NOT must be called with a single source key.");
  }
  // Key 0 is the destination, keys 1.. the sources.
  ArgSlice keys = args.subspan(2);
  const size_t nsrc = keys.size() - 1;
  shard::Transaction tx(ctx.conn.db, keys, shard::Transaction::kWrite);
  std::vector<std::string> src(nsrc);
  std::vector<uint8_t> wrong_type(nsrc, 0);
  tx.Run([&](shard::TxShard& t) {
    for (uint32_t i : t.keys) {
      if (i == 0) continue;
      Db::Iterator it = LookupRead(t.shard, t.db, tx.key(i), tx.hash(i), t.now_ms);
      if (!Db::Found(it)) continue;
      if (!it.value().IsString()) {
        wrong_type[i - 1] = 1;
        continue;
      }
      it.value().AppendTo(&src[i - 1]);
    }
  });
  size_t maxlen = 0;
  for (size_t j = 0; j < nsrc; ++j) {
    if (wrong_type[j]) {
      tx.Conclude();
      return ctx.rb.Error(kWrongTypeErr);
    }
    maxlen = std::max(maxlen, src[j].size());
  }
  std::string res;
  if (maxlen > 0) {
    if (op == BitOp::kNot) {
      res = std::move(src[0]);
      for (char& c : res) c = static_cast<char>(~c);
    } else {
      res = src[0];
      res.resize(maxlen, '\0');
      for (size_t j = 1; j < nsrc; ++j) {
        const std::string& s = src[j];
        // Bytes past the end of a shorter source are zero: AND clears them, OR/XOR keep them.
        const size_t n = s.size();
        switch (op) {
          case BitOp::kAnd:
            for (size_t b = 0; b < n; ++b) res[b] &= s[b];
            std::memset(res.data() + n, 0, maxlen - n);
            break;
          case BitOp::kOr:
            for (size_t b = 0; b < n; ++b) res[b] |= s[b];
            break;
          case BitOp::kXor:
            for (size_t b = 0; b < n; ++b) res[b] ^= s[b];
            break;
          case BitOp::kNot:
            break;
        }
      }
    }
  }
  tx.RunOn(tx.shard_of(0), [&](shard::TxShard& t) {
    const std::string_view dest = tx.key(0);
    if (maxlen > 0) {
      t.db.Store(dest, tx.hash(0), CompactValue::FromString(res), 0, t.now_ms);
      t.db.NoteModified(dest);
      t.shard.AddDirty();
      shard::NotifyKeyspaceEvent(kNotifyString, "set", dest, t.db.index());
    } else if (t.db.Erase(dest, tx.hash(0), t.now_ms)) {
      t.db.NoteModified(dest);
      t.shard.AddDirty();
      shard::NotifyKeyspaceEvent(kNotifyGeneric, "del", dest, t.db.index());
    }
  });
  tx.Conclude();
  ctx.rb.Integer(int64_t(maxlen));
}

// --- BITFIELD / BITFIELD_RO.

enum class BfOpcode : uint8_t { kGet, kSet, kIncrBy };
enum class Overflow : uint8_t { kWrap, kSat, kFail };

struct BfOp {
  uint64_t offset;
  int64_t value;
  BfOpcode opcode;
  Overflow overflow;
  int bits;
  bool is_signed;
};

// "i1".."i64", "u1".."u63" (lower-case letter only, as Redis).
bool ParseBitfieldType(std::string_view arg, bool* is_signed, int* bits) {
  if (arg.empty() || (arg[0] != 'i' && arg[0] != 'u')) return false;
  *is_signed = arg[0] == 'i';
  int64_t n;
  if (!core::ParseInt64(arg.substr(1), &n) || n < 1 || n > (*is_signed ? 64 : 63)) return false;
  *bits = int(n);
  return true;
}

uint64_t GetUnsignedField(const uint8_t* p, uint64_t offset, int bits) {
  uint64_t value = 0;
  for (int i = 0; i < bits; ++i, ++offset) {
    value = (value << 1) | ((p[offset >> 3] >> (7 - (offset & 7))) & 1);
  }
  return value;
}

int64_t GetSignedField(const uint8_t* p, uint64_t offset, int bits) {
  uint64_t u = GetUnsignedField(p, offset, bits);
  if (bits < 64 && (u & (uint64_t{1} << (bits - 1)))) u |= ~uint64_t{0} << bits;
  return static_cast<int64_t>(u);
}

void SetField(uint8_t* p, uint64_t offset, int bits, uint64_t value) {
  for (int i = 0; i < bits; ++i, ++offset) {
    const uint64_t bit = (value >> (bits - 1 - i)) & 1;
    const unsigned shift = 7 - unsigned(offset & 7);
    uint8_t& b = p[offset >> 3];
    b = static_cast<uint8_t>((b & ~(1u << shift)) | (bit << shift));
  }
}

// Redis' checkUnsignedBitfieldOverflow: 0 when value + incr fits in `bits` bits, else nonzero
// with *limit the wrapped or saturated result (for FAIL it is not used).
int UnsignedOverflow(uint64_t value, int64_t incr, int bits, Overflow ow, uint64_t* limit) {
  const uint64_t max = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  const int64_t maxincr = static_cast<int64_t>(max - value);
  const int64_t minincr = static_cast<int64_t>(-value);
  auto wrap = [&] { *limit = (value + static_cast<uint64_t>(incr)) & max; };
  if (value > max || (incr > 0 && incr > maxincr)) {
    if (ow == Overflow::kWrap) {
      wrap();
    } else if (ow == Overflow::kSat) {
      *limit = max;
    }
    return 1;
  }
  if (incr < 0 && incr < minincr) {
    if (ow == Overflow::kWrap) {
      wrap();
    } else if (ow == Overflow::kSat) {
      *limit = 0;
    }
    return -1;
  }
  return 0;
}

// Redis' checkSignedBitfieldOverflow.
int SignedOverflow(int64_t value, int64_t incr, int bits, Overflow ow, int64_t* limit) {
  const int64_t max =
      bits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (bits - 1)) - 1;
  const int64_t min = -max - 1;
  // May wrap, but are only used when `value` is in range, where they do not.
  const int64_t maxincr = static_cast<int64_t>(static_cast<uint64_t>(max) - value);
  const int64_t minincr = static_cast<int64_t>(static_cast<uint64_t>(min) - value);
  auto wrap = [&] {
    uint64_t c = static_cast<uint64_t>(value) + static_cast<uint64_t>(incr);
    if (bits < 64) {
      const uint64_t mask = ~uint64_t{0} << bits;
      if (c & (uint64_t{1} << (bits - 1))) {
        c |= mask;
      } else {
        c &= ~mask;
      }
    }
    *limit = static_cast<int64_t>(c);
  };
  if (value > max || (bits != 64 && incr > maxincr) ||
      (value >= 0 && incr > 0 && incr > maxincr)) {
    if (ow == Overflow::kWrap) {
      wrap();
    } else if (ow == Overflow::kSat) {
      *limit = max;
    }
    return 1;
  }
  if (value < min || (bits != 64 && incr < minincr) || (value < 0 && incr < 0 && incr < minincr)) {
    if (ow == Overflow::kWrap) {
      wrap();
    } else if (ow == Overflow::kSat) {
      *limit = min;
    }
    return -1;
  }
  return 0;
}

// A GET reads at most 9 bytes from the field's first byte; past the end of the string they are
// zero (Redis copies them to a zero-padded buffer the same way).
void ReplyGet(core::ReplyBuilder& rb, std::string_view s, const BfOp& op) {
  uint8_t buf[9] = {};
  const uint64_t byte = op.offset >> 3;
  for (uint64_t i = 0; i < 9 && byte + i < s.size(); ++i) buf[i] = uint8_t(s[byte + i]);
  const uint64_t rel = op.offset - byte * 8;
  if (op.is_signed) {
    rb.Integer(GetSignedField(buf, rel, op.bits));
  } else {
    rb.Integer(static_cast<int64_t>(GetUnsignedField(buf, rel, op.bits)));
  }
}

// SET or INCRBY on a string that already covers the field; replies the old value (SET) or the
// new one (INCRBY), or nil when OVERFLOW FAIL refuses the write. Says which happened.
enum class FieldWrite { kRefused, kSameValue, kChanged };
FieldWrite ApplyWrite(core::ReplyBuilder& rb, uint8_t* p, const BfOp& op) {
  const bool incr = op.opcode == BfOpcode::kIncrBy;
  if (op.is_signed) {
    const int64_t oldval = GetSignedField(p, op.offset, op.bits);
    int64_t newval, wrapped = 0, ret;
    int overflow;
    if (incr) {
      overflow = SignedOverflow(oldval, op.value, op.bits, op.overflow, &wrapped);
      newval = overflow ? wrapped
                        : static_cast<int64_t>(static_cast<uint64_t>(oldval) +
                                               static_cast<uint64_t>(op.value));
      ret = newval;
    } else {
      newval = op.value;
      overflow = SignedOverflow(newval, 0, op.bits, op.overflow, &wrapped);
      if (overflow) newval = wrapped;
      ret = oldval;
    }
    if (overflow && op.overflow == Overflow::kFail) {
      rb.Null();
      return FieldWrite::kRefused;
    }
    rb.Integer(ret);
    SetField(p, op.offset, op.bits, static_cast<uint64_t>(newval));
    return newval != oldval ? FieldWrite::kChanged : FieldWrite::kSameValue;
  } else {
    const uint64_t oldval = GetUnsignedField(p, op.offset, op.bits);
    uint64_t newval, wrapped = 0, ret;
    int overflow;
    if (incr) {
      newval = oldval + static_cast<uint64_t>(op.value);
      overflow = UnsignedOverflow(oldval, op.value, op.bits, op.overflow, &wrapped);
      if (overflow) newval = wrapped;
      ret = newval;
    } else {
      newval = static_cast<uint64_t>(op.value);
      overflow = UnsignedOverflow(newval, 0, op.bits, op.overflow, &wrapped);
      if (overflow) newval = wrapped;
      ret = oldval;
    }
    if (overflow && op.overflow == Overflow::kFail) {
      rb.Null();
      return FieldWrite::kRefused;
    }
    rb.Integer(static_cast<int64_t>(ret));
    SetField(p, op.offset, op.bits, newval);
    return newval != oldval ? FieldWrite::kChanged : FieldWrite::kSameValue;
  }
}

// BITFIELD key [GET type offset | SET type offset value | INCRBY type offset incr |
// OVERFLOW WRAP|SAT|FAIL] ...; BITFIELD_RO accepts GET only. Every argument is checked before
// anything runs; writes first grow the string to cover the highest bit any of them touches.
template <bool kReadOnlyCmd>
void CmdBitField(ArgSlice args, ShardContext& ctx) {
  std::vector<BfOp> ops;
  Overflow overflow = Overflow::kWrap;
  bool readonly = true;
  uint64_t highest_write = 0;
  ArgParser p(args, 2);
  while (p.HasNext()) {
    BfOpcode opcode;
    if (p.Check("GET", 2)) {
      opcode = BfOpcode::kGet;
    } else if (p.Check("SET", 3)) {
      opcode = BfOpcode::kSet;
    } else if (p.Check("INCRBY", 3)) {
      opcode = BfOpcode::kIncrBy;
    } else if (p.Check("OVERFLOW", 1)) {
      if (p.Check("WRAP")) {
        overflow = Overflow::kWrap;
      } else if (p.Check("SAT")) {
        overflow = Overflow::kSat;
      } else if (p.Check("FAIL")) {
        overflow = Overflow::kFail;
      } else {
        return ctx.rb.Error("ERR Invalid OVERFLOW type specified");
      }
      continue;
    } else {
      return ctx.rb.Error(kSyntaxErr);
    }
    BfOp op{0, 0, opcode, overflow, 0, false};
    if (!ParseBitfieldType(p.Next(), &op.is_signed, &op.bits)) {
      return ctx.rb.Error(kBitfieldTypeErr);
    }
    if (!ParseBitOffset(p.Next(), true, op.bits, &op.offset)) {
      return ctx.rb.Error(kBitOffsetErr);
    }
    if (opcode != BfOpcode::kGet) {
      readonly = false;
      highest_write = std::max(highest_write, op.offset + uint64_t(op.bits) - 1);
      op.value = p.Next<int64_t>();
      if (p.ReplyError(ctx.rb)) return;
    }
    ops.push_back(op);
  }

  if (readonly) {
    bool wrong_type;
    Db::Iterator it = FindTyped(ctx, args[1], ValueType::kString, kForRead, &wrong_type);
    if (wrong_type) return;
    char scratch[CompactValue::kScratchSize];
    const std::string_view s = Db::Found(it) ? it.value().GetString(scratch) : std::string_view();
    ctx.rb.ArrayHeader(ops.size());
    for (const BfOp& op : ops) ReplyGet(ctx.rb, s, op);
    return;
  }
  if (kReadOnlyCmd) return ctx.rb.Error("ERR BITFIELD_RO only supports the GET subcommand");

  Db::Iterator it = LookupWrite(ctx, args[1]);
  if (Db::Found(it) && !it.value().IsString()) return ctx.rb.Error(kWrongTypeErr);
  const bool created = !Db::Found(it);
  if (created) {
    bool inserted;
    it = ctx.db.FindOrInsert(args[1], ctx.hash, ctx.now_ms, &inserted);
  }
  // Redis counts one change per write that changed its field, or per write at all when the key
  // is new or the string grew.
  const bool grows = it.value().StringSize() < (highest_write >> 3) + 1;
  uint64_t changes = 0;
  ctx.rb.ArrayHeader(ops.size());
  it.value().EditBytes((highest_write >> 3) + 1, [&](char* p, size_t size) {
    for (const BfOp& op : ops) {
      if (op.opcode == BfOpcode::kGet) {
        ReplyGet(ctx.rb, {p, size}, op);
      } else {
        const FieldWrite w = ApplyWrite(ctx.rb, reinterpret_cast<uint8_t*>(p), op);
        if (w == FieldWrite::kChanged || (w == FieldWrite::kSameValue && (created || grows))) {
          ++changes;
        }
      }
    }
  });
  ctx.shard.AddDirty(changes);
  if (changes > 0) NotifyKeyspaceEvent(ctx, kNotifyString, "setbit", args[1]);
}

}  // namespace

void RegisterBitopsFamily(CommandRegistry* r) {
  constexpr uint32_t kW = kWrite, kR = kReadOnly, kD = kDenyOom, kF = kFast;
  r->Register({.name = "setbit", .arity = 4, .flags = kW | kD, .keys = kOneKey,
               .acl_categories = "write bitmap slow", .on_shard = CmdSetBit,
               .docs = {.group = "bitmap", .since = "2.2.0", .complexity = "O(1)",
                        .summary = "Sets or clears the bit at an offset of a string.",
                        .key_flags = "RW access update"}});
  r->Register({.name = "getbit", .arity = 3, .flags = kR | kF, .keys = kOneKey,
               .acl_categories = "read bitmap fast", .on_shard = CmdGetBit,
               .docs = {.group = "bitmap", .since = "2.2.0", .complexity = "O(1)",
                        .summary = "Returns the bit at an offset of a string.",
                        .key_flags = "RO access"}});
  r->Register({.name = "bitcount", .arity = -2, .flags = kR, .keys = kOneKey,
               .acl_categories = "read bitmap slow", .on_shard = CmdBitCount,
               .docs = {.group = "bitmap", .since = "2.6.0", .complexity = "O(N)",
                        .summary = "Counts the bits set to 1 in a string, or in a range of it.",
                        .key_flags = "RO access"}});
  r->Register({.name = "bitpos", .arity = -3, .flags = kR, .keys = kOneKey,
               .acl_categories = "read bitmap slow", .on_shard = CmdBitPos,
               .docs = {.group = "bitmap", .since = "2.8.7", .complexity = "O(N)",
                        .summary = "Returns the position of the first bit set to 1 or 0 in a "
                                   "string, or in a range of it.", .key_flags = "RO access"}});
  r->Register({.name = "bitfield", .arity = -2, .flags = kW | kD, .keys = kOneKey,
               .acl_categories = "write bitmap slow", .on_shard = CmdBitField<false>,
               .docs = {.group = "bitmap", .since = "3.2.0",
                        .complexity = "O(1) for each subcommand specified",
                        .summary = "Reads, writes and increments integers of any width at any bit "
                                   "offset of a string.",
                        .key_flags = "RW access update variable_flags"}});
  r->Register({.name = "bitfield_ro", .arity = -2, .flags = kR | kF, .keys = kOneKey,
               .acl_categories = "read bitmap fast", .on_shard = CmdBitField<true>,
               .docs = {.group = "bitmap", .since = "6.0.0",
                        .complexity = "O(1) for each subcommand specified",
                        .summary = "Reads integers of any width at any bit offset of a string "
                                   "(BITFIELD without writes).", .key_flags = "RO access"}});
  r->Register({.name = "bitop", .arity = -4, .flags = kW | kD,
               .keys = {.first = 2, .last = -1, .step = 1}, .acl_categories = "write bitmap slow",
               .on_conn = CmdBitOp,
               .docs = {.group = "bitmap", .since = "2.6.0", .complexity = "O(N)",
                        .summary = "Combines strings bit by bit with AND, OR, XOR or NOT into a "
                                   "destination key.", .key_flags = "OW update",
                        .other_key_flags = "RO access"}});
}

}  // namespace shardis::server
