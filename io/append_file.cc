#include "io/append_file.h"

#include <fcntl.h>
#include <glog/logging.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "io/proactor.h"

namespace shardis::io {

namespace {

// Whether fd's file system takes direct I/O at kBlock's alignment (STATX_DIOALIGN: Linux 6.1+;
// tmpfs and older kernels do not report it, and are written through the page cache).
bool TakesDirectIo(int fd) {
  struct statx st {};
  if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &st) != 0) return false;
  if ((st.stx_mask & STATX_DIOALIGN) == 0 || st.stx_dio_offset_align == 0) return false;
  return st.stx_dio_offset_align <= AppendFile::kBlock &&
         AppendFile::kBlock % st.stx_dio_offset_align == 0 &&
         st.stx_dio_mem_align <= AppendFile::kBlock;
}

}  // namespace

AppendFile::AppendFile() {
  // Past the short-string optimisation, so that the bytes are on the heap, hence aligned.
  buf_.reserve(16 * kBlock);
}

AppendFile::~AppendFile() { Close(); }

void AppendFile::Reset(int fd, uint64_t size) {
  Close();
  fd_ = fd;
  direct_ = TakesDirectIo(fd);
  buf_start_ = size;
  written_ = size;
  if (!direct_) {
    LOG(INFO) << "The append-only file is written through the page cache: its file system does "
                 "not take direct I/O";
    return;
  }
  // A direct write starts on a block: the file's last partial block is written again, whole,
  // with the next one, so it goes in the buffer first.
  buf_start_ = size / kBlock * kBlock;
  buf_.resize(size - buf_start_);
  if (!buf_.empty()) {
    const int got = Proactor::current()->ReadAt(fd_, buf_.data(), buf_.size(), buf_start_);
    if (got != int(buf_.size())) {
      LOG(WARNING) << "can't read the append-only file's last block ("
                   << (got < 0 ? strerror(-got) : "short read")
                   << "): it is written through the page cache";
      direct_ = false;
      buf_.clear();
      buf_start_ = size;
    }
  }
}

void AppendFile::Close() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  direct_ = o_direct_ = false;
  buf_.clear();
  buf_start_ = written_ = 0;
}

int AppendFile::SetODirect(bool on) {
  if (o_direct_ == on) return 0;
  const int flags = fcntl(fd_, F_GETFL);
  if (flags < 0 || fcntl(fd_, F_SETFL, on ? flags | O_DIRECT : flags & ~O_DIRECT) != 0) {
    return -errno;
  }
  o_direct_ = on;
  return 0;
}

int AppendFile::Flush(bool sync, bool keep_tail) {
  Proactor* p = Proactor::current();
  // Whole blocks go straight to the device when there are enough of them; a few KiB are
  // quicker to copy into the page cache than to write apart.
  const size_t whole = buf_.size() / kBlock * kBlock;
  bool wrote_direct = false;
  if (direct_ && buf_start_ + whole >= written_ + kDirectMin) {
    DCHECK_EQ(reinterpret_cast<uintptr_t>(buf_.data()) % kBlock, 0u);
    int rc = SetODirect(true);
    if (rc == 0) rc = p->WriteAllAt(fd_, buf_.data(), whole, buf_start_);
    if (rc == -EINVAL) {
      // The file system refused what statx said it takes: go on through the page cache.
      LOG(WARNING) << "direct I/O to the append-only file failed: " << strerror(-rc)
                   << "; it is written through the page cache from now on";
      direct_ = false;
    } else if (rc < 0) {
      return rc;
    } else {
      written_ = buf_start_ + whole;
      wrote_direct = true;
    }
  }
  // The rest through the page cache, at its exact offset: the file's size is its bytes'. Unless
  // the caller keeps the tail of a direct round for the next one.
  if (!(wrote_direct && keep_tail && !sync)) {
    const size_t from = size_t(written_ - buf_start_);
    const size_t len = buf_.size() - from;
    int rc = len > 0 || sync ? SetODirect(false) : 0;
    if (rc == 0 && len > 0) {
      rc = sync ? p->WriteAtAndSync(fd_, buf_.data() + from, len, written_)
                : p->WriteAllAt(fd_, buf_.data() + from, len, written_);
    } else if (rc == 0 && sync) {
      rc = p->Fsync(fd_);
    }
    if (rc < 0) return rc;
    written_ = size();
  }
  // What is written leaves the buffer; with direct I/O, whole blocks only: the partial last one
  // is written again, whole, with the next direct write.
  size_t done = size_t(written_ - buf_start_);
  if (direct_) done = done / kBlock * kBlock;
  buf_.erase(0, done);
  buf_start_ += done;
  return 0;
}

void AppendFile::DropUnwritten() { buf_.resize(size_t(written_ - buf_start_)); }

}  // namespace shardis::io
