#include "server/client_buffers.h"

#include <gflags/gflags.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <vector>

#include "core/number.h"
#include "core/string_util.h"
#include "server/config_registry.h"
#include "server/server_state.h"
#include "shard/shard.h"

DEFINE_string(client_query_buffer_limit, "1gb",
              "a client whose unprocessed input exceeds this is closed (Redis' "
              "client-query-buffer-limit; bytes or 1mb, 1gb; at least 1mb)");
DEFINE_string(proto_max_bulk_len, "512mb",
              "the longest bulk string a request may carry (Redis' proto-max-bulk-len; at "
              "least 1mb)");
DEFINE_string(client_output_buffer_limit, "",
              "Redis' client-output-buffer-limit: '<class> <hard> <soft> <seconds>' for classes "
              "normal, pubsub, replica; empty: Redis' defaults (normal 0 0 0 replica 256mb 64mb "
              "60 pubsub 32mb 8mb 60)");

namespace shardis::server {

namespace {

constexpr int kClasses = 3;

// Redis' defaults (config.c): normal 0 0 0, replica 256mb 64mb 60, pubsub 32mb 8mb 60.
struct AtomicLimit {
  std::atomic<uint64_t> hard, soft;
  std::atomic<int64_t> soft_seconds;
};
AtomicLimit limits[kClasses] = {
    {0, 0, 0},
    {256 << 20, 64 << 20, 60},
    {32 << 20, 8 << 20, 60},
};

std::atomic<size_t> query_buffer_limit{size_t{1} << 30};  // Redis' 1gb
std::atomic<int64_t> proto_max_bulk_len{512 << 20};      // Redis' 512mb

// One class's limits as written in a CONFIG SET value.
struct ParsedLimit {
  ClientClass cls;
  OutputBufferLimit limit;
};

bool ParseClass(std::string_view name, ClientClass* cls) {
  // Redis' getClientTypeByName: "master" is a type, but not one with output limits.
  if (core::EqualsIgnoreCase(name, "normal")) {
    *cls = ClientClass::kNormal;
  } else if (core::EqualsIgnoreCase(name, "replica") || core::EqualsIgnoreCase(name, "slave")) {
    *cls = ClientClass::kReplica;
  } else if (core::EqualsIgnoreCase(name, "pubsub")) {
    *cls = ClientClass::kPubSub;
  } else {
    return false;
  }
  return true;
}

absl::Status Parse(std::string_view text, std::vector<ParsedLimit>* out) {
  std::vector<std::string_view> words;
  for (size_t i = 0; i < text.size();) {
    const size_t end = std::min(text.find(' ', i), text.size());
    if (end > i) words.push_back(text.substr(i, end - i));
    i = end + 1;
  }
  if (words.size() % 4 != 0) {
    return absl::InvalidArgumentError(
        "Wrong number of arguments in buffer limit configuration.");
  }
  for (size_t i = 0; i < words.size(); i += 4) {
    ParsedLimit p;
    if (!ParseClass(words[i], &p.cls)) {
      return absl::InvalidArgumentError(
          "Invalid client class specified in buffer limit configuration.");
    }
    absl::StatusOr<int64_t> hard = ParseMemory(words[i + 1]);
    absl::StatusOr<int64_t> soft = ParseMemory(words[i + 2]);
    int64_t seconds;
    if (!hard.ok() || !soft.ok() || !core::ParseInt64(words[i + 3], &seconds) || seconds < 0) {
      return absl::InvalidArgumentError(
          "Error in hard, soft or soft_seconds setting in buffer limit configuration.");
    }
    p.limit = {uint64_t(*hard), uint64_t(*soft), seconds};
    if (out != nullptr) out->push_back(p);
  }
  return absl::OkStatus();
}

// A config file names the directive once per class, each line setting the flag again: each value
// is applied as it is set (only the classes it names change), so that every line counts.
bool ApplyOutputBufferLimitFlag(const char*, const std::string& value) {
  if (!Parse(value, nullptr).ok()) return false;
  SetOutputBufferLimits(value);
  return true;
}

}  // namespace

DEFINE_validator(client_output_buffer_limit, ApplyOutputBufferLimitFlag);

OutputBufferLimit GetOutputBufferLimit(ClientClass c) {
  const AtomicLimit& l = limits[int(c)];
  return {l.hard.load(std::memory_order_relaxed), l.soft.load(std::memory_order_relaxed),
          l.soft_seconds.load(std::memory_order_relaxed)};
}

absl::Status ParseOutputBufferLimits(std::string_view text) { return Parse(text, nullptr); }

void SetOutputBufferLimits(std::string_view text) {
  std::vector<ParsedLimit> parsed;
  if (!Parse(text, &parsed).ok()) return;  // validated before
  // As Redis, only the classes named change. A reader may see one class half updated for a
  // moment; each figure is a limit on its own, so that is harmless.
  for (const ParsedLimit& p : parsed) {
    AtomicLimit& l = limits[int(p.cls)];
    l.hard.store(p.limit.hard, std::memory_order_relaxed);
    l.soft.store(p.limit.soft, std::memory_order_relaxed);
    l.soft_seconds.store(p.limit.soft_seconds, std::memory_order_relaxed);
  }
}

std::string FormatOutputBufferLimits() {
  // Redis 7 still shows the replica class under its old name.
  static constexpr std::string_view kNames[kClasses] = {"normal", "slave", "pubsub"};
  std::string out;
  for (int i = 0; i < kClasses; ++i) {
    const OutputBufferLimit l = GetOutputBufferLimit(ClientClass(i));
    core::Append(&out, i == 0 ? "" : " ", kNames[i], " ", l.hard, " ", l.soft, " ",
                 l.soft_seconds);
  }
  return out;
}

size_t QueryBufferLimit() { return query_buffer_limit.load(std::memory_order_relaxed); }
void SetQueryBufferLimit(size_t bytes) {
  query_buffer_limit.store(bytes, std::memory_order_relaxed);
}
int64_t ProtoMaxBulkLen() { return proto_max_bulk_len.load(std::memory_order_relaxed); }
void SetProtoMaxBulkLen(int64_t bytes) {
  proto_max_bulk_len.store(bytes, std::memory_order_relaxed);
}

namespace {

constexpr int kPeakSlots = 8;  // Redis' CLIENTS_PEAK_MEM_USAGE_SLOTS, one per second

struct PeakSlots {
  std::array<ClientBufferPeaks, kPeakSlots> slots{};
  int64_t second = -1;  // the second of the newest slot
};

thread_local PeakSlots tl_peaks;

}  // namespace

void SampleClientBufferPeaks() {
  PeakSlots& p = tl_peaks;
  const int64_t second = shard::NowMs() / 1000;
  if (second != p.second) {
    // Slots of the seconds that passed since the last sample start empty.
    const int64_t passed = p.second < 0 ? kPeakSlots : std::min<int64_t>(second - p.second,
                                                                        kPeakSlots);
    for (int64_t s = 1; s <= passed; ++s) p.slots[(p.second + s) % kPeakSlots] = {};
    p.second = second;
  }
  ClientBufferPeaks& slot = p.slots[second % kPeakSlots];
  for (ConnectionState* c : ServerThreadState::current().connections()) {
    if (c->push == nullptr) continue;
    const ClientBufferPeaks peaks = c->push->TakeBufferPeaks();
    slot.input = std::max(slot.input, peaks.input);
    slot.output = std::max(slot.output, peaks.output);
  }
}

void CloseClientsPastSoftOutputLimit() {
  for (ConnectionState* c : ServerThreadState::current().connections()) {
    if (c->push != nullptr) c->push->CheckSoftOutputLimit();
  }
}

ClientBufferPeaks RecentClientBufferPeaks() {
  ClientBufferPeaks max;
  for (const ClientBufferPeaks& s : tl_peaks.slots) {
    max.input = std::max(max.input, s.input);
    max.output = std::max(max.output, s.output);
  }
  return max;
}

}  // namespace shardis::server
