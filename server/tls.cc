#include "server/tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>

#include <absl/strings/str_split.h>
#include <gflags/gflags.h>
#include <glog/logging.h>

#include "core/string_util.h"
#include "server/config_registry.h"
#include "shard/shard_set.h"

// Redis' names and defaults (config.c); the config file and CONFIG SET use the Redis names.
DEFINE_string(tls_cert_file, "", "server certificate (PEM, may hold the chain) for TLS ports");
DEFINE_string(tls_key_file, "", "private key (PEM) of --tls_cert_file");
DEFINE_string(tls_key_file_pass, "", "passphrase of --tls_key_file, if it is encrypted");
DEFINE_string(tls_ca_cert_file, "", "CA certificates (PEM) that client certificates must chain to");
DEFINE_string(tls_ca_cert_dir, "", "directory of CA certificates (c_rehash layout), as above");
DEFINE_string(tls_auth_clients, "yes",
              "client certificates: yes (required), optional (checked if sent), no");
DEFINE_string(tls_protocols, "",
              "TLS versions, space separated (TLSv1.2 TLSv1.3); empty = TLSv1.2 and TLSv1.3");
DEFINE_string(tls_ciphers, "", "TLSv1.2 cipher list (OpenSSL syntax); empty = OpenSSL's default");
DEFINE_string(tls_ciphersuites, "", "TLSv1.3 cipher suites; empty = OpenSSL's default");
DEFINE_bool(tls_prefer_server_ciphers, false, "the server's cipher order wins over the client's");
DEFINE_bool(tls_session_caching, true, "resume TLS sessions from a server-side cache");
DEFINE_int32(tls_session_cache_size, 20 * 1024, "sessions the TLS session cache holds");
DEFINE_int32(tls_session_cache_timeout, 300, "seconds a cached TLS session stays resumable");

namespace shardis::server {

namespace {

// The parameters a context is built from. Written by CONFIG SET (any connection's thread) and
// read when a context is built: under g_mu, which nothing on the data path takes.
struct TlsSettings {
  std::string cert_file, key_file, key_file_pass, ca_cert_file, ca_cert_dir;
  std::string protocols, ciphers, ciphersuites;
  bool prefer_server_ciphers = false;
  bool session_caching = true;
  int64_t session_cache_size = 20 * 1024;
  int64_t session_cache_timeout = 300;
};

std::mutex g_mu;
TlsSettings g_settings;  // guarded by g_mu

enum AuthClients : int { kAuthNo, kAuthYes, kAuthOptional };
constexpr std::string_view kAuthClientsChoices[] = {"no", "yes", "optional"};
// Read at every TLS accept; relaxed: a connection accepted just after CONFIG SET may still get
// the old mode, as any reader that raced the write.
std::atomic<int> g_auth_clients{kAuthYes};
// Set once the contexts are handed to the threads: from then on a change reloads them.
std::atomic<bool> g_started{false};

// This thread's reference to the current context, dropped when the thread ends.
struct ThreadContext {
  SSL_CTX* ctx = nullptr;
  ~ThreadContext() { SSL_CTX_free(ctx); }
};
thread_local ThreadContext tl_ctx;

// Redis' tls-protocols words, case-insensitive; empty: TLSv1.2 and TLSv1.3. The SSL_OP_NO_*
// options of the versions not named, or an error.
absl::StatusOr<uint64_t> ProtocolOptions(std::string_view protocols) {
  uint64_t allowed = SSL_OP_NO_TLSv1 | SSL_OP_NO_TLSv1_1;  // what the default leaves out
  if (!protocols.empty()) {
    allowed = SSL_OP_NO_TLSv1 | SSL_OP_NO_TLSv1_1 | SSL_OP_NO_TLSv1_2 | SSL_OP_NO_TLSv1_3;
    for (absl::string_view word : absl::StrSplit(core::ToAbsl(protocols), ' ', absl::SkipEmpty())) {
      const std::string w = core::ToLower(std::string_view(word.data(), word.size()));
      if (w == "tlsv1") allowed &= ~uint64_t(SSL_OP_NO_TLSv1);
      else if (w == "tlsv1.1") allowed &= ~uint64_t(SSL_OP_NO_TLSv1_1);
      else if (w == "tlsv1.2") allowed &= ~uint64_t(SSL_OP_NO_TLSv1_2);
      else if (w == "tlsv1.3") allowed &= ~uint64_t(SSL_OP_NO_TLSv1_3);
      else {
        return absl::InvalidArgumentError(
            "Invalid tls-protocols specified. Use a combination of 'TLSv1', 'TLSv1.1', 'TLSv1.2' "
            "and 'TLSv1.3'.");
      }
    }
  }
  return allowed;
}

int PasswordCallback(char* buf, int size, int, void* userdata) {
  const auto* pass = static_cast<const std::string*>(userdata);
  if (pass == nullptr || pass->empty() || int(pass->size()) >= size) return 0;
  memcpy(buf, pass->data(), pass->size());
  return int(pass->size());
}

struct CtxFree {
  void operator()(SSL_CTX* ctx) const { SSL_CTX_free(ctx); }
};
using CtxPtr = std::unique_ptr<SSL_CTX, CtxFree>;

// A server context from the settings, following Redis' checks and their log texts.
absl::StatusOr<CtxPtr> BuildContext(const TlsSettings& s, int auth_clients) {
  if (s.cert_file.empty()) return absl::InvalidArgumentError("No tls-cert-file configured!");
  if (s.key_file.empty()) return absl::InvalidArgumentError("No tls-key-file configured!");
  if (auth_clients != kAuthNo && s.ca_cert_file.empty() && s.ca_cert_dir.empty()) {
    return absl::InvalidArgumentError(
        "Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-auth-clients is "
        "enabled!");
  }
  absl::StatusOr<uint64_t> no_versions = ProtocolOptions(s.protocols);
  if (!no_versions.ok()) return no_versions.status();
  ERR_clear_error();
  CtxPtr ctx(SSL_CTX_new(TLS_server_method()));
  if (ctx == nullptr) return absl::InternalError("SSL_CTX_new: " + io::TakeOpenSslErrors());
  SSL_CTX* c = ctx.get();
  SSL_CTX_set_options(c, SSL_OP_NO_SSLv2 | SSL_OP_NO_SSLv3 | SSL_OP_NO_COMPRESSION |
                             SSL_OP_NO_RENEGOTIATION | *no_versions);
  if (s.prefer_server_ciphers) SSL_CTX_set_options(c, SSL_OP_CIPHER_SERVER_PREFERENCE);
  // The passphrase is asked for while the key loads, and only then.
  SSL_CTX_set_default_passwd_cb(c, PasswordCallback);
  SSL_CTX_set_default_passwd_cb_userdata(c, const_cast<std::string*>(&s.key_file_pass));
  const bool cert_ok = SSL_CTX_use_certificate_chain_file(c, s.cert_file.c_str()) > 0;
  if (!cert_ok) {
    return absl::InvalidArgumentError(
        core::Concat("Failed to load certificate: ", s.cert_file, ": ", io::TakeOpenSslErrors()));
  }
  const bool key_ok = SSL_CTX_use_PrivateKey_file(c, s.key_file.c_str(), SSL_FILETYPE_PEM) > 0;
  SSL_CTX_set_default_passwd_cb_userdata(c, nullptr);
  if (!key_ok || SSL_CTX_check_private_key(c) != 1) {
    return absl::InvalidArgumentError(
        core::Concat("Failed to load private key: ", s.key_file, ": ", io::TakeOpenSslErrors()));
  }
  if ((!s.ca_cert_file.empty() || !s.ca_cert_dir.empty()) &&
      SSL_CTX_load_verify_locations(c, s.ca_cert_file.empty() ? nullptr : s.ca_cert_file.c_str(),
                                    s.ca_cert_dir.empty() ? nullptr : s.ca_cert_dir.c_str()) <= 0) {
    return absl::InvalidArgumentError(core::Concat(
        "Failed to configure CA certificate(s) file/directory: ", io::TakeOpenSslErrors()));
  }
  if (!s.ciphers.empty() && !SSL_CTX_set_cipher_list(c, s.ciphers.c_str())) {
    return absl::InvalidArgumentError(core::Concat("Failed to configure ciphers: ", s.ciphers));
  }
  if (!s.ciphersuites.empty() && !SSL_CTX_set_ciphersuites(c, s.ciphersuites.c_str())) {
    return absl::InvalidArgumentError(
        core::Concat("Failed to configure ciphersuites: ", s.ciphersuites));
  }
  if (s.session_caching) {
    // OpenSSL's cache is shared by the threads under its own lock: taken per handshake, never
    // per request.
    SSL_CTX_set_session_cache_mode(c, SSL_SESS_CACHE_SERVER);
    SSL_CTX_sess_set_cache_size(c, long(s.session_cache_size));
    SSL_CTX_set_timeout(c, long(s.session_cache_timeout));
    static constexpr unsigned char kSessionContext[] = "shardis";
    SSL_CTX_set_session_id_context(c, kSessionContext, sizeof(kSessionContext) - 1);
  } else {
    SSL_CTX_set_session_cache_mode(c, SSL_SESS_CACHE_OFF);
  }
  SSL_CTX_set_dh_auto(c, 1);
  return ctx;
}

// Built by LoadTls, until StartTls hands it to the threads.
CtxPtr g_loaded;

absl::StatusOr<CtxPtr> BuildFromSettings() {
  std::lock_guard lock(g_mu);
  return BuildContext(g_settings, g_auth_clients.load(std::memory_order_relaxed));
}

// On each thread: take a reference to ctx and drop the old one.
void InstallOnThisThread(SSL_CTX* ctx) {
  SSL_CTX_up_ref(ctx);
  SSL_CTX_free(std::exchange(tl_ctx.ctx, ctx));  // SSL_CTX_free(nullptr) does nothing
}

// Redis' applyTlsCfg: a changed parameter rebuilds the context; a failure keeps the old one (and
// CONFIG SET puts the old values back), with Redis' answer.
absl::Status ApplyTlsConfig() {
  if (!g_started.load(std::memory_order_acquire)) return absl::OkStatus();
  absl::StatusOr<CtxPtr> ctx = BuildFromSettings();
  if (!ctx.ok()) {
    LOG(WARNING) << ctx.status().message();
    return absl::InvalidArgumentError("Unable to update TLS configuration. Check server logs.");
  }
  SSL_CTX* c = ctx->get();
  shard::shard_set->AwaitAll([c](shard::Shard&) { InstallOnThisThread(c); });
  LOG(INFO) << "TLS configuration reloaded";
  return absl::OkStatus();
}

// A field of TlsSettings as a parameter: read and written under g_mu, applied by a reload.
template <typename T>
auto Getter(T TlsSettings::*field) {
  return [field] {
    std::lock_guard lock(g_mu);
    return g_settings.*field;
  };
}
template <typename T>
auto Setter(T TlsSettings::*field) {
  return [field](auto v) {
    std::lock_guard lock(g_mu);
    g_settings.*field = T(v);
  };
}
ConfigParam Reloading(ConfigParam p) {
  p.apply = ApplyTlsConfig;
  return p;
}
ConfigParam TlsParam(std::string_view name, std::string_view flag,
                     std::string TlsSettings::*field) {
  return Reloading(MutableString(name, flag, Getter(field), Setter(field)));
}
ConfigParam TlsParam(std::string_view name, std::string_view flag, int64_t TlsSettings::*field) {
  return Reloading(MutableInt(name, flag, 0, INT32_MAX, Getter(field), Setter(field)));
}
ConfigParam TlsParam(std::string_view name, std::string_view flag, bool TlsSettings::*field) {
  return Reloading(MutableBool(name, flag, Getter(field), Setter(field)));
}

}  // namespace

absl::Status LoadTls() {
  absl::StatusOr<CtxPtr> ctx = BuildFromSettings();
  if (!ctx.ok()) return ctx.status();
  g_loaded = *std::move(ctx);
  return absl::OkStatus();
}

void StartTls(io::ProactorPool& pool) {
  SSL_CTX* c = g_loaded.get();
  pool.AwaitOnAll([c](io::Proactor*) { InstallOnThisThread(c); });
  g_loaded.reset();  // the threads hold it now
  g_started.store(true, std::memory_order_release);
}

absl::Status StartTlsAtRuntime() {
  if (g_started.load(std::memory_order_acquire)) return absl::OkStatus();
  absl::StatusOr<CtxPtr> ctx = BuildFromSettings();
  if (!ctx.ok()) return ctx.status();
  SSL_CTX* c = ctx->get();
  shard::shard_set->AwaitAll([c](shard::Shard&) { InstallOnThisThread(c); });
  g_started.store(true, std::memory_order_release);
  return absl::OkStatus();
}

std::unique_ptr<io::TlsSession> NewTlsSession() {
  DCHECK(tl_ctx.ctx != nullptr);
  int verify = SSL_VERIFY_NONE;
  switch (g_auth_clients.load(std::memory_order_relaxed)) {
    case kAuthYes:
      verify = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
      break;
    case kAuthOptional:
      verify = SSL_VERIFY_PEER;
      break;
  }
  return std::make_unique<io::TlsSession>(tl_ctx.ctx, verify);
}

void RegisterTlsParams(ConfigRegistry& r) {
  r.Add(TlsParam("tls-cert-file", "tls_cert_file", &TlsSettings::cert_file));
  r.Add(TlsParam("tls-key-file", "tls_key_file", &TlsSettings::key_file));
  r.Add(TlsParam("tls-key-file-pass", "tls_key_file_pass", &TlsSettings::key_file_pass));
  r.Add(TlsParam("tls-ca-cert-file", "tls_ca_cert_file", &TlsSettings::ca_cert_file));
  r.Add(TlsParam("tls-ca-cert-dir", "tls_ca_cert_dir", &TlsSettings::ca_cert_dir));
  r.Add(TlsParam("tls-protocols", "tls_protocols", &TlsSettings::protocols));
  r.Add(TlsParam("tls-ciphers", "tls_ciphers", &TlsSettings::ciphers));
  r.Add(TlsParam("tls-ciphersuites", "tls_ciphersuites", &TlsSettings::ciphersuites));
  r.Add(TlsParam("tls-prefer-server-ciphers", "tls_prefer_server_ciphers",
                 &TlsSettings::prefer_server_ciphers));
  r.Add(TlsParam("tls-session-caching", "tls_session_caching", &TlsSettings::session_caching));
  r.Add(TlsParam("tls-session-cache-size", "tls_session_cache_size",
                 &TlsSettings::session_cache_size));
  r.Add(TlsParam("tls-session-cache-timeout", "tls_session_cache_timeout",
                 &TlsSettings::session_cache_timeout));
  // Read at each accept, as Redis does: no context to rebuild.
  r.Add(MutableEnum(
      "tls-auth-clients", "tls_auth_clients", kAuthClientsChoices,
      [] { return std::string(kAuthClientsChoices[g_auth_clients.load()]); },
      [](std::string_view v) {
        for (int i = 0; i < 3; ++i) {
          if (v == kAuthClientsChoices[i]) g_auth_clients.store(i, std::memory_order_relaxed);
        }
      }));
}

}  // namespace shardis::server
