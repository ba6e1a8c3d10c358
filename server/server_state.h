// Server-wide facts (start time, run id, listening address) and the per-thread state that INFO and
// CLIENT read: the connections living on a thread and its counters. Per-thread state is only
// touched by its own thread; a command that needs all of it hops to every thread
// (shard_set->AwaitAll) and reads ServerThreadState::current() there.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>

#include "io/stream_counters.h"
#include "server/connection_state.h"

namespace shardis::server {

// The Redis version clients see (INFO, HELLO, LOLWUT, scripts' redis.REDIS_VERSION, the RDB
// files' redis-ver): the Redis 7.2 release whose behaviour shardis follows (issue 17), so that
// clients enable what they test the version for. kRedisVersionNum is Redis' REDIS_VERSION_NUM
// for it (0x00MMmmpp).
inline constexpr std::string_view kRedisVersion = "7.2.4";
inline constexpr int64_t kRedisVersionNum = 0x00070204;

struct ServerInfo {
  int64_t start_ms = 0;         // Unix ms at start
  std::string run_id;           // 40 hex chars, random per start
  unsigned threads = 0;
  std::string executable;       // absolute path of the binary
  std::string config_file;      // empty: embedded defaults
};

// Filled by main before serving; read-only afterwards.
const ServerInfo& Info();
ServerInfo& MutableInfo();

struct ThreadStats {
  uint64_t connections_received = 0;
  uint64_t commands_processed = 0;
  io::StreamCounters net;  // the clients' sockets: bytes, reads and writes
  // Batches whose replies outgrew the reply buffer's capacity (Redis' reply_buffer_expands); the
  // buffers released after a large reply are net.send_buffer_releases (its reply_buffer_shrinks).
  uint64_t reply_buffer_expands = 0;
  uint64_t rejected_connections = 0;
  uint64_t protocol_errors = 0;
  uint64_t unknown_commands = 0;  // errors replied for commands not in the table
  int64_t blocked_clients = 0;    // clients waiting in BLPOP & co. now (a gauge)
  int64_t clients_in_timeout_table = 0;  // those of them with a timeout (a gauge)
  // Clients closed by client-query-buffer-limit and client-output-buffer-limit (Redis 7.2).
  uint64_t client_query_buffer_limit_disconnections = 0;
  uint64_t client_output_buffer_limit_disconnections = 0;
  // Redis 7.2's acl_access_denied_*: denials counted where ACL LOG records them (one per denied
  // command, key, channel or AUTH), on the thread of the connection that was denied.
  uint64_t acl_denied_auth = 0;
  uint64_t acl_denied_cmd = 0;
  uint64_t acl_denied_key = 0;
  uint64_t acl_denied_channel = 0;
};

class ServerThreadState {
 public:
  static ServerThreadState& current();  // this thread's (thread_local)

  ThreadStats& stats() { return stats_; }
  // The clients connected to this thread; a ConnectionState is registered while its fiber runs.
  const absl::flat_hash_set<ConnectionState*>& connections() const { return connections_; }
  void AddConnection(ConnectionState* c) {
    connections_.insert(c);
    by_id_[c->id] = c;
  }
  void RemoveConnection(ConnectionState* c) {
    connections_.erase(c);
    by_id_.erase(c->id);
  }
  // The client with this id if it lives on this thread, else nullptr.
  ConnectionState* FindConnection(uint64_t id) const {
    auto it = by_id_.find(id);
    return it == by_id_.end() ? nullptr : it->second;
  }

 private:
  ThreadStats stats_;
  absl::flat_hash_set<ConnectionState*> connections_;
  absl::flat_hash_map<uint64_t, ConnectionState*> by_id_;
};

// A unique, increasing client id (CLIENT ID). Called once per accepted connection, not per request.
uint64_t NextClientId();

}  // namespace shardis::server
