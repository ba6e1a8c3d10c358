#include "io/stream.h"

#include <sys/socket.h>
#include <unistd.h>

#include <boost/fiber/context.hpp>
#include <glog/logging.h>

#include "io/tls_session.h"

namespace shardis::io {

using boost::fibers::context;

namespace {

// Input received while the fiber is busy waits in the stash; past this much the multishot
// receive is stopped (TCP's backpressure takes over until the next Read).
constexpr size_t kMaxStash = 256 * 1024;
// Send buffers larger than this are released after their send, so one big reply does not pin
// memory for the rest of the connection's life; smaller ones are reused (pipelines of large
// values keep theirs).
constexpr size_t kKeepSendBuffer = 256 * 1024;
// Without buffer rings, how much ciphertext one recv of a TLS stream takes.
constexpr size_t kTlsRecvSize = 64 * 1024;

}  // namespace

Stream::Stream(Proactor* proactor, int fd, StreamCounters* counters)
    : proactor_(proactor), fd_(fd), counters_(counters) {
  recv_op_.stream = this;
  send_op_.stream = this;
  proactor_->RegisterFile(fd);
}

void Stream::set_tls(std::unique_ptr<TlsSession> session) { tls_ = std::move(session); }

Stream::~Stream() {
  StopReading();
  WaitSendDone();
  if (send_error_ == 0) SendCloseNotify();
  proactor_->UnregisterFile(fd_);
  close(fd_);
}

void Stream::Wait(bool* waiting) {
  fiber_ = context::active();
  *waiting = true;
  fiber_->suspend();
  *waiting = false;
}

void Stream::Wake(bool* waiting) {
  if (!*waiting) return;
  *waiting = false;  // one wake-up, however many completions this pass of the loop brings
  context::active()->schedule(fiber_);
}

bool Stream::Read(size_t needed) {
  if (tls_ != nullptr) return ReadTls(needed);
  if (no_streams_) {
    const int n = in_.Read(proactor_, fd_, needed);
    ++counters_->reads;
    if (n <= 0) return false;
    counters_->bytes_in += size_t(n);
    return true;
  }
  if (needed > in_.unparsed_size() + stash_.size()) in_.Reserve(needed);
  for (;;) {
    if (!stash_.empty()) {
      in_.Append(stash_.data(), stash_.size());
      ClearStash();
      return true;
    }
    if (input_closed_) return false;
    const size_t before = in_.unparsed_size();
    if (!AwaitRecv()) return Read(needed);  // until RecvOp::OnRecv
    if (in_.unparsed_size() > before) return true;
  }
}

bool Stream::AwaitRecv() {
  if (!streaming_) {
    if (!proactor_->StartRecvStream(fd_, &recv_op_)) {
      no_streams_ = true;
      return false;
    }
    streaming_ = true;
  }
  Wait(&waiting_input_);
  return true;
}

void Stream::ClearStash() {
  if (stash_.capacity() > kMaxStash) {
    std::string().swap(stash_);
  } else {
    stash_.clear();
  }
}

bool Stream::ReadTls(size_t needed) {
  for (;;) {
    const size_t before = in_.unparsed_size();
    switch (tls_->Decrypt(&in_, needed)) {
      case TlsSession::Status::kData:
        counters_->bytes_in += in_.unparsed_size() - before;  // plaintext, as Redis counts it
        return true;
      case TlsSession::Status::kNeedInput:
        break;
      case TlsSession::Status::kClosed:
        return false;
      case TlsSession::Status::kFailed:
        // A plaintext client, a refused certificate: Redis logs it at verbose level.
        VLOG(1) << "TLS connection closed: " << tls_->error();
        if (!send_in_flight_ && tls_->has_ciphertext_out()) {  // the alert, as a last word
          std::string alert;
          tls_->TakeCiphertext(&alert);
          (void)::send(fd_, alert.data(), alert.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
        }
        return false;
    }
    // Handshake messages (and TLS 1.3's session tickets) go out before waiting for the answer.
    if (tls_->has_ciphertext_out()) {
      if (!WaitSendDone()) return false;
      sending_.clear();
      tls_->TakeCiphertext(&sending_);
      StartSendBuffer(/*plain_size=*/0);
    }
    if (!ReceiveCiphertext()) return false;
  }
}

bool Stream::ReceiveCiphertext() {
  if (no_streams_) {
    stash_.resize(kTlsRecvSize);
    const int n = proactor_->Recv(fd_, stash_.data(), stash_.size());
    ++counters_->reads;
    if (n <= 0) return false;
    tls_->PutCiphertext(stash_.data(), size_t(n));
    stash_.clear();
    return true;
  }
  for (;;) {
    if (!stash_.empty()) {
      tls_->PutCiphertext(stash_.data(), stash_.size());
      ClearStash();
      return true;
    }
    if (input_closed_) return false;
    if (!AwaitRecv()) return ReceiveCiphertext();  // until RecvOp::OnRecv
  }
}

void Stream::RecvOp::OnRecv(int res, const char* data, bool armed) {
  // In the loop, on the stream's thread.
  Stream* s = stream;
  if (res != -ENOBUFS && res != -ECANCELED) ++s->counters_->reads;
  if (res > 0) {
    if (s->tls_ == nullptr) s->counters_->bytes_in += size_t(res);  // TLS: plaintext, in ReadTls
    if (s->waiting_input_ && s->tls_ == nullptr) {
      s->in_.Append(data, size_t(res));  // nothing points into in_ while the fiber waits
    } else {
      s->stash_.append(data, size_t(res));
      if (armed && !s->stream_stopping_ && s->stash_.size() > kMaxStash) {
        s->stream_stopping_ = true;
        s->proactor_->StopRecvStream(this);
      }
    }
  } else if (res != -ENOBUFS && res != -ECANCELED) {
    s->input_closed_ = true;  // EOF, or the socket failed
  }
  if (!armed) {
    // Ended: Read starts another when it needs input (after ENOBUFS or a stop).
    s->streaming_ = false;
    s->stream_stopping_ = false;
  }
  s->Wake(&s->waiting_input_);
}

void Stream::StopReading() {
  if (!streaming_) return;
  if (!stream_stopping_) {
    stream_stopping_ = true;
    proactor_->StopRecvStream(&recv_op_);
  }
  while (streaming_) Wait(&waiting_input_);
}

bool Stream::Send(std::string* bytes) {
  if (!WaitSendDone()) return false;
  StartSend(bytes);
  return true;
}

void Stream::StartSend(std::string* bytes) {
  bool encrypted = true;
  const size_t plain_size = bytes->size();
  if (tls_ != nullptr) {
    sending_.clear();
    encrypted = tls_->Encrypt(*bytes, &sending_);
    if (!encrypted) send_error_ = -EPROTO;  // the next wait reports it
  } else {
    sending_.swap(*bytes);  // *bytes now holds what was sent before
  }
  if (bytes->capacity() > kKeepSendBuffer) {
    std::string().swap(*bytes);
    ++counters_->send_buffer_releases;
  } else {
    bytes->clear();
  }
  if (encrypted) StartSendBuffer(plain_size);
}

void Stream::StartSendBuffer(size_t plain_size) {
  send_offset_ = 0;
  send_plain_size_ = plain_size;
  send_in_flight_ = true;
  ++counters_->writes;
  proactor_->SendAsync(fd_, sending_.data(), sending_.size(), &send_op_);
}

bool Stream::SendAndWait(std::string_view bytes) {
  std::string copy(bytes);
  return Send(&copy) && WaitSendDone();
}

void Stream::SendNow(std::string* bytes) {
  if (tls_ != nullptr) return;
  const ssize_t n = ::send(fd_, bytes->data(), bytes->size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  ++counters_->writes;
  if (n > 0) {
    counters_->bytes_out += size_t(n);
    bytes->erase(0, size_t(n));
  }
}

void Stream::SendCloseNotify() {
  if (tls_ == nullptr || send_in_flight_) return;  // never inside a record being sent
  std::string alert;
  tls_->Shutdown(&alert);
  if (!alert.empty()) (void)::send(fd_, alert.data(), alert.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
}

bool Stream::WaitSendDone() {
  while (send_in_flight_) Wait(&waiting_send_);
  return send_error_ == 0;
}

void Stream::SendOp::Complete(int res) {
  // In the loop, on the stream's thread.
  Stream* s = stream;
  if (res > 0 && s->send_offset_ + size_t(res) < s->sending_.size()) {
    // A short send (full socket buffer): send the rest.
    s->send_offset_ += size_t(res);
    ++s->counters_->writes;
    s->proactor_->SendAsync(s->fd_, s->sending_.data() + s->send_offset_,
                            s->sending_.size() - s->send_offset_, this);
    return;
  }
  if (res <= 0) {
    s->send_error_ = res < 0 ? res : -EPIPE;
  } else {
    s->counters_->bytes_out += s->send_plain_size_;
  }
  s->send_in_flight_ = false;
  // A big reply does not stay allocated while the connection idles after it.
  if (s->sending_.capacity() > kKeepSendBuffer) {
    std::string().swap(s->sending_);
    ++s->counters_->send_buffer_releases;
  }
  if (s->waiting_send_) {
    s->Wake(&s->waiting_send_);  // the fiber sends its next replies first
  } else if (res > 0 && s->send_listener_ != nullptr) {
    s->send_listener_->OnSendIdle();
  }
}

}  // namespace shardis::io
