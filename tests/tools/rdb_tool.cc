// rdb_tool: the core RDB codec on files, for the interop test with redis-server (test-only, not
// installed).
//   rdb_tool dump FILE              every key as one JSON line: db, key, expire_ms, idle, freq,
//                                   type, encoding (shardis' at load), value (value_json.h)
//   rdb_tool rewrite IN OUT [--no-compression] [--no-checksum]
//                                   reads IN and writes its keys to OUT with the core writer
//   rdb_tool check FILE             reads FILE, prints "ok <keys>" or the error
//   rdb_tool payloads FILE          every key's DUMP payload (the core's) as a JSON line:
//                                   db, key, payload in hex
//   rdb_tool decode-payloads        reads DUMP payloads in hex, one a line, from stdin, prints
//                                   each value's JSON (or {"error": ...}) on its own line
// Exit status 0 on success, 1 with the reader's error on stderr.
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/rdb_dump.h"
#include "core/rdb_reader.h"
#include "core/rdb_writer.h"
#include "tests/tools/value_json.h"

namespace {

using namespace shardis;

bool ReadFile(const char* path, std::string* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  *out = ss.str();
  return true;
}

int Fail(const std::string& msg) {
  std::cerr << "rdb_tool: " << msg << "\n";
  return 1;
}

// Reads every key of a file (in memory: a test tool).
int ReadAll(const char* path, std::vector<core::RdbEntry>* entries, core::RdbAuxFields* aux) {
  std::string data;
  if (!ReadFile(path, &data)) return Fail(std::string("cannot read ") + path);
  core::StringSource src(data);
  core::RdbReader reader(&src);
  if (absl::Status s = reader.ReadHeader(); !s.ok()) return Fail(std::string(s.message()));
  while (true) {
    core::RdbEntry e;
    absl::StatusOr<bool> more = reader.Next(&e);
    if (!more.ok()) return Fail(std::string(more.status().message()));
    if (!*more) break;
    entries->push_back(std::move(e));
  }
  if (aux != nullptr) *aux = reader.aux();
  return 0;
}

int Dump(const char* path) {
  std::vector<core::RdbEntry> entries;
  if (int rc = ReadAll(path, &entries, nullptr); rc != 0) return rc;
  for (const core::RdbEntry& e : entries) {
    std::string line = "{\"db\":" + std::to_string(e.db) + ",\"key\":" + tools::JsonString(e.key) +
                       ",\"expire_ms\":" + std::to_string(e.expire_ms) +
                       ",\"idle\":" + std::to_string(e.idle_seconds) +
                       ",\"freq\":" + std::to_string(e.freq) + ",";
    line += tools::ValueJson(e.value).substr(1);
    std::cout << line << "\n";
  }
  return 0;
}

std::string HexOf(std::string_view s) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

std::string BytesOf(std::string_view hex) {
  auto nibble = [](char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; };
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(nibble(hex[i]) << 4 | nibble(hex[i + 1])));
  }
  return out;
}

int Payloads(const char* path) {
  std::vector<core::RdbEntry> entries;
  if (int rc = ReadAll(path, &entries, nullptr); rc != 0) return rc;
  for (const core::RdbEntry& e : entries) {
    std::cout << "{\"db\":" << e.db << ",\"key\":" << tools::JsonString(e.key)
              << ",\"payload\":\"" << HexOf(core::CreateDumpPayload(e.value)) << "\"}\n";
  }
  return 0;
}

int DecodePayloads() {
  std::string line;
  while (std::getline(std::cin, line)) {
    core::CompactValue v;
    absl::Status s = core::DecodeDumpPayload(BytesOf(line), &v);
    if (s.ok()) {
      std::cout << tools::ValueJson(v) << "\n";
    } else {
      std::cout << "{\"error\":" << tools::JsonString(std::string(s.message())) << "}\n";
    }
  }
  return 0;
}

int Rewrite(const char* in, const char* out, core::RdbSaveOptions options) {
  std::vector<core::RdbEntry> entries;
  if (int rc = ReadAll(in, &entries, nullptr); rc != 0) return rc;
  std::map<uint32_t, std::vector<const core::RdbEntry*>> by_db;
  for (const core::RdbEntry& e : entries) by_db[e.db].push_back(&e);
  core::StringSink sink;
  core::RdbWriter writer(&sink, options);
  absl::Status s = writer.WriteHeader(core::StandardRdbAux("7.0.15", time(nullptr), 0));
  for (const auto& [db, keys] : by_db) {
    uint64_t expires = 0;
    for (const core::RdbEntry* e : keys) expires += e->expire_ms >= 0;
    if (s.ok()) s = writer.SelectDb(db, keys.size(), expires);
    for (const core::RdbEntry* e : keys) {
      core::RdbKeyMeta meta{e->expire_ms, e->idle_seconds, e->freq};
      if (s.ok()) s = writer.WriteKey(e->key, e->value, meta);
    }
  }
  if (s.ok()) s = writer.Finish();
  if (!s.ok()) return Fail(std::string(s.message()));
  std::ofstream f(out, std::ios::binary);
  f.write(sink.data().data(), static_cast<std::streamsize>(sink.data().size()));
  if (!f) return Fail(std::string("cannot write ") + out);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::strcmp(argv[1], "dump") == 0) return Dump(argv[2]);
  if (argc >= 3 && std::strcmp(argv[1], "check") == 0) {
    std::vector<core::RdbEntry> entries;
    if (int rc = ReadAll(argv[2], &entries, nullptr); rc != 0) return rc;
    std::cout << "ok " << entries.size() << "\n";
    return 0;
  }
  if (argc >= 3 && std::strcmp(argv[1], "payloads") == 0) return Payloads(argv[2]);
  if (argc >= 2 && std::strcmp(argv[1], "decode-payloads") == 0) return DecodePayloads();
  if (argc >= 4 && std::strcmp(argv[1], "rewrite") == 0) {
    core::RdbSaveOptions options;
    for (int i = 4; i < argc; ++i) {
      if (std::strcmp(argv[i], "--no-compression") == 0) options.compression = false;
      if (std::strcmp(argv[i], "--no-checksum") == 0) options.checksum = false;
    }
    return Rewrite(argv[2], argv[3], options);
  }
  std::cerr << "usage: rdb_tool dump FILE | check FILE | rewrite IN OUT [--no-compression] "
               "[--no-checksum] | payloads FILE | decode-payloads\n";
  return 2;
}
