// A client waiting in a blocking command (BLPOP & co. in blocking_family.cc, XREAD/XREADGROUP
// BLOCK in stream_family.cc): the client's side of a shard::Waiter. It lives in the command's
// fiber, sleeps until a shard serves it, its deadline passes or the peer hangs up, and takes
// back its registrations (Unregister) before it goes away.
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

class BlockedClient : public shard::Waiter {
 public:
  BlockedClient(ConnContext& ctx, std::span<const std::string_view> keys);

  // Sleeps until a shard serves the client, the deadline (Unix ms, 0: none) passes or the client
  // disconnects. True when served.
  bool Wait(int64_t deadline_ms);
  // Removes every registration, with a hop to each shard involved.
  void Unregister();
  bool disconnected() const { return poll_.fired; }

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
  HangUpPoll poll_;
};

}  // namespace shardis::server
