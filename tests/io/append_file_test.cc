#include "io/append_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>

#include "io/proactor.h"
#include "io/proactor_pool.h"

namespace shardis::io {
namespace {

// Bytes that tell their position: a misplaced block shows.
std::string Pattern(size_t at, size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = char('a' + (at + i) * 7 % 26);
  return s;
}

std::string FileContent(const std::string& path) {
  std::string text;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char buf[65536];
  for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) text.append(buf, size_t(n));
  close(fd);
  return text;
}

int OpenForAppend(const std::string& path, bool truncate) {
  return open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | (truncate ? O_TRUNC : 0), 0644);
}

// Appends pieces of every size, small ones (through the page cache) and large ones (whole
// blocks direct, the rest through the page cache), reopens the file at its unaligned end and goes
// on: after each Flush the file on disk is exactly what was appended, of that length.
void AppendsLandWhole(const std::string& dir, bool expect_direct) {
  const std::string path = dir + "/append_file_test_" + std::to_string(getpid());
  ProactorPool pool(1);
  ASSERT_TRUE(pool.Start().ok());
  pool.AwaitOn(0, [&](Proactor*) {
    AppendFile file;
    file.Reset(OpenForAppend(path, /*truncate=*/true), 0);
    EXPECT_EQ(file.direct(), expect_direct);
    std::string all;
    auto append = [&](size_t n) {
      const std::string piece = Pattern(all.size(), n);
      file.buffer()->append(piece);
      all += piece;
      EXPECT_EQ(file.size(), all.size());
      EXPECT_FALSE(file.all_written());
    };
    auto flush_and_check = [&](bool sync) {
      ASSERT_EQ(file.Flush(sync), 0);
      EXPECT_TRUE(file.all_written());
      EXPECT_EQ(file.written(), all.size());
      EXPECT_EQ(FileContent(path), all);
      // With direct I/O the buffer keeps the partial last block only.
      EXPECT_LT(file.buffer()->size(), expect_direct ? AppendFile::kBlock : 1);
    };
    append(100);
    flush_and_check(/*sync=*/false);
    append(10000);
    flush_and_check(false);
    append(200000);  // past kDirectMin: whole blocks direct, from the partial one written before
    flush_and_check(/*sync=*/true);
    append(3000);
    flush_and_check(true);
    ASSERT_EQ(file.Flush(/*sync=*/true), 0);  // nothing new: an fsync only
    append(AppendFile::kDirectMin * 3 + 17);
    flush_and_check(false);

    // Reopened at its unaligned end, as the AOF's last incr file is at start: with direct I/O
    // the partial last block is read back, to be written again whole.
    ASSERT_NE(all.size() % AppendFile::kBlock, 0u);
    file.Reset(OpenForAppend(path, /*truncate=*/false), all.size());
    EXPECT_EQ(file.size(), all.size());
    EXPECT_TRUE(file.all_written());
    append(AppendFile::kDirectMin * 2);
    flush_and_check(true);

    // keep_tail: a direct round leaves its partial last block for the next call, which writes
    // it (the file is then a block-aligned prefix of what was appended); a round that goes
    // through the page cache, or a sync, writes everything as before.
    append(AppendFile::kDirectMin + AppendFile::kBlock + 1000);
    ASSERT_EQ(file.Flush(/*sync=*/false, /*keep_tail=*/true), 0);
    if (expect_direct) {
      EXPECT_FALSE(file.all_written());
      EXPECT_EQ(file.written() % AppendFile::kBlock, 0u);
      EXPECT_EQ(file.size() - file.written(), all.size() % AppendFile::kBlock);
      EXPECT_EQ(FileContent(path), all.substr(0, file.written()));
    } else {
      EXPECT_TRUE(file.all_written());
    }
    append(10);  // a small round: all of it through the page cache, the kept tail included
    ASSERT_EQ(file.Flush(/*sync=*/false, /*keep_tail=*/true), 0);
    EXPECT_TRUE(file.all_written());
    EXPECT_EQ(FileContent(path), all);
    append(AppendFile::kDirectMin + AppendFile::kBlock + 3000);
    ASSERT_EQ(file.Flush(/*sync=*/false, /*keep_tail=*/true), 0);
    // The kept tail goes out, whole, with this direct round.
    append(AppendFile::kDirectMin + AppendFile::kBlock + 5);
    ASSERT_EQ(file.Flush(/*sync=*/false, /*keep_tail=*/true), 0);
    EXPECT_EQ(FileContent(path), all.substr(0, file.written()));
    flush_and_check(/*sync=*/true);

    // Dropped: what was not written (the AOF turned off after a failed write).
    const std::string kept = all;
    append(5000);
    file.DropUnwritten();
    all = kept;
    EXPECT_EQ(file.size(), all.size());
    append(1);
    flush_and_check(false);
  });
  pool.Stop();
  unlink(path.c_str());
}

bool TakesDirectIo(const std::string& dir) {
  const std::string path = dir + "/append_file_probe_" + std::to_string(getpid());
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  struct statx st {};
  const bool direct = statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &st) == 0 &&
                      (st.stx_mask & STATX_DIOALIGN) != 0 && st.stx_dio_offset_align != 0;
  close(fd);
  unlink(path.c_str());
  return direct;
}

TEST(AppendFileTest, DirectIoWhereTheFileSystemTakesIt) {
  // /tmp is ext4 here and on CI; elsewhere this runs the page-cache path.
  AppendsLandWhole("/tmp", TakesDirectIo("/tmp"));
}

TEST(AppendFileTest, PageCacheOnTmpfs) {
  AppendsLandWhole("/dev/shm", TakesDirectIo("/dev/shm"));
}

}  // namespace
}  // namespace shardis::io
