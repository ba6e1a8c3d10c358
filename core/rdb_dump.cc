#include "core/rdb_dump.h"

#include <algorithm>

#include "core/crc64.h"
#include "core/rdb_encoding.h"
#include "core/rdb_format.h"
#include "core/rdb_reader.h"
#include "core/rdb_writer.h"

namespace shardis::core {

namespace {
constexpr size_t kFooter = 10;  // version (2) + CRC64 (8)

void AppendFooter(std::string* out) {
  out->push_back(static_cast<char>(rdb::kVersion & 0xff));
  out->push_back(static_cast<char>(rdb::kVersion >> 8));
  const uint64_t crc = Crc64(0, *out);
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((crc >> (8 * i)) & 0xff));
}
}  // namespace

std::string CreateDumpPayload(const CompactValue& value, bool compression) {
  std::string out;
  out.push_back(static_cast<char>(RdbValueType(value)));
  AppendRdbValue(&out, value, compression);
  AppendFooter(&out);
  return out;
}

std::string CreateFunctionsDumpPayload(std::span<const std::string> codes, bool compression) {
  std::string out;
  for (const std::string& code : codes) {
    out.push_back(static_cast<char>(rdb::kOpFunction2));
    rdb::AppendString(&out, code, compression);
  }
  AppendFooter(&out);
  return out;
}

absl::Status DecodeFunctionsDumpPayload(std::string_view payload, std::vector<std::string>* codes,
                                        bool check_crc) {
  if (absl::Status s = VerifyDumpPayload(payload, check_crc); !s.ok()) return s;
  const std::string_view body = payload.substr(0, payload.size() - kFooter);
  StringSource source(body);
  RdbInput in(&source, body.size());
  codes->clear();
  while (in.offset() < body.size()) {
    uint8_t type = 0;
    if (!in.ReadByte(&type, "a type").ok()) {
      return absl::InvalidArgumentError("can not read data type");
    }
    // Redis 7.0's release candidates wrote another layout (RDB_OPCODE_FUNCTION): not taken.
    if (type != rdb::kOpFunction2) {
      return absl::InvalidArgumentError("given type is not a function");
    }
    std::string code;
    if (!in.ReadString(&code).ok()) {
      return absl::InvalidArgumentError("Failed loading library payload");
    }
    codes->push_back(std::move(code));
  }
  return absl::OkStatus();
}

absl::Status VerifyDumpPayload(std::string_view payload, bool check_crc) {
  const absl::Status wrong =
      absl::InvalidArgumentError("DUMP payload version or checksum are wrong");
  if (payload.size() < kFooter) return wrong;
  const auto* footer = reinterpret_cast<const unsigned char*>(payload.data()) +
                       payload.size() - kFooter;
  const int version = footer[0] | footer[1] << 8;
  if (version > rdb::kMaxReadVersion) return wrong;
  if (!check_crc) return absl::OkStatus();
  uint64_t crc = 0;
  for (int i = 0; i < 8; ++i) crc |= uint64_t(footer[2 + i]) << (8 * i);
  if (crc != Crc64(0, payload.substr(0, payload.size() - 8))) return wrong;
  return absl::OkStatus();
}

absl::Status DecodeDumpPayload(std::string_view payload, CompactValue* out, bool check_crc) {
  if (absl::Status s = VerifyDumpPayload(payload, check_crc); !s.ok()) return s;
  const std::string_view body = payload.substr(0, payload.size() - kFooter);
  const int version = static_cast<unsigned char>(payload[payload.size() - kFooter]) |
                      static_cast<unsigned char>(payload[payload.size() - kFooter + 1]) << 8;
  StringSource src(body);
  RdbInput in(&src, std::min(body.size(), RdbInput::kDefaultBufferSize));
  auto bad = [](std::string_view why) {
    return absl::InvalidArgumentError(rdb::Cat({"Bad data format: ", why}));
  };
  uint8_t type;
  if (absl::Status s = in.ReadByte(&type, "a type"); !s.ok()) return bad(std::string(s.message()));
  if (!IsRdbValueType(type)) return bad("unknown value type");
  bool empty = false;
  CompactValue value;
  if (absl::Status s = ReadRdbValue(in, type, version, &value, &empty); !s.ok()) {
    return bad(std::string(s.message()));
  }
  if (empty) return bad("empty collection");
  // Bytes after the value are ignored, as Redis' restoreCommand does (it reads one object from
  // the payload and does not look further): the checksum covers them.
  *out = std::move(value);
  return absl::OkStatus();
}

}  // namespace shardis::core
