#include "server/migrate_target.h"

#include <absl/container/flat_hash_map.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "core/string_util.h"
#include "io/proactor.h"

namespace shardis::server {

namespace {

constexpr size_t kMaxCached = 64;  // Redis' MIGRATE_SOCKET_CACHE_ITEMS
constexpr size_t kWriteChunk = 64 * 1024;  // as Redis: one timed write per 64 KiB

// The thread's idle connections, by "host:port".
thread_local absl::flat_hash_map<std::string, std::unique_ptr<MigrateTarget>> tl_cache;

// Connects to host:port within timeout. Returns false when host:port does not resolve (or no
// socket can be made); else *fd is the socket, connected or not: *error is 0 or the connect's
// -errno. A host name that is not an address is resolved with getaddrinfo, which blocks the
// thread (Redis' anetResolve does the same).
bool ConnectTo(const std::string& host, const std::string& port,
               std::chrono::milliseconds timeout, int* fd, int* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0) return false;
  *fd = -1;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    if (*fd >= 0) close(*fd);
    *fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (*fd < 0) continue;
    *error = io::Proactor::current()->Connect(*fd, a->ai_addr, a->ai_addrlen, timeout);
    if (*error == 0) break;
  }
  freeaddrinfo(found);
  if (*fd < 0) return false;
  const int one = 1;
  setsockopt(*fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return true;
}

// Closes the connections idle for longer than kCacheIdle. Redis does it in its cron; here the
// next MIGRATE of the thread, or INFO, does.
void CloseIdle(std::chrono::steady_clock::time_point now) {
  absl::erase_if(tl_cache, [&](const auto& entry) {
    return now - entry.second->last_use() > MigrateTarget::kCacheIdle;
  });
}

}  // namespace

size_t MigrateTarget::CachedCount() {
  CloseIdle(std::chrono::steady_clock::now());
  return tl_cache.size();
}

std::unique_ptr<MigrateTarget> MigrateTarget::Get(std::string_view host, std::string_view port,
                                                  std::chrono::milliseconds timeout) {
  std::string key = core::Concat(host, ":", port);
  const auto now = std::chrono::steady_clock::now();
  CloseIdle(now);
  if (auto it = tl_cache.find(key); it != tl_cache.end()) {
    std::unique_ptr<MigrateTarget> target = std::move(it->second);
    tl_cache.erase(it);
    target->last_use_ = now;
    return target;
  }
  int fd = -1, error = 0;
  if (!ConnectTo(std::string(host), std::string(port), timeout, &fd, &error)) return nullptr;
  std::unique_ptr<MigrateTarget> target(new MigrateTarget(std::move(key), fd));
  target->last_use_ = now;
  // As Redis 7.2 (connSocketBlockingConnect waits for the socket to be writable and does not
  // look at the outcome): a connection that was refused or timed out is handed over all the
  // same, and fails at the first write ("error or timeout writing to target instance").
  target->last_error_ = error;
  return target;
}

void MigrateTarget::Return(std::unique_ptr<MigrateTarget> target) {
  // Too many: drop one (Redis drops a random one).
  if (tl_cache.size() >= kMaxCached) tl_cache.erase(tl_cache.begin());
  target->last_use_ = std::chrono::steady_clock::now();
  std::string key = target->key_;
  tl_cache[std::move(key)] = std::move(target);
}

MigrateTarget::~MigrateTarget() { close(fd_); }

bool MigrateTarget::Write(std::string_view bytes, std::chrono::milliseconds timeout) {
  if (last_error_ != 0) return false;  // the connection was never made
  io::Proactor* p = io::Proactor::current();
  while (!bytes.empty()) {
    const int n = p->Send(fd_, bytes.data(), std::min(bytes.size(), kWriteChunk), timeout);
    if (n <= 0) {
      last_error_ = n < 0 ? n : -EPIPE;
      return false;
    }
    bytes.remove_prefix(size_t(n));
  }
  return true;
}

bool MigrateTarget::ReadLine(std::string* line, std::chrono::milliseconds timeout) {
  io::Proactor* p = io::Proactor::current();
  size_t end;
  while ((end = input_.find('\n')) == std::string::npos) {
    char buf[4096];
    const int n = p->Recv(fd_, buf, sizeof(buf), timeout);
    if (n <= 0) {
      last_error_ = n < 0 ? n : -ECONNRESET;
      return false;
    }
    input_.append(buf, size_t(n));
  }
  const size_t len = end > 0 && input_[end - 1] == '\r' ? end - 1 : end;
  line->assign(input_, 0, len);
  input_.erase(0, end + 1);
  return true;
}

}  // namespace shardis::server
