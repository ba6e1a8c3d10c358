// InputBuffer: the receive buffer of an io::Stream. Bytes [parse_start, filled) are received but
// not yet consumed by the parser; each Read makes room for the request in progress and receives
// into the rest.
#pragma once

#include <cstddef>
#include <memory>

#include "io/proactor.h"

namespace shardis::io {

class InputBuffer {
 public:
  // Receives more bytes from fd. `needed`: how many bytes the parser knows the request in
  // progress takes in all (0 when unknown), so a large value arrives in one buffer. Returns the
  // bytes received, or <= 0 on EOF or error.
  int Read(Proactor* proactor, int fd, size_t needed);
  // Adds bytes received elsewhere (a multishot receive's buffer).
  void Append(const char* data, size_t n);
  // Makes room for `needed` bytes of unconsumed input in all, so that a request whose size the
  // parser knows arrives without the buffer growing step by step. Moves the unconsumed bytes:
  // nothing may point into the buffer.
  void Reserve(size_t needed) { MakeRoom(needed); }
  // Bytes made here rather than received (TLS decryption) go to tail(), free_space() of them,
  // and Commit(n) adds the first n to the unconsumed input.
  char* tail() { return data_.get() + filled_; }
  void Commit(size_t n) { filled_ += n; }

  const char* begin() const { return data_.get(); }
  const char* end() const { return data_.get() + filled_; }
  // The unconsumed bytes.
  const char* unparsed() const { return data_.get() + parse_start_; }
  size_t unparsed_size() const { return filled_ - parse_start_; }
  void Consume(size_t n) { parse_start_ += n; }
  // Bytes allocated, and those of them not filled yet (CLIENT LIST's qbuf-free).
  size_t capacity() const { return size_; }
  size_t free_space() const { return size_ - filled_; }
  // Once everything is consumed, a buffer grown past kKeepSize for a big request is released,
  // so an idle connection does not hold it (the next read allocates a small one again).
  void ReleaseIfIdle();

 private:
  void MakeRoom(size_t needed);

  static constexpr size_t kInitialSize = 16 * 1024;
  // A buffer larger than this is released once consumed, so one big request does not pin memory
  // for the rest of the connection's life; smaller ones are reused.
  static constexpr size_t kKeepSize = 1024 * 1024;

  std::unique_ptr<char[]> data_;
  size_t size_ = 0;
  size_t parse_start_ = 0;
  size_t filled_ = 0;
  // The last recv returned less than it had room for, so the socket held no more: the next one
  // waits for data first (at pipeline 1 the client sends only after our reply).
  bool drained_ = false;
};

}  // namespace shardis::io
