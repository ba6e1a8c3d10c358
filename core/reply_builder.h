// Serialises replies in RESP2 or RESP3 (after HELLO 3) by appending to a caller-owned string.

#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shardis::core {

// Appends to *output(); it never clears or shrinks it, so one string can collect the replies of a
// whole pipeline and be sent with one write. The builder keeps no other state than the protocol
// version, so it is cheap to create or to re-point with set_output() per reply slot.
// RESP3-only types are downgraded for RESP2 exactly as Redis 7.0 does.
class ReplyBuilder {
 public:
  explicit ReplyBuilder(std::string* out = nullptr) : out_(out) {}

  // Called with the message of every Error() reply, for error statistics (INFO errorstats). Set
  // once at start before any reply is built; it runs on whatever thread builds the reply.
  using ErrorObserver = void (*)(std::string_view msg);
  static void SetErrorObserver(ErrorObserver observer) { error_observer_ = observer; }

  void set_output(std::string* out) { out_ = out; }
  std::string* output() const { return out_; }
  void set_resp3(bool v) { resp3_ = v; }
  bool resp3() const { return resp3_; }

  void SimpleString(std::string_view s);  // "+s"; s must not contain CR or LF
  void Ok();                              // "+OK"
  // "-msg". The caller supplies the error code word ("ERR ...", "WRONGTYPE ..."). CR/LF at the
  // ends are trimmed and inner ones become spaces (Redis' addReplyErrorFormat), so a message
  // that quotes client input cannot break the framing.
  void Error(std::string_view msg);
  // Error() that the error observer does not see: an error already counted where it was raised
  // (a script failing with the error of a command it ran), or to be counted later.
  void UncountedError(std::string_view msg);
  void Integer(int64_t v);        // ":v"
  void Bulk(std::string_view s);  // "$len" CRLF s
  void Null();                    // RESP2 "$-1", RESP3 "_"
  void NullArray();               // RESP2 "*-1", RESP3 "_"
  void ArrayHeader(size_t n);     // "*n"
  void MapHeader(size_t n);       // RESP3 "%n"; RESP2 "*2n" (flat key, value, key, value...)
  void SetHeader(size_t n);       // RESP3 "~n"; RESP2 "*n"
  void PushHeader(size_t n);      // RESP3 ">n"; RESP2 "*n"
  // RESP3 "|n" (n key/value pairs about the reply that follows). RESP2 has no attributes: the
  // caller writes none (neither header nor pairs), as Redis does.
  void AttributeHeader(size_t n);
  // Redis 7.2 addReplyDouble: the d2string text of d (FormatDouble: ZSCORE 0.1 -> "0.1", 3.0 ->
  // "3", "inf", "-inf", "nan"); RESP3 ",text", RESP2 a bulk string of it.
  void Double(double d);
  // Redis 7.0 addReplyHumanLongDouble (GEOPOS coordinates): the LD_STR_HUMAN text of d
  // (FormatLongDouble), RESP3 ",text", RESP2 a bulk string of it.
  void HumanLongDouble(long double d);
  void Bool(bool b);  // RESP3 "#t"/"#f"; RESP2 ":1"/":0"
  // RESP3 "(digits"; RESP2 a bulk string of them (a script's {big_number = ...}).
  void BigNumber(std::string_view digits);
  // RESP3 "=len" CRLF "txt:s"; RESP2 a plain bulk of s. type must be exactly 3 characters.
  void Verbatim(std::string_view s, std::string_view type = "txt");
  void BulkArray(const std::vector<std::string_view>& items);  // "*n" then n bulks

 private:
  // One append of prefix, decimal n and CRLF: the shape of every header and of integers.
  void Line(char prefix, int64_t n);

  inline static ErrorObserver error_observer_ = nullptr;

  std::string* out_;
  bool resp3_ = false;
};

}  // namespace shardis::core
