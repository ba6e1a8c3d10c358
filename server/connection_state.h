// ConnectionState: what commands may read and change about their client (the Connection class
// owns it and runs the fiber). Lives on the connection's thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <absl/container/flat_hash_set.h>

#include "server/acl_denial.h"
#include "server/client_buffers.h"
#include "shard/blocking.h"
#include "shard/tracking_table.h"
#include "shard/watch_table.h"

namespace shardis::server {

struct AclUser;
class BlockedClient;
struct CommandSpec;

// The memory a connection holds for its client, in CLIENT LIST's fields (Connection::Buffers says
// how each maps to Redis' meaning).
struct ClientBuffers {
  size_t qbuf = 0;       // input received and not yet executed
  size_t qbuf_free = 0;  // room left in the input buffer
  size_t argv_mem = 0;   // arguments of the commands being executed
  size_t obl = 0;        // replies of the batch being executed, not handed to a send yet
  size_t oll = 0;        // output chunks waiting: a send in flight, pending pushes
  size_t omem = 0;       // every output byte not sent yet (what the output limits count)
  size_t tot_mem = 0;    // all the connection's buffers (allocated sizes) and its structure
};

// Where messages pushed to a client outside its request/reply flow go (pub/sub), and what a
// command that waits tells its client. Implemented by the Connection; called on the connection's
// thread, from any fiber or from the loop.
class PushSink {
 public:
  virtual ~PushSink() = default;
  // Queues bytes (a complete RESP message) for sending after the replies already produced.
  virtual void Push(std::string_view bytes) = 0;
  // The connection's buffers now (CLIENT LIST, INFO mem_clients_normal).
  virtual ClientBuffers Buffers() const = 0;
  // The largest input and output the connection held since the last call (INFO's
  // client_recent_max_*); starts the next period from what it holds now.
  virtual ClientBufferPeaks TakeBufferPeaks() = 0;
  // Checks the output against client-output-buffer-limit without new output (Redis checks from
  // clientsCron too): closes it past the soft limit's seconds on a quiet channel.
  virtual void CheckSoftOutputLimit() = 0;
  // CLIENT KILL: closes the connection soon, from its own thread (any fiber or the loop): its
  // reads and sends fail, a command waiting (blocked, paused) gives up, and the fiber ends.
  virtual void Kill() = 0;
  // The running command is about to wait for data (BlockedClient: BLPOP & co., XREAD BLOCK,
  // WAIT), from its fiber. As Redis, which blocks a client only after it has written what the
  // commands before replied and fed the command to MONITOR: the replies of the batch so far leave
  // (after their journal records, under appendfsync always) and monitors see the command now.
  virtual void BeforeBlocking() = 0;
  // The wait is over: the time it took is not the command's (Redis' commandstats, SLOWLOG and
  // latency histograms count a blocked command's execution, not its wait).
  virtual void AfterBlocking() = 0;
};

// Pub/sub: the client's subscriptions (also registered in its thread's PubSubRegistry).
struct PubSubState {
  absl::flat_hash_set<std::string> channels;
  absl::flat_hash_set<std::string> patterns;
  absl::flat_hash_set<std::string> shard_channels;  // SSUBSCRIBE
  // Every subscription: the client is in subscribed state while it has one.
  size_t count() const { return channels.size() + patterns.size() + shard_channels.size(); }
  // What (P)(UN)SUBSCRIBE's replies count (Redis' clientSubscriptionsCount: no shard channels).
  size_t channels_and_patterns() const { return channels.size() + patterns.size(); }
};

// CLIENT TRACKING (client_tracking.h): client-side caching.
struct TrackingState {
  bool on = false;
  bool bcast = false, optin = false, optout = false, noloop = false;
  bool caching = false;          // CLIENT CACHING yes (OPTIN) or no (OPTOUT), for the next command
  bool broken_redirect = false;  // the redirect client went away
  uint64_t redirect = 0;         // the client id invalidations go to; 0: this client
  unsigned redirect_thread = 0;  // where that client lives
  std::vector<std::string> prefixes;  // BCAST
  shard::TrackedReader reader;        // this client, as the shards remember it
};

// MULTI: the commands queued for EXEC (copies: the input buffer is reused meanwhile).
struct MultiState {
  struct Queued {
    const CommandSpec* spec;
    std::vector<std::string> args;
  };
  bool active = false;   // between MULTI and EXEC/DISCARD
  bool aborted = false;  // a command was rejected while queueing: EXEC answers EXECABORT
  std::vector<Queued> queue;
};

struct ConnectionState {
  uint64_t id = 0;       // CLIENT ID: unique in the process, increasing
  unsigned thread = 0;   // the proactor the connection lives on
  int fd = -1;
  std::string addr;      // peer "ip:port"
  std::string laddr;     // local "ip:port"
  std::string name;      // CLIENT SETNAME
  int db = 0;            // SELECT
  bool resp3 = false;    // HELLO 3
  bool close_after_reply = false;  // QUIT, protocol errors
  int64_t created_ms = 0;
  int64_t last_interaction_ms = 0;
  // The command running now or last, for CLIENT LIST's cmd= ("config|get" for a subcommand):
  // names from the command table (static storage), so setting them per command costs no copy.
  std::string_view last_command;
  std::string_view last_subcommand;  // empty unless last_command is a container
  std::string lib_name, lib_ver;  // CLIENT SETINFO / HELLO SETNAME
  bool authenticated = true;  // false until AUTH while the default user has a password
  // The user the client runs as (acl_users.h): its rules, replaced as a whole when they change.
  // While the client's commands run (`executing`), a script of theirs may read `user` on another
  // thread, so new rules wait in `pending_user` until the batch ends (Redis too applies another
  // client's ACL change between one client's batches, never inside one).
  std::shared_ptr<const AclUser> user;
  std::shared_ptr<const AclUser> pending_user;
  bool pending_user_checks_subscriptions = false;  // ACL SETUSER's, not ACL LOAD's (acl_users.cc)
  // ACL LOG entries of denials in its scripts that ran on another thread, for this thread to add.
  std::vector<DeferredAclDenial> deferred_acl_denials;
  bool monitor = false;       // MONITOR (monitor.cc)
  bool killed = false;        // CLIENT KILL: the connection is closing
  // The blocking command it waits in now, if any (CLIENT LIST flag b, CLIENT UNBLOCK).
  BlockedClient* blocked = nullptr;
  // How that wait ended, for Dispatch once the command is over: the client hung up (Redis frees
  // it without counting the call in commandstats), or another client's CLIENT UNBLOCK ended it
  // and waits until the command has replied and been counted (unblocked_by.Done), as Redis does
  // both before CLIENT UNBLOCK replies.
  bool hung_up_while_blocked = false;
  shard::HandedOffWork* unblocked_by = nullptr;
  bool executing = false;     // its commands are running: not idle, however long they take
  bool no_evict = false;      // CLIENT NO-EVICT
  bool no_touch = false;      // CLIENT NO-TOUCH
  bool in_script = false;     // the client a script's commands run as (script_run.h)
  // CLIENT REPLY: OFF drops every reply; SKIP drops the reply of the command after it.
  bool reply_off = false;
  bool reply_skip_next = false;
  // The running command's reply is dropped (it follows SKIP); CLIENT REPLY ON keeps its own
  // reply by clearing it (Redis checks its flags when a reply is added; RESET leaves this one).
  bool reply_skip = false;
  bool replies_altered() const { return reply_off || reply_skip_next; }

  MultiState multi;
  // Inside EXEC or a script, a blocking command does not block, as in Redis.
  bool may_block() const { return !multi.active && !in_script; }
  // WATCH: the flag writers set, and the (db, key) pairs registered with the shards.
  std::unique_ptr<shard::WatchState> watch;
  std::vector<std::pair<int, std::string>> watched;

  PubSubState pubsub;
  TrackingState tracking;
  PushSink* push = nullptr;  // the connection itself
  // The BLMOVEs its writes woke that move across shards, and the commands its CLIENT UNBLOCK
  // ended: its commands wait for them (blocking.h).
  shard::HandedOffWork handed_off;
  // Who its commands run as, for the shards (CurrentCommandClient); reader: see CommandClient.
  shard::CommandClient AsCommandClient(const shard::TrackedReader* reader = nullptr) {
    return {id, reader, no_touch, &handed_off};
  }
};

// A client name or library attribute may only hold printable ASCII without spaces, as in Redis
// (validateClientAttr).
bool ValidClientAttr(std::string_view s);
// Redis' reply to a name ValidClientAttr refuses (CLIENT SETNAME, HELLO SETNAME).
inline constexpr std::string_view kClientNameErr =
    "ERR Client names cannot contain spaces, newlines or special characters.";

// The client's CLIENT LIST line without its newline, as Redis' log lines show a client
// (catClientInfoString). On the client's thread.
std::string ClientInfoLine(const ConnectionState& c);

}  // namespace shardis::server
