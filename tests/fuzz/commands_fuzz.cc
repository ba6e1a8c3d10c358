// The command layer: a random stream of single-key commands (every command that runs on its
// key's shard, with arguments drawn from option words, numbers and short strings) against one
// in-process shard, run as the connection runs them (server::RunShardCommand, as the AOF loader
// does). After each command:
//   - the reply is exactly one well-formed RESP2 value, and an error starts with an upper-case
//     code word ("ERR", "WRONGTYPE", ...);
//   - the key's value, if there is one, DUMPs to a payload that RESTOREs to the same content
//     (which also refuses an empty collection left behind);
// and after the stream, with every database emptied, the shard's heap holds no block (no value
// leaked or double-counted).
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/reply_builder.h"
#include "core/shard_heap.h"
#include "server/command.h"
#include "shard/shard.h"
#include "tests/fuzz/dump_round_trip.h"

namespace shardis::fuzz {
namespace {

// Fixed clock: the same input runs the same way (a TTL given in the stream expires only by it).
constexpr int64_t kNowMs = 1'700'000'000'000;

// Arguments the commands' options and values are made of; the fuzzer mixes in its own bytes.
constexpr std::string_view kWords[] = {
    "NX", "XX", "GT", "LT", "CH", "INCR", "EX", "PX", "EXAT", "PXAT", "KEEPTTL", "PERSIST", "GET",
    "WITHSCORES", "WITHSCORE", "LIMIT", "COUNT", "MATCH", "TYPE", "BYSCORE", "BYLEX", "REV",
    "-inf", "+inf", "(1", "[a", "(a", "-", "+", "*", "$", ">", "0", "1", "-1", "2", "3", "10",
    "100", "1.5", "-2.5", "1e300", "nan", "inf", "9223372036854775807", "-9223372036854775808",
    "18446744073709551615", "4294967296", "MAXLEN", "MINID", "~", "=", "LEFT", "RIGHT", "BEFORE",
    "AFTER", "RANK", "SET", "INCRBY", "OVERFLOW", "WRAP", "SAT", "FAIL", "u8", "i16",
    "i64", "u63", "#1", "BIT", "BYTE", "IDX", "LEN", "WITHMATCHLEN", "MINMATCHLEN", "NOMKSTREAM",
    "JUSTID", "IDLE", "TIME", "RETRYCOUNT", "FORCE", "ENTRIESREAD", "MKSTREAM", "CREATE", "SETID",
    "DESTROY", "CREATECONSUMER", "DELCONSUMER", "CONSUMERS", "GROUPS", "STREAM", "FULL", "g", "c",
    "0-1", "1-1", "5-0", "a", "b", "v", "", "ENCODING", "FREQ", "IDLETIME", "REFCOUNT",
};
constexpr std::string_view kKeys[] = {"k", "l", "s"};

std::string NextArg(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange(0, 3)) {
    case 0:
    case 1:
      return std::string(kWords[in.ConsumeIntegralInRange<size_t>(0, std::size(kWords) - 1)]);
    case 2:
      return std::to_string(in.ConsumeIntegralInRange<int64_t>(-1000, 100000));
    default:
      return in.ConsumeRandomLengthString(24);
  }
}

// The length of the RESP2 value at reply[pos], or 0 if there is no whole, well-formed one.
size_t RespValueLength(std::string_view reply, size_t pos) {
  const size_t eol = reply.find("\r\n", pos);
  if (pos >= reply.size() || eol == std::string_view::npos) return 0;
  const std::string_view line = reply.substr(pos + 1, eol - pos - 1);
  const size_t after = eol + 2;
  const bool integer = line.size() > (line.starts_with('-') ? 1u : 0u) &&
                       line.find_first_not_of("0123456789", line.starts_with('-')) ==
                           std::string_view::npos;
  // A length or count: -1 (null) or a natural number; -2 for anything else.
  auto count = [&]() -> int64_t {
    if (!integer || line.size() > 12 || (line.starts_with('-') && line != "-1")) return -2;
    return std::stoll(std::string(line));
  };
  switch (reply[pos]) {
    case '+':
      return after - pos;
    case '-':
      return !line.empty() && line[0] >= 'A' && line[0] <= 'Z' ? after - pos : 0;
    case ':':
      return integer ? after - pos : 0;
    case '$': {
      const int64_t n = count();
      if (n == -1) return after - pos;
      if (n < 0 || after + size_t(n) + 2 > reply.size() ||
          reply.substr(after + size_t(n), 2) != "\r\n") {
        return 0;
      }
      return after + size_t(n) + 2 - pos;
    }
    case '*': {
      const int64_t n = count();
      if (n == -1) return after - pos;
      if (n < 0) return 0;
      size_t at = after;
      for (int64_t i = 0; i < n; ++i) {
        const size_t len = RespValueLength(reply, at);
        if (len == 0) return 0;
        at += len;
      }
      return at - pos;
    }
    default:
      return 0;
  }
}

void CheckValue(shard::Db& db, std::string_view key) {
  shard::Db::Iterator it = db.Find(key, core::HashBytes(key), kNowMs);
  if (shard::Db::Found(it)) CheckDumpRoundTrip(it.value());
}

// The commands that run on their key's shard, in name order (so that the same input picks the
// same commands in every run), and the shard they run on: one for the process, emptied after
// each input (making a shard with its 16 databases costs more than most inputs).
struct Harness {
  std::vector<const server::CommandSpec*> specs;
  shard::Shard* shard = nullptr;
};
Harness& TheHarness() {
  static Harness harness;
  return harness;
}

}  // namespace
}  // namespace shardis::fuzz

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  using namespace shardis;
  fuzz::Harness& h = fuzz::TheHarness();
  server::RegisterAllFamilies(&server::Registry());
  for (const auto& [name, spec] : server::Registry().all()) {
    if (spec.on_shard != nullptr) h.specs.push_back(&spec);
  }
  std::sort(h.specs.begin(), h.specs.end(), [](auto* a, auto* b) { return a->name < b->name; });
  h.shard = new shard::Shard(0);  // never freed: it lives as long as the process
  shard::Shard::set_current(h.shard);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardis;
  const fuzz::Harness& h = fuzz::TheHarness();
  shard::Shard& shard = *h.shard;
  shard::Db& db = shard.db(0);
  FuzzedDataProvider in(data, size);
  std::string reply;
  core::ReplyBuilder rb(&reply);
  for (int steps = 0; steps < 64 && in.remaining_bytes() > 0; ++steps) {
    const server::CommandSpec& spec =
        *h.specs[in.ConsumeIntegralInRange<size_t>(0, h.specs.size() - 1)];
    const size_t argc = spec.arity > 0 ? size_t(spec.arity)
                                       : size_t(-spec.arity) + in.ConsumeIntegralInRange(0, 6);
    std::vector<std::string> owned = {std::string(spec.name)};
    owned.push_back(std::string(fuzz::kKeys[in.ConsumeIntegralInRange<size_t>(0, 2)]));
    while (owned.size() < argc) owned.push_back(fuzz::NextArg(in));
    const std::vector<std::string_view> args(owned.begin(), owned.end());
    if (!server::RunsOnShard(spec, args)) continue;

    reply.clear();
    server::ShardContext ctx{shard, db, rb, fuzz::kNowMs, core::HashBytes(args[1])};
    server::RunShardCommand(spec, args, ctx);
    if (fuzz::RespValueLength(reply, 0) != reply.size()) abort();
    fuzz::CheckValue(db, args[1]);
  }
  for (int i = 0; i < shard::Shard::kNumDbs; ++i) shard.db(i).Clear();
  if (core::ShardHeap::Current()->live_blocks() != 0) abort();
  return 0;
}
