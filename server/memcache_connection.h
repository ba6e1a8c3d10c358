// MemcacheConnection: one client of the memcached text protocol (--memcached_port), served by one
// fiber on the thread that accepted it. It shares the keyspace with RESP: every key lives in
// database 0 of its shard as a plain string, so a key set here is a string to GET over RESP.
// memcached's per-key flags and CAS unique live in the Db's McMeta side table (see shard/db.h).
//
// Each read is parsed into every complete command in the buffer; the commands run in the order
// they were sent, as RESP's do (PipelineRuns, docs/pipelines.md): consecutive keys for one shard
// travel as one hop, a multi-key get is one item per key, and all replies leave in one send.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/memcache_parser.h"
#include "io/proactor.h"
#include "io/stream.h"
#include "io/tls_session.h"
#include "server/pipeline_runs.h"

namespace shardis::server {

class MemcacheConnection final : private PipelineRuns::Executor {
 public:
  // tls: the session when the port speaks TLS (--memcached_tls), or nullptr.
  MemcacheConnection(int fd, io::Proactor* proactor, std::unique_ptr<io::TlsSession> tls);
  ~MemcacheConnection();
  MemcacheConnection(const MemcacheConnection&) = delete;
  MemcacheConnection& operator=(const MemcacheConnection&) = delete;

  // The fiber body: reads, executes and replies until the client leaves or the server stops.
  void Run();

 private:
  using Cmd = core::MemcacheParser::Command;
  using Op = core::MemcacheParser::Op;
  // One key of a command, waiting in runs_ for its turn on its shard.
  struct KeyItem {
    uint32_t cmd;  // into cmds_
    uint32_t key;  // into its keys
    Op op;         // the command's, or kDelete for the delete after a too-large set
    bool silent;   // noreply: the reply is dropped
    uint64_t hash;
    uint32_t slot;  // into slots_
  };

  // Runs every complete command in the buffer; false when the connection must close.
  bool ProcessInput();
  // Runs or queues command cmds_[index]; false for quit.
  bool Dispatch(uint32_t index);
  // Runs one key of a command at once when it is on this thread and nothing is queued, else
  // queues it behind the others.
  void AddKeyItem(uint32_t cmd_index, uint32_t key_index, Op op, bool silent);
  static bool IsWrite(Op op);
  void RunItem(shard::Shard& s, shard::Db& db, int64_t now_ms, const KeyItem& item,
               std::string* out);
  // Where the next output goes: out_, or a slot once a queued reply comes before it.
  std::string* NextOutput();
  // Runs every queued item in order and appends the outputs.
  void FlushQueued();
  // PipelineRuns::Executor: items are items_[begin, end).
  size_t RunItems(shard::Shard& s, size_t begin, size_t end) override;
  void RunLockedItems(unsigned sid, size_t begin, size_t end) override;
  void FlushAll(int64_t delay_s);
  void Stats(const Cmd& cmd);

  io::Proactor* proactor_;
  core::MemcacheParser parser_;
  io::Stream stream_;
  std::string out_;
  int64_t now_ms_ = 0;  // the batch's clock
  // The batch's commands (reused: their key vectors keep their capacity) and queued keys.
  std::vector<Cmd> cmds_;
  size_t used_cmds_ = 0;
  std::vector<KeyItem> items_;
  std::vector<std::string> slots_;
  size_t used_slots_ = 0;
  PipelineRuns runs_;
  const bool relaxed_order_;
  bool batch_writes_ = false;  // the batch ran writes whose replies wait for the AOF
};

// For StopServing: makes every memcached connection of the calling thread see end-of-file after
// the commands it has read, and stops delayed flush_all timers.
void StopMemcacheConnections();

}  // namespace shardis::server
