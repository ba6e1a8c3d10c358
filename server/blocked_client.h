// A client waiting in a blocking command (BLPOP & co. in blocking_family.cc, XREAD/XREADGROUP
// BLOCK in stream_family.cc, WAIT): the client's side of a shard::Waiter. It lives in the
// command's fiber, sleeps until a shard serves it, its deadline passes, the peer hangs up or
// CLIENT UNBLOCK ends the wait, and takes back its registrations (Unregister) before it goes
// away. While it waits, ConnectionState::blocked points at it.
#pragma once

#include <boost/fiber/context.hpp>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "io/proactor.h"
#include "server/command.h"
#include "server/connection_state.h"
#include "shard/blocking.h"

namespace shardis::server {

// The reply of a wait that CLIENT UNBLOCK ... ERROR ended.
inline constexpr std::string_view kUnblockedErr = "UNBLOCKED client unblocked via CLIENT UNBLOCK";

class BlockedClient : public shard::Waiter {
 public:
  // keys may be empty (WAIT): then only the deadline, a hang-up or CLIENT UNBLOCK end the wait.
  BlockedClient(ConnContext& ctx, std::span<const std::string_view> keys);

  // Sleeps until a shard serves the client, the deadline (Unix ms, 0: none) passes, the client
  // disconnects or CLIENT UNBLOCK ends the wait. True when served. A disconnect sets the
  // connection's hung_up_while_blocked.
  bool Wait(int64_t deadline_ms);
  // Removes every registration, with a hop to each shard involved.
  void Unregister();
  bool disconnected() const { return poll_.fired; }

  // CLIENT UNBLOCK, on the client's thread while it waits: ends the wait as a timeout would, or
  // (with_error) so that the command replies kUnblockedErr. False when a shard has claimed the
  // client already (it is being served). `by` is the CLIENT UNBLOCK caller's: it waits until this
  // command is over (replied and counted in commandstats), as Redis replies and counts an
  // unblocked command before CLIENT UNBLOCK returns (replyToBlockedClientTimedOut).
  bool Unblock(bool with_error, shard::HandedOffWork* by);
  // After a wait that was not served: whether CLIENT UNBLOCK ... ERROR ended it; if so, replies
  // the error on rb and returns true (the command then replies nothing else).
  bool ReplyIfUnblockedWithError(core::ReplyBuilder& rb) const;

 protected:
  ConnContext& ctx_;
  std::span<const std::string_view> keys_;
  const int db_;
  const bool resp3_;
  std::string reply_;  // written by the claiming shard before it wakes the fiber

 private:
  // Completes when the peer hangs up (or when cancelled), so a client that leaves while blocked
  // stops waiting at once.
  struct HangUpPoll final : io::IoOp {
    BlockedClient* client = nullptr;
    bool fired = false;
    bool done = false;
    void Complete(int res) override;
  };

  static void Wake(void* arg);
  void Sleep(int64_t deadline_ms);

  boost::fibers::context* fiber_;
  bool sleeping_ = false;
  bool woken_ = false;
  bool unblocked_ = false;             // CLIENT UNBLOCK ended the wait
  bool unblocked_with_error_ = false;  // ... with ERROR
  HangUpPoll poll_;
};

}  // namespace shardis::server
