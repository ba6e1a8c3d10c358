// The AOF command stream against Redis 7.0's loadSingleAppendOnlyFile: what loads, where a short
// file is cut (aof-load-truncated), what is a bad format, and that hostile bytes neither crash the
// reader nor make it allocate what the file does not hold.
#include "core/aof_reader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace shardis::core {
namespace {

// Hands out the data a few bytes at a time, to cross the reader's buffer at every position.
class ChunkedSource : public RdbSource {
 public:
  ChunkedSource(std::string_view data, size_t chunk) : data_(data), chunk_(chunk) {}
  absl::StatusOr<size_t> Read(char* dst, size_t n) override {
    const size_t k = std::min({n, chunk_, data_.size() - pos_});
    std::copy_n(data_.data() + pos_, k, dst);
    pos_ += k;
    return k;
  }

 private:
  std::string_view data_;
  size_t chunk_;
  size_t pos_ = 0;
};

class FailingSource : public RdbSource {
 public:
  absl::StatusOr<size_t> Read(char*, size_t) override {
    return absl::InternalError("disk on fire");
  }
};

struct Outcome {
  std::vector<AofCommand> commands;
  absl::Status status;  // a format or I/O error
  AofReader::End end = AofReader::End::kClean;
  uint64_t valid_up_to = 0;
  std::string truncation;
};

Outcome ReadAll(std::string_view data, size_t chunk = 1 << 20, uint64_t start = 0) {
  ChunkedSource source(data, chunk);
  AofReader reader(&source, start);
  Outcome out;
  while (true) {
    AofCommand cmd;
    absl::StatusOr<bool> got = reader.Next(&cmd);
    if (!got.ok()) {
      out.status = got.status();
      return out;
    }
    if (!*got) break;
    out.commands.push_back(std::move(cmd));
  }
  out.end = reader.end();
  out.valid_up_to = reader.valid_up_to();
  out.truncation = reader.truncation();
  return out;
}

std::string Cmd(std::vector<std::string> args) {
  std::string out;
  AppendRespCommand(&out, args);
  return out;
}

using Args = std::vector<std::string>;

TEST(AofWriter, RespCommand) {
  EXPECT_EQ(Cmd({"SET", "k", "v"}), "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n");
  EXPECT_EQ(Cmd({"SET", "", std::string("a\r\n\0b", 5)}),
            std::string("*3\r\n$3\r\nSET\r\n$0\r\n\r\n$5\r\na\r\n\0b\r\n", 30));
  std::string out = "x";
  const std::string_view views[] = {"DEL", "key"};
  AppendRespCommand(&out, views);
  EXPECT_EQ(out, "x*2\r\n$3\r\nDEL\r\n$3\r\nkey\r\n");
  // Counts and lengths of several digits; the reader gives back what was written.
  Args many(12, "");
  many[0] = "RPUSH";
  many[11] = std::string(12345, 'z');
  out = Cmd(many);
  EXPECT_EQ(out.substr(0, 16), "*12\r\n$5\r\nRPUSH\r\n");
  EXPECT_NE(out.find("$12345\r\nzz"), std::string::npos);
  EXPECT_EQ(out.size(), 5 + 11 + 10 * 6 + 8 + 12345 + 2);
  out.clear();
  AppendAofTimestamp(&out, 1700000000);
  EXPECT_EQ(out, "#TS:1700000000\r\n");
}

TEST(AofReader, ReadsCommandsAndOffsets) {
  std::string data;
  AppendAofTimestamp(&data, 1700000000);
  const uint64_t first = data.size();
  data += Cmd({"SELECT", "0"});
  const uint64_t second = data.size();
  data += Cmd({"SET", "k", std::string("v\r\n\0", 4)});
  data += Cmd({"SET", "big", std::string(200000, 'x')});  // longer than the reader's buffer
  AppendAofTimestamp(&data, 1700000001);
  for (size_t chunk : {size_t{1}, size_t{3}, size_t{1} << 20}) {
    Outcome o = ReadAll(data, chunk);
    ASSERT_TRUE(o.status.ok()) << o.status;
    ASSERT_EQ(o.commands.size(), 3u);
    EXPECT_EQ(o.commands[0].args, (Args{"SELECT", "0"}));
    EXPECT_EQ(o.commands[0].offset, first);
    EXPECT_EQ(o.commands[1].args, (Args{"SET", "k", std::string("v\r\n\0", 4)}));
    EXPECT_EQ(o.commands[1].offset, second);
    EXPECT_EQ(o.commands[2].args[2].size(), 200000u);
    EXPECT_EQ(o.end, AofReader::End::kClean);
    EXPECT_EQ(o.valid_up_to, data.size());
  }
}

TEST(AofReader, EmptyAndAnnotationsOnly) {
  Outcome o = ReadAll("");
  EXPECT_TRUE(o.status.ok());
  EXPECT_TRUE(o.commands.empty());
  EXPECT_EQ(o.end, AofReader::End::kClean);
  EXPECT_EQ(o.valid_up_to, 0u);
  // An annotation cut short at the end is still skipped.
  o = ReadAll("#TS:1\r\n#anything at all\n#TS:17");
  EXPECT_TRUE(o.status.ok());
  EXPECT_TRUE(o.commands.empty());
  EXPECT_EQ(o.end, AofReader::End::kClean);
}

TEST(AofReader, StartOffset) {
  const std::string data = Cmd({"PING"}) + "*1\r\n$4\r\nPI";
  Outcome o = ReadAll(data, 1 << 20, 1000);
  ASSERT_TRUE(o.status.ok());
  ASSERT_EQ(o.commands.size(), 1u);
  EXPECT_EQ(o.commands[0].offset, 1000u);
  EXPECT_EQ(o.end, AofReader::End::kTruncated);
  EXPECT_EQ(o.valid_up_to, 1000 + Cmd({"PING"}).size());
  EXPECT_EQ(o.truncation, "at byte 1022: unexpected end of file reading a bulk string of 4 bytes");
  // Nothing complete: the cut is at the start of the tail, not at 0 (the RDB preamble stays).
  o = ReadAll("*1\r\n", 1 << 20, 500);
  EXPECT_EQ(o.end, AofReader::End::kTruncated);
  EXPECT_EQ(o.valid_up_to, 500u);
}

// Each prefix of a valid file is clean or truncated, never a bad format, and is cut where Redis
// cuts it.
TEST(AofReader, EveryPrefix) {
  struct Piece {
    std::string bytes;
    bool command;
  };
  std::string ts1, ts2;
  AppendAofTimestamp(&ts1, 1);
  AppendAofTimestamp(&ts2, 2);
  const std::vector<Piece> pieces = {
      {ts1, false},
      {Cmd({"SET", "k", "v"}), true},
      {Cmd({"multi"}), true},
      {ts2, false},
      {Cmd({"INCR", "n"}), true},
      {Cmd({"EXEC"}), true},
      {"#\r\n", false},
      {Cmd({"DEL", "k", ""}), true},
  };
  std::string data;
  for (const Piece& p : pieces) data += p.bytes;

  for (size_t len = 0; len <= data.size(); ++len) {
    SCOPED_TRACE(len);
    // The model: commands complete within the prefix, whether a MULTI is open, where the last
    // complete command ends and where the file was before the open MULTI.
    size_t at = 0, complete = 0;
    uint64_t last_end = 0, before_multi = 0;
    bool in_multi = false, partial_command = false;
    for (const Piece& p : pieces) {
      if (at >= len) break;
      const bool whole = at + p.bytes.size() <= len;
      if (p.command && !whole) partial_command = true;
      if (p.command && whole) {
        ++complete;
        if (p.bytes == Cmd({"multi"})) {
          in_multi = true;
          before_multi = last_end;
        }
        if (p.bytes == Cmd({"EXEC"})) in_multi = false;
        last_end = at + p.bytes.size();
      }
      at += p.bytes.size();
    }
    for (size_t chunk : {size_t{1}, size_t{1} << 20}) {
      Outcome o = ReadAll(std::string_view(data).substr(0, len), chunk);
      ASSERT_TRUE(o.status.ok()) << o.status;
      EXPECT_EQ(o.commands.size(), complete);
      if (!partial_command && !in_multi) {
        EXPECT_EQ(o.end, AofReader::End::kClean);
        EXPECT_EQ(o.valid_up_to, len);
      } else {
        EXPECT_EQ(o.end, AofReader::End::kTruncated);
        EXPECT_EQ(o.valid_up_to, in_multi ? before_multi : last_end);
      }
    }
  }
}

TEST(AofReader, OpenMultiIsTruncatedBeforeIt) {
  const std::string set = Cmd({"SET", "a", "1"});
  const std::string data = set + Cmd({"MULTI"}) + Cmd({"SET", "b", "2"});
  Outcome o = ReadAll(data);
  ASSERT_TRUE(o.status.ok());
  EXPECT_EQ(o.commands.size(), 3u);
  EXPECT_EQ(o.end, AofReader::End::kTruncated);
  EXPECT_EQ(o.valid_up_to, set.size());
  EXPECT_EQ(o.truncation, "at byte " + std::to_string(data.size()) +
                              ": unexpected end of file reading the EXEC of an open MULTI");
  // Cut inside a command of the open MULTI: also before the MULTI.
  o = ReadAll(data.substr(0, data.size() - 3));
  EXPECT_EQ(o.end, AofReader::End::kTruncated);
  EXPECT_EQ(o.valid_up_to, set.size());
  // Closed: clean.
  o = ReadAll(data + Cmd({"exec"}));
  EXPECT_EQ(o.end, AofReader::End::kClean);
}

// Bytes Redis' loader accepts although they are not canonical RESP.
TEST(AofReader, LenientLikeRedis) {
  Outcome o = ReadAll("*1 trailing\r\n$ 3xyz\r\nfoo??*2\n$0\n\r\n$-0\r\n\r\n");
  ASSERT_TRUE(o.status.ok()) << o.status;
  ASSERT_EQ(o.commands.size(), 2u);
  EXPECT_EQ(o.commands[0].args, (Args{"foo"}));
  EXPECT_EQ(o.commands[1].args, (Args{"", ""}));
  // "$abc" is a length of 0 for strtol.
  o = ReadAll("*1\r\n$abc\r\n\r\n");
  ASSERT_TRUE(o.status.ok()) << o.status;
  EXPECT_EQ(o.commands[0].args, (Args{""}));
  // atoi keeps the low 32 bits of the count: 2^32 + 1 is 1.
  o = ReadAll("*4294967297\r\n$1\r\nx\r\n");
  ASSERT_TRUE(o.status.ok()) << o.status;
  EXPECT_EQ(o.commands[0].args, (Args{"x"}));
}

TEST(AofReader, BadFormat) {
  struct Case {
    std::string data;
    std::string message;
  };
  const std::string ok = Cmd({"PING"});  // 14 bytes
  const std::string bad = "Bad file format reading the append only file: expected ";
  const std::vector<Case> cases = {
      {"x", "at byte 0: " + bad + "'*' or '#' at the start of a command, found \"x\""},
      {ok + "\r\n",
       "at byte 14: " + bad + "'*' or '#' at the start of a command, found \"\\r\\n\""},
      {ok + "*0\r\n", "at byte 14: " + bad + "an argument count of at least 1, found \"*0\\r\\n\""},
      {"*-1\r\n", "at byte 0: " + bad + "an argument count of at least 1, found \"*-1\\r\\n\""},
      {"*\r\n", "at byte 0: " + bad + "an argument count of at least 1, found \"*\\r\\n\""},
      {"*x\r\n", "at byte 0: " + bad + "an argument count of at least 1, found \"*x\\r\\n\""},
      {std::string("*\0\r\n", 4),
       "at byte 0: " + bad + "an argument count after '*', found \"*\\x00\\r\\n\""},
      {"*1\r\n:3\r\n",
       "at byte 4: " + bad + "'$' and the length of a bulk string, found \":3\\r\\n\""},
      {"*2\r\n$1\r\na\r\n\r\n",
       "at byte 11: " + bad + "'$' and the length of a bulk string, found \"\\r\\n\""},
      {"*1\r\n$-1\r\n",
       "at byte 4: " + bad + "a bulk string length of at least 0, found \"$-1\\r\\n\""},
      {"*1\r\n$-99999999999999999999999\r\n",
       "at byte 4: " + bad +
           "a bulk string length of at least 0, found \"$-99999999999999999999999\\r\\n\""},
      // The line buffer holds 1023 bytes: the rest of a longer annotation is the next "line".
      {"#" + std::string(1100, 'a') + "\r\n",
       "at byte 1023: " + bad + "'*' or '#' at the start of a command, found \"" +
           std::string(40, 'a') + "\"..."},
  };
  for (const Case& c : cases) {
    Outcome o = ReadAll(c.data);
    EXPECT_EQ(o.status.code(), absl::StatusCode::kDataLoss) << c.data;
    EXPECT_EQ(o.status.message(), c.message);
  }
  // Exactly 1023 bytes of annotation and its newline fit.
  Outcome o = ReadAll("#" + std::string(1021, 'a') + "\n" + ok);
  EXPECT_TRUE(o.status.ok()) << o.status;
  EXPECT_EQ(o.commands.size(), 1u);
}

TEST(AofReader, TruncationDetails) {
  EXPECT_EQ(ReadAll("*").truncation,
            "at byte 0: unexpected end of file reading the argument count of a command");
  EXPECT_EQ(ReadAll(std::string("*\0", 2)).end, AofReader::End::kTruncated);
  EXPECT_EQ(ReadAll("*2\r\n$1\r\na\r\n").truncation,
            "at byte 11: unexpected end of file reading the length of a bulk string");
  EXPECT_EQ(ReadAll("*1\r\n$1\r\na\r").truncation,
            "at byte 9: unexpected end of file reading the CRLF after a bulk string");
}

TEST(AofReader, HugeDeclaredLengthsAllocateNothingUpFront) {
  // Neither 2^62 bytes nor 2^31-1 arguments are reserved: the data ends first.
  Outcome o = ReadAll("*1\r\n$4611686018427387904\r\nabc");
  ASSERT_TRUE(o.status.ok()) << o.status;
  EXPECT_EQ(o.end, AofReader::End::kTruncated);
  EXPECT_EQ(o.valid_up_to, 0u);
  o = ReadAll("*1\r\n$9223372036854775807\r\nabc");  // strtol saturates here too
  EXPECT_EQ(o.end, AofReader::End::kTruncated);
  o = ReadAll("*2147483647\r\n$1\r\na\r\n");
  ASSERT_TRUE(o.status.ok()) << o.status;
  EXPECT_EQ(o.end, AofReader::End::kTruncated);
}

TEST(AofReader, IoErrorIsPassedOn) {
  FailingSource source;
  AofReader reader(&source);
  AofCommand cmd;
  absl::StatusOr<bool> got = reader.Next(&cmd);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInternal);
}

// Random single-byte changes and cuts of a valid file: any outcome but a crash, and the offsets
// stay within the data.
TEST(AofReader, CorruptedBytesNeverCrash) {
  std::string data;
  AppendAofTimestamp(&data, 1700000000);
  data += Cmd({"MULTI"}) + Cmd({"SET", "key", "value"}) + Cmd({"EXEC"});
  data += Cmd({"RPUSH", "list", "a", "bb", std::string(300, 'c')});
  std::mt19937 rng(42);
  const char interesting[] = {'*', '$', '#', '\r', '\n', '-', '0', '9', '\0', '\xff'};
  for (int i = 0; i < 3000; ++i) {
    std::string bad = data;
    const size_t at = rng() % bad.size();
    bad[at] = (rng() % 2) ? interesting[rng() % sizeof(interesting)] : static_cast<char>(rng());
    if (rng() % 4 == 0) bad.resize(rng() % bad.size());
    Outcome o = ReadAll(bad, 1 + rng() % 64);
    if (o.status.ok()) {
      EXPECT_LE(o.valid_up_to, bad.size());
      for (const AofCommand& c : o.commands) EXPECT_LT(c.offset, bad.size());
    } else {
      EXPECT_EQ(o.status.code(), absl::StatusCode::kDataLoss);
      EXPECT_NE(std::string(o.status.message()).find(kAofBadFormat), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace shardis::core
