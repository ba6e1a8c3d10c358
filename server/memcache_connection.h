// MemcacheConnection: one client of the memcached text protocol (--memcached_port), served by one
// fiber on the thread that accepted it. It shares the keyspace with RESP: every key lives in
// database 0 of its shard as a plain string, so a key set here is a string to GET over RESP.
// memcached's per-key flags and CAS unique live in the Db's McMeta side table (see shard/db.h).
//
// Each read is parsed into every complete command in the buffer; the commands run in order (a
// key on another shard is one hop there; a multi-key get makes one hop per shard involved, in
// parallel, and replies in key order) and all their replies leave in one send.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/memcache_parser.h"
#include "io/proactor.h"
#include "server/input_buffer.h"

namespace shardis::server {

class MemcacheConnection {
 public:
  MemcacheConnection(int fd, io::Proactor* proactor);
  ~MemcacheConnection();
  MemcacheConnection(const MemcacheConnection&) = delete;
  MemcacheConnection& operator=(const MemcacheConnection&) = delete;

  // The fiber body: reads, executes and replies until the client leaves or the server stops.
  void Run();

 private:
  bool ReadMore();
  // Runs every complete command in the buffer; false when the connection must close.
  bool ProcessInput();
  // One command; false for quit.
  bool Execute(const core::MemcacheParser::Command& cmd);
  // A command on one key, on its shard (a hop when it is remote).
  void ExecuteKeyCommand(const core::MemcacheParser::Command& cmd);
  // get/gets/gat/gats: one hop per shard owning some of the keys.
  void ExecuteRetrieval(const core::MemcacheParser::Command& cmd);
  void FlushAll(int64_t delay_s);
  void Stats(const core::MemcacheParser::Command& cmd);

  int fd_;
  io::Proactor* proactor_;
  core::MemcacheParser parser_;
  InputBuffer in_;
  std::string out_;
};

// For StopServing: makes every memcached connection of the calling thread see end-of-file after
// the commands it has read, and stops delayed flush_all timers.
void StopMemcacheConnections();

}  // namespace shardis::server
