// MigrateTarget: MIGRATE's connection to the server it moves keys to, and the thread's cache of
// them. As Redis' migrate_cached_sockets: one connection per host:port, reused by the next
// MIGRATE to the same place (which then skips the SELECT of a database already selected) and
// closed once idle for kCacheIdle. Each thread keeps its own cache; a connection in use by one
// MIGRATE is out of the cache, so two MIGRATEs of one thread never share a socket.
//
// The exchange is Redis' own (syncWrite/syncReadLine): the whole request is written, then the
// replies are read one line each (+OK or -ERR ...). Every step waits at most `timeout`; the
// I/O goes through the thread's io_uring, so only the calling fiber waits.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

namespace shardis::server {

class MigrateTarget {
 public:
  static constexpr std::chrono::seconds kCacheIdle{10};  // Redis' MIGRATE_SOCKET_CACHE_TTL

  // The cached connection to host:port (removed from the cache while the caller holds it), or a
  // new one. Null when host:port does not resolve. A connect that failed or timed out gives a
  // target whose first Write fails, as in Redis 7.2.
  static std::unique_ptr<MigrateTarget> Get(std::string_view host, std::string_view port,
                                            std::chrono::milliseconds timeout);
  // Puts a connection that is still good back into the cache.
  static void Return(std::unique_ptr<MigrateTarget> target);
  // The connections in this thread's cache (INFO's migrate_cached_sockets), after closing those
  // idle for longer than kCacheIdle, as Redis' cron would have.
  static size_t CachedCount();

  ~MigrateTarget();
  MigrateTarget(const MigrateTarget&) = delete;
  MigrateTarget& operator=(const MigrateTarget&) = delete;

  // The database the target has selected for us, -1 when unknown.
  long long selected_db() const { return selected_db_; }
  void set_selected_db(long long db) { selected_db_ = db; }

  // Writes all of bytes. False on an error or a timeout (-errno in last_error()); a connection
  // that Get could not make fails here.
  bool Write(std::string_view bytes, std::chrono::milliseconds timeout);
  // Reads one reply line into *line, without its CR LF. False on EOF, an error or a timeout.
  bool ReadLine(std::string* line, std::chrono::milliseconds timeout);
  std::chrono::steady_clock::time_point last_use() const { return last_use_; }
  // The last failure's -errno (-ETIMEDOUT after a timeout).
  int last_error() const { return last_error_; }

 private:
  MigrateTarget(std::string key, int fd) : key_(std::move(key)), fd_(fd) {}

  std::string key_;  // "host:port", the cache's key
  int fd_;
  long long selected_db_ = -1;
  std::chrono::steady_clock::time_point last_use_;
  std::string input_;  // received bytes not consumed yet
  int last_error_ = 0;
};

}  // namespace shardis::server
