// TlsSession: the server side of one TLS connection, with OpenSSL working on memory BIOs, so that
// the bytes still travel through io::Stream's io_uring receive and send (nothing here touches the
// socket). Ciphertext received is put into the read BIO; SSL_read turns it into plaintext in the
// stream's input buffer. Plaintext replies go through SSL_write into the write BIO, whose
// ciphertext the stream sends. The handshake happens inside the first Decrypt calls (the session
// is in accept state), on the connection's fiber, with the handshake messages taken out by
// TakeCiphertext and sent by the stream.
//
// One session belongs to one connection and is used only on its thread: no lock. The SSL_CTX it
// is made from is shared read-only between all sessions (OpenSSL counts its references).
//
// The alternative the issue asks to measure is kernel TLS after the handshake (SSL_sendfile-less
// KTLS via setsockopt TLS_TX/TLS_RX): the stream would then send plaintext and the kernel encrypt.
// This memory-BIO path works on every kernel and is the one built first.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;
typedef struct bio_st BIO;

namespace shardis::io {

class InputBuffer;

// OpenSSL's queued errors of this thread, as one line, emptying the queue (a failure must not
// leave its errors to be reported by the next user of OpenSSL on this thread).
std::string TakeOpenSslErrors();

class TlsSession {
 public:
  // verify_mode: OpenSSL's SSL_VERIFY_* bits for the client's certificate (SSL_VERIFY_NONE,
  // SSL_VERIFY_PEER, or with SSL_VERIFY_FAIL_IF_NO_PEER_CERT).
  TlsSession(SSL_CTX* ctx, int verify_mode);
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  enum class Status {
    kData,       // plaintext was added to the buffer
    kNeedInput,  // nothing to decrypt until more ciphertext comes (send TakeCiphertext first)
    kClosed,     // the peer sent close_notify
    kFailed,     // a protocol error or a refused certificate: close (the alert is ciphertext out)
  };
  // Ciphertext from the peer.
  void PutCiphertext(const char* data, size_t n);
  // Decrypts what the received ciphertext holds into `in` (advancing the handshake first),
  // growing it to at least `needed` unconsumed bytes as InputBuffer::Reserve does. Stops when
  // the buffer is full, so a client's burst does not grow it without bound; the rest stays in
  // the read BIO for the next call.
  Status Decrypt(InputBuffer* in, size_t needed);
  // Encrypts plaintext, appending the records (after any handshake bytes still to go) to *out.
  // False if the session cannot write (failed, or the handshake is not finished).
  bool Encrypt(std::string_view plain, std::string* out);
  // Appends the ciphertext the session has made and not handed out yet (handshake messages,
  // session tickets, alerts) to *out.
  void TakeCiphertext(std::string* out);
  // Appends a close_notify alert to *out, as Redis' SSL_shutdown before closing a connection
  // whose handshake finished; nothing after a failure or before the handshake's end.
  void Shutdown(std::string* out);
  bool has_ciphertext_out() const;
  // Why the session failed: OpenSSL's error text (e.g. "...:certificate verify failed").
  const std::string& error() const { return error_; }

 private:
  SSL* ssl_;
  BIO* rbio_;  // owned by ssl_
  BIO* wbio_;  // owned by ssl_
  std::string error_;
};

}  // namespace shardis::io
