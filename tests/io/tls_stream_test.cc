// io::Stream with a TlsSession: a real OpenSSL client on a plain thread talks to a stream served
// by a fiber over loopback TCP, with a certificate made in memory for the test.
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "io/proactor_pool.h"
#include "io/stream.h"
#include "io/tls_session.h"
#include "tests/io/loopback_sockets.h"

namespace shardis::io {
namespace {

// A self-signed P-256 certificate and its key, loaded into a server context.
SSL_CTX* MakeServerContext() {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* cert = X509_new();
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert), 0);
  X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
  X509_set_issuer_name(cert, name);
  X509_sign(cert, key, EVP_sha256());
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  EXPECT_EQ(SSL_CTX_use_certificate(ctx, cert), 1);
  EXPECT_EQ(SSL_CTX_use_PrivateKey(ctx, key), 1);
  X509_free(cert);
  EVP_PKEY_free(key);
  return ctx;
}

std::string Pattern(size_t n) {
  std::string s(n, 0);
  for (size_t i = 0; i < n; ++i) s[i] = char('a' + (i * 7 + i / 4096) % 26);
  return s;
}

class TlsStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(pool_.Start().ok());
    TcpPair(fds_);
    server_ctx_ = MakeServerContext();
    client_ctx_ = SSL_CTX_new(TLS_client_method());
  }
  void TearDown() override {
    close(fds_[1]);
    pool_.Stop();
    SSL_CTX_free(server_ctx_);
    SSL_CTX_free(client_ctx_);
  }
  // A blocking TLS client on the client end; nullptr if the handshake failed.
  SSL* ConnectClient() {
    SSL* ssl = SSL_new(client_ctx_);
    SSL_set_fd(ssl, fds_[1]);
    if (SSL_connect(ssl) != 1) {
      SSL_free(ssl);
      return nullptr;
    }
    return ssl;
  }

  ProactorPool pool_{1};
  int fds_[2] = {-1, -1};
  SSL_CTX* server_ctx_ = nullptr;
  SSL_CTX* client_ctx_ = nullptr;
  StreamCounters counters_;
};

// 4 MiB go through the handshake, are decrypted into the input buffer in pieces no larger than
// it grows to, and come back encrypted: byte for byte.
TEST_F(TlsStreamTest, EchoesEveryByteAfterTheHandshake) {
  const std::string msg = Pattern(4 << 20);
  std::string echoed;
  bool handshake_ok = false;
  std::thread client([&] {
    SSL* ssl = ConnectClient();
    handshake_ok = ssl != nullptr;
    if (ssl == nullptr) return;
    std::thread writer(
        [&] { ASSERT_EQ(SSL_write(ssl, msg.data(), int(msg.size())), int(msg.size())); });
    char buf[65536];
    while (echoed.size() < msg.size()) {
      const int n = SSL_read(ssl, buf, sizeof(buf));
      if (n <= 0) break;
      echoed.append(buf, size_t(n));
    }
    writer.join();
    SSL_free(ssl);
  });
  pool_.AwaitOn(0, [&](Proactor* p) {
    Stream stream(p, fds_[0], &counters_);
    stream.set_tls(std::make_unique<TlsSession>(server_ctx_, SSL_VERIFY_NONE));
    size_t got = 0;
    std::string out;
    while (got < msg.size() && stream.Read()) {
      InputBuffer& in = stream.input();
      got += in.unparsed_size();
      out.append(in.unparsed(), in.unparsed_size());
      in.Consume(in.unparsed_size());
      ASSERT_TRUE(stream.Send(&out));
    }
    EXPECT_EQ(got, msg.size());
    EXPECT_TRUE(stream.WaitSendDone());
  });
  client.join();
  EXPECT_TRUE(handshake_ok);
  EXPECT_EQ(echoed.size(), msg.size());
  EXPECT_TRUE(echoed == msg);
  // Plaintext is counted, as Redis' net_input_bytes/net_output_bytes through TLS.
  EXPECT_EQ(counters_.bytes_in, msg.size());
  EXPECT_EQ(counters_.bytes_out, msg.size());
}

// A plaintext client on a TLS stream: the stream reads nothing and ends.
TEST_F(TlsStreamTest, PlaintextClientEndsTheStream) {
  const std::string ping = "*1\r\n$4\r\nPING\r\n";
  ASSERT_EQ(write(fds_[1], ping.data(), ping.size()), ssize_t(ping.size()));
  bool read = true;
  std::string error;
  pool_.AwaitOn(0, [&](Proactor* p) {
    Stream stream(p, fds_[0], &counters_);
    auto session = std::make_unique<TlsSession>(server_ctx_, SSL_VERIFY_NONE);
    TlsSession* s = session.get();
    stream.set_tls(std::move(session));
    read = stream.Read();
    error = s->error();
  });
  EXPECT_FALSE(read);
  EXPECT_FALSE(error.empty());
}

// A client certificate is required and the client has none: the handshake fails on both ends.
TEST_F(TlsStreamTest, RequiredClientCertificateMissingFailsTheHandshake) {
  bool handshake_ok = true;
  std::thread client([&] {
    SSL* ssl = ConnectClient();
    // TLS 1.3: the client learns of the refusal at its first read.
    char c;
    handshake_ok = ssl != nullptr && SSL_read(ssl, &c, 1) > 0;
    if (ssl != nullptr) SSL_free(ssl);
  });
  bool read = true;
  pool_.AwaitOn(0, [&](Proactor* p) {
    Stream stream(p, fds_[0], &counters_);
    stream.set_tls(std::make_unique<TlsSession>(
        server_ctx_, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT));
    read = stream.Read();
  });
  shutdown(fds_[1], SHUT_RDWR);
  client.join();
  EXPECT_FALSE(read);
  EXPECT_FALSE(handshake_ok);
}

}  // namespace
}  // namespace shardis::io
