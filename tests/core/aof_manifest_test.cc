// The multi-part AOF manifest against the rules and texts of Redis 7.0's aofLoadManifestFromFile
// and getAofManifestAsString, and the file names of aof.c.
#include "core/aof_manifest.h"

#include <gtest/gtest.h>

#include <string>

namespace shardis::core {
namespace {

using Type = AofFileInfo::Type;

// The error text of parsing `text`, or "ok".
std::string Error(std::string_view text) {
  absl::StatusOr<AofManifest> m = ParseAofManifest(text);
  return m.ok() ? "ok" : std::string(m.status().message());
}

TEST(AofManifest, ParsesRedisExample) {
  // The example in Redis' aof.c.
  const std::string text =
      "file appendonly.aof.2.base.rdb seq 2 type b\n"
      "file appendonly.aof.1.incr.aof seq 1 type h\n"
      "file appendonly.aof.2.incr.aof seq 2 type h\n"
      "file appendonly.aof.3.incr.aof seq 3 type h\n"
      "file appendonly.aof.4.incr.aof seq 4 type i\n"
      "file appendonly.aof.5.incr.aof seq 5 type i\n";
  absl::StatusOr<AofManifest> m = ParseAofManifest(text);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_TRUE(m->base.has_value());
  EXPECT_EQ(*m->base, (AofFileInfo{"appendonly.aof.2.base.rdb", 2, Type::kBase}));
  ASSERT_EQ(m->history.size(), 3u);
  EXPECT_EQ(m->history[2], (AofFileInfo{"appendonly.aof.3.incr.aof", 3, Type::kHistory}));
  ASSERT_EQ(m->incrs.size(), 2u);
  EXPECT_EQ(m->incrs[0], (AofFileInfo{"appendonly.aof.4.incr.aof", 4, Type::kIncr}));
  EXPECT_EQ(m->current_base_seq, 2);
  EXPECT_EQ(m->current_incr_seq, 5);
  EXPECT_EQ(FormatAofManifest(*m), text);
}

TEST(AofManifest, FormatOrderIsBaseHistoryIncr) {
  AofManifest m;
  m.incrs.push_back({"appendonly.aof.3.incr.aof", 3, Type::kIncr});
  m.history.push_back({"appendonly.aof.1.base.rdb", 1, Type::kHistory});
  m.base = AofFileInfo{"appendonly.aof.2.base.aof", 2, Type::kBase};
  EXPECT_EQ(FormatAofManifest(m),
            "file appendonly.aof.2.base.aof seq 2 type b\n"
            "file appendonly.aof.1.base.rdb seq 1 type h\n"
            "file appendonly.aof.3.incr.aof seq 3 type i\n");
  EXPECT_EQ(FormatAofManifest(AofManifest{}), "");
}

TEST(AofManifest, KeysInAnyOrderAnyCaseUnknownIgnored) {
  absl::StatusOr<AofManifest> m = ParseAofManifest(
      "  TYPE i SEQ 7 File a.aof  \r\n"
      "seq 8 future x type incr file b.aof\n"  // type: the first character
      "\tfile c seq 9 type i\t\n");
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->incrs.size(), 3u);
  EXPECT_EQ(m->incrs[0], (AofFileInfo{"a.aof", 7, Type::kIncr}));
  EXPECT_EQ(m->incrs[1], (AofFileInfo{"b.aof", 8, Type::kIncr}));
  EXPECT_EQ(m->incrs[2].name, "c");
  EXPECT_EQ(m->current_incr_seq, 9);
  EXPECT_FALSE(m->base.has_value());
  // A key given twice: the later value wins, but a path is refused where it stands.
  m = ParseAofManifest("file a seq 1 file b type i\n");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->incrs[0].name, "b");
  EXPECT_EQ(Error("file x/a seq 1 file b type i\n"),
            "at line 1: File can't be a path, just a filename");
}

TEST(AofManifest, SeqIsReadLikeAtoll) {
  absl::StatusOr<AofManifest> m =
      ParseAofManifest("file a seq 12abc type h\nfile b seq -3 type h\nfile c seq +4 type b\n");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->history[0].seq, 12);
  EXPECT_EQ(m->history[1].seq, -3);
  EXPECT_EQ(m->base->seq, 4);
  m = ParseAofManifest("file a seq 99999999999999999999 type i\n");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->incrs[0].seq, INT64_MAX);
}

TEST(AofManifest, CommentLines) {
  absl::StatusOr<AofManifest> m = ParseAofManifest("# hello\nfile a seq 1 type i\n#x");
  ASSERT_TRUE(m.ok()) << m.status();  // a comment needs no newline: it is skipped first
  EXPECT_EQ(m->incrs.size(), 1u);
  m = ParseAofManifest("# only a comment\n");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(*m, AofManifest{});
}

TEST(AofManifest, Errors) {
  EXPECT_EQ(Error(""), "Found an empty AOF manifest");
  EXPECT_EQ(Error("file a seq 1 type i"),
            "at line 1: The AOF manifest file contains too long line");
  EXPECT_EQ(Error("file a seq 1 type i\nfile b seq 2 type i"),
            "at line 2: The AOF manifest file contains too long line");
  // A blank line, too few or an odd number of words, bad quotes, a missing or zero key.
  for (std::string_view text :
       {"\n", " \t\r\n", "file a seq 1\n", "file a seq 1 type i x\n", "file \"a seq 1 type i\n",
        "file \"a\"b seq 1 type i\n", "name a seq 1 type i\n", "file a seq 0 type i\n",
        "file a seq x type i\n", "file a seq 1 type \"\"\n"}) {
    EXPECT_EQ(Error(text), "at line 1: Invalid AOF manifest file format") << text;
  }
  EXPECT_EQ(Error("file a seq 1 type i\n\n"), "at line 2: Invalid AOF manifest file format");
  EXPECT_EQ(Error("file a seq 1 type x\n"), "at line 1: Unknown AOF file type");
  EXPECT_EQ(Error("file dir/a seq 1 type i\n"), "at line 1: File can't be a path, just a filename");
  EXPECT_EQ(Error("file dir\\\\a seq 1 type i\n"),
            "at line 1: File can't be a path, just a filename");
  EXPECT_EQ(Error("file a seq 1 type b\nfile b seq 2 type b\n"),
            "at line 2: Found duplicate base file information");
  EXPECT_EQ(Error("file a seq 2 type i\nfile b seq 2 type i\n"),
            "at line 2: Found a non-monotonic sequence number");
  EXPECT_EQ(Error("file a seq -1 type i\n"), "at line 1: Found a non-monotonic sequence number");
  // History and base seqs are not ordered.
  EXPECT_EQ(Error("file a seq 5 type h\nfile b seq 2 type h\nfile c seq 1 type b\n"), "ok");
}

TEST(AofManifest, LongLines) {
  // 1023 bytes and the newline fit Redis' buffer; one byte more does not.
  const std::string name(1023 - std::string("file  seq 1 type i").size(), 'x');
  EXPECT_EQ(Error("file " + name + " seq 1 type i\n"), "ok");
  EXPECT_EQ(Error("file " + name + "y seq 1 type i\n"),
            "at line 1: The AOF manifest file contains too long line");
  // A long comment is read in pieces: the second one is not a comment.
  EXPECT_EQ(Error("#" + std::string(1023, 'c') + "\nfile a seq 1 type i\n"),
            "at line 2: Invalid AOF manifest file format");
  EXPECT_EQ(Error("#" + std::string(1023, 'c') + "#\nfile a seq 1 type i\n"), "ok");
  // A NUL ends the line for Redis: the newline after it is not seen.
  EXPECT_EQ(Error(std::string("file a seq 1 type i\0\n", 21)),
            "at line 1: The AOF manifest file contains too long line");
}

TEST(AofManifest, QuotedNamesRoundTrip) {
  for (std::string name : {"with space", "quote\"s", "tab\there", "nl\ncr\r",
                           "bell\a\bbs", "high\xff\x01", "*star", "ok.aof"}) {
    AofManifest m;
    m.incrs.push_back({name, 1, Type::kIncr});
    m.current_incr_seq = 1;
    const std::string text = FormatAofManifest(m);
    absl::StatusOr<AofManifest> back = ParseAofManifest(text);
    ASSERT_TRUE(back.ok()) << back.status() << " for " << text;
    EXPECT_EQ(*back, m) << text;
  }
  AofManifest m;
  m.base = AofFileInfo{"a b\"\xff", 1, Type::kBase};
  EXPECT_EQ(FormatAofManifest(m), "file \"a b\\\"\\xff\" seq 1 type b\n");
  // Redis' quirk, kept: sdsneedsrepr does not quote a name in single quotes, which then reads
  // back without them.
  m = AofManifest{};
  m.incrs.push_back({"'single'", 1, Type::kIncr});
  EXPECT_EQ(FormatAofManifest(m), "file 'single' seq 1 type i\n");
  absl::StatusOr<AofManifest> p = ParseAofManifest(FormatAofManifest(m));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->incrs[0].name, "single");
  // Single quotes and quotes mid-word, as sdssplitargs reads them.
  p = ParseAofManifest("file 'it\\'s' seq 1 type i\n");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->incrs[0].name, "it's");
  p = ParseAofManifest("file a\"b c\" seq 1 type i\n");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->incrs[0].name, "ab c");
}

TEST(AofManifest, FileNames) {
  EXPECT_EQ(AofManifestName("appendonly.aof"), "appendonly.aof.manifest");
  EXPECT_EQ(AofTempManifestName("appendonly.aof"), "temp-appendonly.aof.manifest");
  EXPECT_EQ(AofBaseName("appendonly.aof", 1, true), "appendonly.aof.1.base.rdb");
  EXPECT_EQ(AofBaseName("appendonly.aof", 12, false), "appendonly.aof.12.base.aof");
  EXPECT_EQ(AofIncrName("appendonly.aof", 1), "appendonly.aof.1.incr.aof");
}

TEST(AofManifest, RewriteSteps) {
  // A fresh start, then two rewrites, as Redis' manifest evolves.
  AofManifest m;
  EXPECT_EQ(AddNewAofBase(&m, "appendonly.aof", true).name, "appendonly.aof.1.base.rdb");
  EXPECT_EQ(AddNewAofIncr(&m, "appendonly.aof").name, "appendonly.aof.1.incr.aof");
  EXPECT_EQ(FormatAofManifest(m),
            "file appendonly.aof.1.base.rdb seq 1 type b\n"
            "file appendonly.aof.1.incr.aof seq 1 type i\n");

  // Rewrite: a new incr file to write to, then the new base and the old files to history.
  AddNewAofIncr(&m, "appendonly.aof");
  AddNewAofBase(&m, "appendonly.aof", true);
  MarkRewrittenAofIncrsAsHistory(&m, /*keep_last=*/true);
  EXPECT_EQ(FormatAofManifest(m),
            "file appendonly.aof.2.base.rdb seq 2 type b\n"
            "file appendonly.aof.1.incr.aof seq 1 type h\n"
            "file appendonly.aof.1.base.rdb seq 1 type h\n"
            "file appendonly.aof.2.incr.aof seq 2 type i\n");
  absl::StatusOr<AofManifest> back = ParseAofManifest(FormatAofManifest(m));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, m);

  // With AOF off, every incr file becomes history.
  MarkRewrittenAofIncrsAsHistory(&m, /*keep_last=*/false);
  EXPECT_TRUE(m.incrs.empty());
  EXPECT_EQ(m.history.front().name, "appendonly.aof.2.incr.aof");
  EXPECT_EQ(m.current_incr_seq, 2);
}

}  // namespace
}  // namespace shardis::core
