// Connection: one client, served by one fiber on the thread that accepted it, for its whole life.
// Each read is parsed into a batch of every complete request in the buffer; the batch executes in
// request order (local keys inline until a remote one is queued, then consecutive commands for
// one shard as one run, the runs one after another: see PipelineRuns and docs/pipelines.md) and
// all its replies leave in one send.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/reply_builder.h"
#include "core/resp_parser.h"
#include "io/proactor.h"
#include "io/stream.h"
#include "io/tls_session.h"
#include "server/command.h"
#include "server/command_stats.h"
#include "server/connection_state.h"
#include "server/monitor.h"
#include "server/pipeline_runs.h"

namespace shardis::server {

struct SubCommand;

class Connection final : public PushSink,
                         private PipelineRuns::Executor,
                         private io::Stream::SendListener {
 public:
  // tls: the session of a connection accepted on the TLS port, or nullptr.
  Connection(int fd, io::Proactor* proactor, std::unique_ptr<io::TlsSession> tls);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // The fiber body: reads, executes and replies until the client leaves or the server stops.
  void Run();

  ConnectionState& state() { return state_; }

  // Pub/sub messages (and other pushes): sent after the replies produced so far, at once when the
  // connection is idle. A client whose output passes its client-output-buffer-limit is
  // disconnected (a MONITOR at --monitor_output_limit).
  void Push(std::string_view bytes) override;
  ClientBuffers Buffers() const override;
  ClientBufferPeaks TakeBufferPeaks() override;
  void CheckSoftOutputLimit() override;
  void Kill() override;
  void BeforeBlocking() override;
  void AfterBlocking() override;

 private:
  // A command that waits in runs_ for its turn on its shard, with everything the owner needs to
  // run it.
  struct QueuedItem {
    const CommandSpec* spec;
    uint32_t args_begin;  // into args_
    uint32_t args_count;
    uint32_t slot;  // into slots_
    int db;
    bool resp3;
    bool tracked;         // its key is remembered for the client's tracking (TrackingReaderOf)
    uint64_t hash;        // of args[1]
    uint64_t start_tick;  // the clock (Tick()) when it was dispatched, for its statistics
    bool script;          // a script command (on_conn), run in a fiber on its keys' shard
    std::string_view request;  // Parsed::request
  };
  // A parsed command of the batch, resolved before any of them runs.
  struct Parsed {
    uint32_t begin, count;    // the command's args in args_
    const CommandSpec* spec;  // null: unknown command
    bool arity_ok;
    bool on_shard;   // arity_ok and RunsOnShard
    unsigned shard;  // owner of args[1], for on_shard commands
    uint64_t hash;   // core::HashBytes(args[1]), for on_shard commands
    std::string_view request;  // core::RespParser::canonical(), in the input buffer as args are
  };

  // Starts sending push_out_ if nothing else owns the send path (no batch running, no send in
  // flight). Runs in the loop or any fiber; never blocks.
  void MaybeSendPushes();
  void OnSendIdle() override { MaybeSendPushes(); }
  // Redis' client-query-buffer-limit, after each read: false (and logged, counted) when the input
  // received and not yet executed exceeds it; the connection then closes without a reply.
  bool QueryBufferOk();
  // What the input side holds allocated (INFO's client_recent_max_input_buffer, which Redis takes
  // from its query buffer's allocation and the arguments).
  size_t InputMemory() const;
  // Every output byte not sent yet: the batch's replies, the send in flight, pushes waiting.
  size_t PendingOutput() const;
  // Redis' checkClientOutputBufferLimits for the client's class (pubsub while subscribed, else
  // normal): true, after closing the connection, when the hard limit is reached or the soft one
  // has been for longer than its seconds. Tracks when the soft limit was first exceeded.
  bool OutputLimitReached();
  // At a batch's start: the size of out_ past which OutputLimitReached must be asked (one compare
  // per command), and the budget of the replies queued commands may produce (RunItems).
  void ArmOutputCheck();
  // After the shards evicted for the command about to run (maxmemory), with every earlier reply
  // in out_: the messages pushed meanwhile, the invalidations of the evicted keys this client
  // tracks among them, go ahead of the command's reply, as Redis sends them before it runs (the
  // client's own writes' invalidations, which Redis sends after each reply, come after the
  // earlier commands' replies). Under CLIENT REPLY OFF/SKIP they follow the batch.
  void PushesAheadOfReply();
  // Hands out_ to the stream (Stream::Send), counting INFO's reply_buffer_expands.
  bool SendReplies();
  // Parses every complete request in the buffer and executes them. False when the connection must
  // close after the replies are sent (protocol error, QUIT).
  bool ProcessInput();
  // Looks up every command of the batch and hashes its key, then prefetches the table buckets of
  // the local keys, so that their cache misses overlap instead of queueing one by one.
  void PlanBatch();
  void Dispatch(const Parsed& cmd, int64_t now_ms);
  // Dispatch for a client under CLIENT REPLY OFF/SKIP: the command's reply is dropped.
  void DispatchSilenced(const Parsed& cmd, int64_t now_ms);
  // Queues a command for its shard behind the ones queued before it; its reply gets a slot.
  // script_shard: a script command whose keys all live on that shard (CommandSpec::script_shard),
  // queued like a single-key command so that a run of them (and of other commands) for one shard
  // goes there in one hop.
  void Enqueue(const Parsed& cmd, int64_t now_ms, int script_shard = -1);
  // Whether a script command may join the queue (else it runs on its own, as before): not where
  // its run must feed MONITOR from this thread, or could see the client's tracking answer change.
  bool ScriptsJoinQueue() const;
  // Runs every queued command in order (runs_), waits for them and appends their replies.
  void FlushQueued();
  // PipelineRuns::Executor: items are queued_[begin, end).
  size_t RunItems(shard::Shard& s, size_t begin, size_t end) override;
  void RunLockedItems(unsigned sid, size_t begin, size_t end) override;
  void RunItemsInFiber(unsigned sid, size_t begin, size_t end) override;
  // In RunItemsInFiber: runs the queued script command queued_[i], its reply to its slot.
  void RunQueuedScript(size_t i);
  // Where the next reply goes: the output buffer, or a slot once a queued reply comes before it.
  std::string* NextReplyTarget(uint32_t* slot);
  // Replies "<code> <message>" (code "": message is the whole error, e.g. OOM's) for a command
  // refused before it runs (unknown, wrong arity, not allowed while subscribed, over maxmemory),
  // with Redis' MULTI rules: the transaction is flagged to abort, and a refused EXEC aborts it now
  // with EXECABORT. The refusal counts in the command's (or `sub`'s) rejected_calls.
  void Reject(const CommandSpec* spec, std::string_view message, std::string_view code = "ERR",
              const SubCommand* sub = nullptr);
  static std::string UnknownCommandMessage(ArgSlice args);
  // Command timing reads the clock once per command: a command's time runs from the previous
  // reading (the end of the command before it, or the start of the batch, or the end of a wait
  // that is not its own) to the reading after it. Reading the TSC twice per command cost ~3% of
  // a pipelined GET.
  uint64_t Tick() { return clock_tick_ = CommandClockNow(); }
  // Feeds the command just dispatched to MONITOR, once: after it ran, or when it blocks.
  void FeedMonitorsOnce() {
    if (!feed_monitors_) return;
    feed_monitors_ = false;
    FeedMonitors(state_, monitor_args_);
  }

  io::Proactor* proactor_;
  ConnectionState state_;
  core::RespParser parser_;
  core::ReplyBuilder rb_;
  uint64_t clock_tick_ = 0;  // the last Tick()

  // The socket: requests arrive in its input buffer, replies leave through its Send, which does
  // not block the fiber (a batch waits only if the previous send is still unfinished when its
  // own replies are ready).
  io::Stream stream_;

  std::vector<Parsed> parsed_;
  // The batch being executed: the args of all its commands (views into the stream's input
  // buffer, or into owned_args_).
  std::vector<std::string_view> args_;
  std::deque<std::string> owned_args_;  // copies of args the parser unescaped (quoted inline)
  std::string out_;                     // replies ready to send, in request order
  std::string push_out_;                // pushed messages waiting for the send path
  size_t out_capacity_ = 0;             // out_'s capacity when its last send gave it back
  // Output limits (ArmOutputCheck): out_'s size that calls for a check (SIZE_MAX: no limit), and
  // the bytes queued commands may write into their slots before the rest are skipped because
  // the client is going to be closed, and what they wrote (RunItems: one count, or one per shard
  // in the relaxed order, where shards run the connection's commands in parallel).
  size_t out_check_at_ = SIZE_MAX;
  size_t hard_left_ = SIZE_MAX;  // bytes of output before the hard limit, at the batch's start
  size_t slot_budget_ = SIZE_MAX;
  std::vector<size_t> slot_bytes_;
  int64_t soft_limit_since_ms_ = 0;  // when the soft output limit was exceeded; 0: it is not
  bool output_limit_hit_ = false;    // closing for the output limit: the replies are dropped
  ClientBufferPeaks peaks_;          // since the last TakeBufferPeaks
  bool batch_active_ = false;           // ProcessInput owns out_ and the send path
  size_t batch_input_bytes_ = 0;        // the requests of the running batch (CLIENT LIST qbuf)
  bool batch_writes_ = false;           // the batch ran writes whose replies wait for the AOF
  bool requests_left_ = false;          // the batch ended before the input: parse it, not recv
  bool closing_ = false;                // no more pushes: the connection is going away
  bool feed_monitors_ = false;          // the command just dispatched is shown to MONITORs
  ArgSlice monitor_args_;               // ... with these arguments
  // Positions in out_ are kept as out_sent_ + offset, so that they survive BeforeBlocking, which
  // sends out_ in the middle of a batch (out_sent_: the bytes of the batch's replies sent so far).
  size_t out_sent_ = 0;
  uint64_t blocked_since_ = 0;  // CommandClockNow() at BeforeBlocking
  uint64_t blocked_ticks_ = 0;  // the running command's time blocked, not counted as its own
  std::vector<std::string> slots_;  // replies that wait behind a queued one
  uint32_t used_slots_ = 0;
  // Commands waiting for their turn on their shards, in order, and the runs they form.
  std::vector<QueuedItem> queued_;
  int64_t queued_now_ms_ = 0;  // the batch's clock, read once on the connection's thread
  PipelineRuns runs_;
  // --pipeline_order=relaxed: commands on this thread's keys run at once, never queued.
  const bool relaxed_order_;
};

}  // namespace shardis::server
