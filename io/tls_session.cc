#include "io/tls_session.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <glog/logging.h>

#include "io/input_buffer.h"

namespace shardis::io {

namespace {

// The largest TLS record's plaintext: a Decrypt wants at least this much room, so that one
// SSL_read takes a whole record.
constexpr size_t kRecordPlaintext = 16 * 1024;

}  // namespace

std::string TakeOpenSslErrors() {
  std::string text;
  while (const unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!text.empty()) text += "; ";
    text += buf;
  }
  return text;
}

TlsSession::TlsSession(SSL_CTX* ctx, int verify_mode) : ssl_(SSL_new(ctx)) {
  CHECK(ssl_ != nullptr) << "SSL_new: " << TakeOpenSslErrors();
  rbio_ = BIO_new(BIO_s_mem());
  wbio_ = BIO_new(BIO_s_mem());
  CHECK(rbio_ != nullptr && wbio_ != nullptr) << "out of memory for TLS buffers";
  // An empty read BIO means "wait for more", not end of file.
  BIO_set_mem_eof_return(rbio_, -1);
  SSL_set_bio(ssl_, rbio_, wbio_);
  SSL_set_verify(ssl_, verify_mode, nullptr);
  SSL_set_accept_state(ssl_);
}

TlsSession::~TlsSession() { SSL_free(ssl_); }

void TlsSession::PutCiphertext(const char* data, size_t n) {
  // A memory BIO only fails to grow when memory is out.
  CHECK_EQ(BIO_write(rbio_, data, int(n)), int(n));
}

TlsSession::Status TlsSession::Decrypt(InputBuffer* in, size_t needed) {
  bool added = false;
  for (;;) {
    if (in->free_space() < kRecordPlaintext) {
      if (added) return Status::kData;  // full: the rest waits in the read BIO
      in->Reserve(std::max(needed, in->unparsed_size() + kRecordPlaintext));
    }
    const int n = SSL_read(ssl_, in->tail(), int(std::min<size_t>(in->free_space(), INT32_MAX)));
    if (n > 0) {
      in->Commit(size_t(n));
      added = true;
      // Nothing left to decrypt: skip the SSL_read that would only say so (a client at pipeline
      // depth 1 sends one record per request, so this halves the SSL_read calls).
      if (SSL_pending(ssl_) == 0 && BIO_ctrl_pending(rbio_) == 0) return Status::kData;
      continue;
    }
    switch (SSL_get_error(ssl_, n)) {
      case SSL_ERROR_WANT_READ:
        return added ? Status::kData : Status::kNeedInput;
      case SSL_ERROR_ZERO_RETURN:
        return added ? Status::kData : Status::kClosed;
      default:
        error_ = TakeOpenSslErrors();
        if (error_.empty()) error_ = "TLS protocol error";
        return added ? Status::kData : Status::kFailed;
    }
  }
}

bool TlsSession::Encrypt(std::string_view plain, std::string* out) {
  if (!plain.empty()) {
    // With memory BIOs a write never blocks: all of it is taken or the session has failed.
    const int n = SSL_write(ssl_, plain.data(), int(plain.size()));
    if (n <= 0) {
      error_ = TakeOpenSslErrors();
      return false;
    }
  }
  TakeCiphertext(out);
  return true;
}

void TlsSession::TakeCiphertext(std::string* out) {
  const size_t pending = BIO_ctrl_pending(wbio_);
  if (pending == 0) return;
  const size_t old = out->size();
  out->resize(old + pending);
  CHECK_EQ(BIO_read(wbio_, out->data() + old, int(pending)), int(pending));
}

void TlsSession::Shutdown(std::string* out) {
  if (!error_.empty() || !SSL_is_init_finished(ssl_)) return;
  // Sends our close_notify; the peer's answer is not waited for (Redis does not either).
  (void)SSL_shutdown(ssl_);
  ERR_clear_error();
  TakeCiphertext(out);
}

bool TlsSession::has_ciphertext_out() const { return BIO_ctrl_pending(wbio_) > 0; }

}  // namespace shardis::io
