// AppendFile: a file that one fiber appends to through its thread's io_uring (the AOF's incr
// file, docs/persistence.md "How the journal is written").
//
// Where the file system takes direct I/O (statx's STATX_DIOALIGN: ext4, xfs), whole 4 KiB blocks
// go from the buffer to the device with O_DIRECT: no kernel worker copies them into the page
// cache, and the kernel's writeback has no dirty pages of ours to write out later. The last,
// bytes past the last whole block go through the page cache at their exact offset, so that the
// file's size is always the length of the bytes written and its content what was appended, as
// Redis' AOF is (every write reaches the file: a process that dies loses none, as with Redis'
// write(2) per event loop). That partial block stays in the buffer and is written again, whole,
// with the next direct write. A write of less than kDirectMin bytes goes through the page cache
// whole: a copy of a few KiB costs less than a direct write besides (and group commit's small
// rounds get one linked write and fdatasync). Where the file system does not take direct I/O
// (tmpfs), every write goes through the page cache.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/aligned_string.h"

namespace shardis::io {

class AppendFile {
 public:
  // The alignment of direct writes: their offsets, lengths and memory (statx gives a file
  // system's own, 512 on ext4 here: a page is a multiple of any of them and keeps ext4 from
  // serializing unaligned direct writes).
  static constexpr size_t kBlock = core::kPageAlign;
  // Fewer unwritten bytes than this go through the page cache whole.
  static constexpr size_t kDirectMin = 64 << 10;

  AppendFile();
  ~AppendFile();
  AppendFile(const AppendFile&) = delete;
  AppendFile& operator=(const AppendFile&) = delete;

  // Takes fd (closing the one it had), a file open for writing whose current size is `size`,
  // appended to from there; finds out whether it takes direct I/O (the log says when not). Call
  // from a fiber of a Proactor: with direct I/O it reads the file's last partial block. Every
  // byte appended to the previous file must have been written (Flush).
  void Reset(int fd, uint64_t size);
  // Closes the file; bytes appended and not written are dropped.
  void Close();
  int fd() const { return fd_; }
  bool direct() const { return direct_; }

  // Where the caller appends the bytes to write. Do not shrink it or swap it out: its memory
  // must stay page-aligned (core/aligned_string.h).
  core::PageAlignedString* buffer() { return &buf_; }
  // The file's length once everything appended is written.
  uint64_t size() const { return buf_start_ + buf_.size(); }
  // The length of the file on disk: a prefix of size().
  uint64_t written() const { return written_; }
  bool all_written() const { return written_ == size(); }

  // Writes everything appended, then fdatasyncs the file when `sync`, from a fiber of the
  // Proactor. Returns 0 or -errno; on an error nothing appended is lost: the next call writes
  // from the same place. With `keep_tail` (and not `sync`), a round that goes to the device
  // with direct I/O leaves its last partial block unwritten, for the next call: written through
  // the page cache, that block would have to be written back and dropped from the cache before
  // the next direct write over it, two more I/Os a round (the caller, which knows that more is
  // coming, calls again without it when it is idle).
  int Flush(bool sync, bool keep_tail = false);
  // The bytes appended and not written are dropped (the AOF turned off after a failed write).
  void DropUnwritten();

 private:
  // Turns O_DIRECT on or off on fd_ (one fd, so that every write goes to the same open file).
  int SetODirect(bool on);

  int fd_ = -1;
  bool direct_ = false;      // the file system takes direct I/O on this file
  bool o_direct_ = false;    // O_DIRECT is set on fd_ now
  core::PageAlignedString buf_;  // the file's bytes from buf_start_ on
  uint64_t buf_start_ = 0;   // a multiple of kBlock with direct I/O
  uint64_t written_ = 0;     // the bytes on the file: buf_start_ <= written_ <= size()
};

}  // namespace shardis::io
