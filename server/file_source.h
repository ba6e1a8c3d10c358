// FileSource: a file read through the thread's io_uring, as the byte source of the RDB and AOF
// readers (core/), so that loading never blocks the thread in read(2).
#pragma once

#include <absl/status/statusor.h>

#include <cstdint>
#include <cstring>

#include "core/rdb_encoding.h"
#include "core/string_util.h"
#include "io/proactor.h"

namespace shardis::server {

class FileSource : public core::RdbSource {
 public:
  explicit FileSource(int fd, uint64_t offset = 0) : fd_(fd), offset_(offset) {}
  absl::StatusOr<size_t> Read(char* dst, size_t n) override {
    const int got = io::Proactor::current()->ReadAt(fd_, dst, n, offset_);
    if (got < 0) return absl::InternalError(core::Concat("read error: ", strerror(-got)));
    offset_ += uint64_t(got);
    return size_t(got);
  }

 private:
  int fd_;
  uint64_t offset_;
};

}  // namespace shardis::server
