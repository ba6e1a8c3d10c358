// ArgParser: the one way a command handler reads its options. It walks the arguments of a
// command (views into the input buffer: nothing is copied) and keeps the first error it meets,
// with Redis' text, so that an option loop reads like the command's syntax and the handler
// replies the error in one place:
//
//   ArgParser p(args, 3);
//   while (p.HasNext()) {
//     if (p.Check("COUNT", 1)) {
//       count = p.Next<int64_t>();
//     } else if (p.Check("MATCH", 1)) {
//       pattern = p.Next();
//     } else {
//       p.Fail(kSyntaxErr);
//     }
//   }
//   if (p.ReplyError(ctx.rb)) return;
//
// Once an error is recorded HasNext() is false, Check() matches nothing and Next() returns
// empty values, so a loop ends by itself. The parser is a few words on the stack, inline: SET's
// options go through it on every call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/number.h"
#include "core/reply_builder.h"
#include "core/string_util.h"
#include "server/command.h"
#include "shard/shard.h"

namespace shardis::server {

class ArgParser {
 public:
  // Starts at args[pos] (args[0] is the command name).
  explicit ArgParser(ArgSlice args, size_t pos = 1) : args_(args), pos_(pos) {}

  // True while arguments are left and no error was recorded.
  bool HasNext() const { return pos_ < args_.size() && error_.empty(); }
  size_t Remaining() const { return pos_ < args_.size() ? args_.size() - pos_ : 0; }
  size_t pos() const { return pos_; }

  // The next argument, not consumed ("" at the end).
  std::string_view Peek() const { return pos_ < args_.size() ? args_[pos_] : std::string_view(); }

  // Consumes the next argument when it is `word` (case-insensitive) and at least `operands`
  // arguments follow it: Redis' `!strcasecmp(opt, "count") && moreargs`, so that an option
  // missing its value falls through to the loop's syntax error.
  bool Check(std::string_view word, size_t operands = 0) {
    if (!HasNext() || Remaining() <= operands || !core::EqualsIgnoreCase(args_[pos_], word)) {
      return false;
    }
    ++pos_;
    return true;
  }

  // The next argument as it is; records a syntax error when none is left.
  std::string_view Next() {
    if (!HasNext()) {
      Fail(kSyntaxErr);
      return {};
    }
    return args_[pos_++];
  }

  // The next argument as a number, with Redis' error for a malformed one: int64_t as
  // getLongLongFromObject (kNotIntegerErr), double as getDoubleFromObject (kNotFloatErr).
  template <typename T>
  T Next();

  // The next argument as an integer, `error` for a malformed one (Redis'
  // getLongLongFromObjectOrReply with a message: "ERR Invalid client ID").
  int64_t NextInt64(std::string_view error) { return NextInRange(INT64_MIN, INT64_MAX, error); }

  // The next argument as an integer in [min, max], `error` for a malformed or out-of-range one
  // (Redis' getRangeLongFromObjectOrReply with a message: "ERR COUNT can't be negative").
  int64_t NextInRange(int64_t min, int64_t max, std::string_view error) {
    std::string_view arg = Next();
    int64_t v = 0;
    if (ok() && (!core::ParseInt64(arg, &v) || v < min || v > max)) Fail(error);
    return v;
  }

  // The next argument as a C int (Redis' getIntFromObjectOrReply): kNotIntegerErr when it is not
  // an integer, Redis' range message when it does not fit in 32 bits.
  int32_t NextInt32();

  // Records `error` unless an earlier one is recorded already (the first error is the reply).
  void Fail(std::string_view error) {
    if (error_.empty()) error_ = error;
  }

  bool ok() const { return error_.empty(); }
  std::string_view error() const { return error_; }

  // Replies the recorded error, if any; returns whether there was one.
  bool ReplyError(core::ReplyBuilder& rb) const {
    if (error_.empty()) return false;
    rb.Error(error_);
    return true;
  }

 private:
  template <typename T>
  T NextNumber(bool (*parse)(std::string_view, T*), std::string_view error) {
    std::string_view arg = Next();
    T v{};
    if (ok() && !parse(arg, &v)) Fail(error);
    return v;
  }

  ArgSlice args_;
  size_t pos_;
  // Empty while all is well: a std::string so that composed messages ("ERR Unsupported option
  // x") can be kept too; it allocates only on the error path.
  std::string error_;
};

template <>
inline int64_t ArgParser::Next<int64_t>() {
  return NextNumber<int64_t>(core::ParseInt64, kNotIntegerErr);
}

template <>
inline double ArgParser::Next<double>() {
  return NextNumber<double>(core::ParseDouble, kNotFloatErr);
}

inline int32_t ArgParser::NextInt32() {
  const int64_t v = Next<int64_t>();
  if (ok() && (v < INT32_MIN || v > INT32_MAX)) {
    Fail("ERR value is out of range, value must between -2147483648 and 2147483647");
  }
  return int32_t(v);
}

// A database index (SELECT, MOVE, COPY ... DB), as Redis reads it: an int, then in range.
inline int ReadDbIndex(ArgParser& p) {
  const int32_t db = p.NextInt32();
  if (p.ok() && (db < 0 || db >= shard::Shard::kNumDbs)) p.Fail("ERR DB index is out of range");
  return db;
}

}  // namespace shardis::server
