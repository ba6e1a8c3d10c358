// Stream: the byte transport of one connected socket, used by the one fiber that serves it (RESP,
// memcached and HTTP connections alike), so that there is one receive path and one send path.
//
// Receiving: a multishot receive (Proactor::StartRecvStream) stays armed between reads. Bytes it
// brings while the fiber waits in Read go straight into the input buffer; bytes that arrive while
// the fiber is busy (its requests are views into the input buffer) wait in a stash, which goes
// into the buffer at the next Read. Past kMaxStash the receive is stopped, so that a client that
// sends faster than its requests execute meets TCP's backpressure instead of filling our memory.
// Without buffer rings in the kernel, each Read is one plain recv.
//
// Sending never blocks the fiber: Send hands the bytes to the kernel and returns, so the replies
// and the next receive go in the same submit; short sends are continued in the loop. A second
// Send waits only if the first has not finished yet.
//
// TLS (set_tls): the same receive and send carry ciphertext. Received bytes always wait in the
// stash and go to the TlsSession, which decrypts them into the input buffer; replies are
// encrypted into the send buffer. The handshake runs inside the first Reads, on the serving fiber.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "io/input_buffer.h"
#include "io/proactor.h"
#include "io/stream_counters.h"

namespace boost::fibers {
class context;
}

namespace shardis::io {

class TlsSession;

class Stream {
 public:
  // Told, in the loop, when a send finished that nobody waited for: more output may go now
  // (a RESP connection's pub/sub messages).
  class SendListener {
   public:
    virtual void OnSendIdle() = 0;

   protected:
    ~SendListener() = default;
  };

  // Takes fd (a connected socket) over: registers it with the proactor's file table and closes
  // it on destruction. What it receives and sends is counted in *counters (of this thread).
  Stream(Proactor* proactor, int fd, StreamCounters* counters);
  // Ends the receive and waits for the send in flight (their buffers live here), then closes the
  // fd. Destroy it on a fiber of its proactor's thread.
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  int fd() const { return fd_; }
  // Makes this a TLS connection: before the first Read, on the serving fiber.
  void set_tls(std::unique_ptr<TlsSession> session);
  void set_send_listener(SendListener* listener) { send_listener_ = listener; }

  // --- Receiving, on the serving fiber.
  // Waits until more input is in input(); false on EOF or error (after what came before it has
  // been read). `needed`: the size the parser knows the request in progress has (0: unknown), so
  // that a large value lands in a buffer made for it.
  bool Read(size_t needed = 0);
  InputBuffer& input() { return in_; }
  const InputBuffer& input() const { return in_; }
  // Input received and not consumed yet, wherever it waits (the buffer, the stash): what Redis'
  // client-query-buffer-limit counts.
  size_t pending_input() const { return in_.unparsed_size() + stash_.size(); }
  // What the input side holds allocated.
  size_t input_memory() const { return in_.capacity() + stash_.capacity(); }
  // Ends the receive early (a connection closing) and waits for its last completion.
  void StopReading();

  // --- Sending.
  // Hands *bytes to the kernel, after waiting for the send in flight; *bytes comes back empty
  // (with its buffer, unless that has grown large). On the serving fiber. False if a send failed.
  bool Send(std::string* bytes);
  // The same without waiting, from the loop or any fiber of the thread: only while !sending().
  void StartSend(std::string* bytes);
  // Sends all of bytes and waits until they are out. False if the send failed.
  bool SendAndWait(std::string_view bytes);
  // TLS only: sends the close_notify alert now, without waiting, unless a send is in flight
  // (its record must not be cut). The destructor does it too; a second call sends nothing.
  void SendCloseNotify();
  // Writes what the socket takes now without waiting (last words before a close: the client sees
  // the close as soon as the reply) and erases that from *bytes. Only while !sending(). With TLS
  // it leaves *bytes to Send (a record cut by a short write could not be finished later).
  void SendNow(std::string* bytes);
  // Waits until no send is in flight; false if a send failed.
  bool WaitSendDone();
  bool sending() const { return send_in_flight_; }
  // Bytes handed to a send that the kernel has not taken yet.
  size_t unsent_bytes() const { return send_in_flight_ ? sending_.size() - send_offset_ : 0; }
  size_t send_buffer_capacity() const { return sending_.capacity(); }

 private:
  class SendOp final : public IoOp {
   public:
    Stream* stream = nullptr;
    void Complete(int res) override;
  };
  class RecvOp final : public RecvStream {
   public:
    Stream* stream = nullptr;
    void OnRecv(int res, const char* data, bool armed) override;
  };

  // Suspends the serving fiber until a completion wakes it.
  void Wait(bool* waiting);
  // Waits for the multishot receive's next completion, arming it first. False when the kernel
  // has no buffer rings (no_streams_ is set then: receive with plain recvs).
  bool AwaitRecv();
  // Empties the stash, releasing a large one.
  void ClearStash();
  // Read for a TLS stream: decrypts, receiving ciphertext until there is plaintext.
  bool ReadTls(size_t needed);
  // Waits for ciphertext and hands it to the TLS session; false on EOF or error.
  bool ReceiveCiphertext();
  // Sends sending_ from its start; plain_size: what it carries for counters_->bytes_out.
  void StartSendBuffer(size_t plain_size);
  void Wake(bool* waiting);

  Proactor* proactor_;
  const int fd_;
  StreamCounters* counters_;
  SendListener* send_listener_ = nullptr;
  boost::fibers::context* fiber_ = nullptr;  // the serving fiber while it waits

  std::unique_ptr<TlsSession> tls_;

  InputBuffer in_;
  std::string stash_;  // with TLS: every received byte, ciphertext for the session
  RecvOp recv_op_;
  bool streaming_ = false;        // armed: its last completion has not arrived yet
  bool stream_stopping_ = false;  // StopRecvStream was sent
  bool no_streams_ = false;       // the kernel has no buffer rings: one recv per read
  bool input_closed_ = false;     // EOF or an error came through the stream
  bool waiting_input_ = false;    // the fiber is suspended in Read or StopReading

  SendOp send_op_;
  std::string sending_;  // owned until the send completes
  size_t send_offset_ = 0;
  // The bytes_out of the send in flight: its size, or with TLS the plaintext it encrypts (what
  // Redis counts in net_output_bytes through TLS).
  size_t send_plain_size_ = 0;
  bool send_in_flight_ = false;
  bool waiting_send_ = false;  // the fiber is suspended in WaitSendDone
  int send_error_ = 0;
};

}  // namespace shardis::io
