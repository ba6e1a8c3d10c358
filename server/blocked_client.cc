#include "server/blocked_client.h"

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "server/server_state.h"
#include "shard/shard_set.h"

namespace shardis::server {

using boost::fibers::context;

BlockedClient::BlockedClient(ConnContext& ctx, std::span<const std::string_view> keys)
    : ctx_(ctx), keys_(keys), db_(ctx.conn.db), resp3_(ctx.rb.resp3()) {
  origin = io::Proactor::current()->index();
  wake = &BlockedClient::Wake;
  wake_arg = this;
  fiber_ = context::active();
}

void BlockedClient::HangUpPoll::Complete(int res) {
  done = true;
  fired = res > 0;
  if (client->sleeping_) context::active()->schedule(client->fiber_);
}

void BlockedClient::Wake(void* arg) {
  auto* c = static_cast<BlockedClient*>(arg);
  c->woken_ = true;
  if (c->sleeping_) context::active()->schedule(c->fiber_);
}

void BlockedClient::Sleep(int64_t deadline_ms) {
  sleeping_ = true;
  if (deadline_ms == 0) {
    fiber_->suspend();
  } else {
    const int64_t left = std::max<int64_t>(0, deadline_ms - shard::NowMs());
    fiber_->wait_until(std::chrono::steady_clock::now() + std::chrono::milliseconds(left));
  }
  sleeping_ = false;
}

bool BlockedClient::Wait(int64_t deadline_ms) {
  io::Proactor* proactor = io::Proactor::current();
  poll_ = HangUpPoll();
  poll_.client = this;
  proactor->PollAsync(ctx_.conn.fd, POLLRDHUP, &poll_);
  ThreadStats& stats = ServerThreadState::current().stats();
  ++stats.blocked_clients;
  if (deadline_ms != 0) ++stats.clients_in_timeout_table;
  ctx_.conn.blocked = this;
  unblocked_ = unblocked_with_error_ = false;
  if (ctx_.conn.push != nullptr) ctx_.conn.push->BeforeBlocking();
  bool served = false;
  for (;;) {
    if (woken_) {
      served = true;
      break;
    }
    if (unblocked_) break;  // CLIENT UNBLOCK gave up for it
    const bool expired = deadline_ms != 0 && shard::NowMs() >= deadline_ms;
    if ((expired || poll_.fired) && GiveUp()) break;
    // Not yet, or a shard claimed the client just now: its wake-up is on the way.
    Sleep(expired || poll_.fired ? 0 : deadline_ms);
  }
  if (!served && !unblocked_ && poll_.fired) ctx_.conn.hung_up_while_blocked = true;
  --stats.blocked_clients;
  if (deadline_ms != 0) --stats.clients_in_timeout_table;
  ctx_.conn.blocked = nullptr;
  woken_ = false;
  if (!poll_.done) proactor->CancelOp(&poll_);
  while (!poll_.done) Sleep(0);
  if (ctx_.conn.push != nullptr) ctx_.conn.push->AfterBlocking();
  return served;
}

bool BlockedClient::Unblock(bool with_error, shard::HandedOffWork* by) {
  if (!GiveUp()) return false;
  unblocked_ = true;
  unblocked_with_error_ = with_error;
  by->Add();
  ctx_.conn.unblocked_by = by;
  if (sleeping_) context::active()->schedule(fiber_);
  return true;
}

bool BlockedClient::ReplyIfUnblockedWithError(core::ReplyBuilder& rb) const {
  if (!unblocked_with_error_) return false;
  rb.Error(kUnblockedErr);
  return true;
}

void BlockedClient::Unregister() {
  if (keys_.empty()) return;
  std::vector<unsigned> sids;
  for (std::string_view key : keys_) sids.push_back(shard::shard_set->ShardOf(key));
  std::sort(sids.begin(), sids.end());
  sids.erase(std::unique(sids.begin(), sids.end()), sids.end());
  shard::shard_set->AwaitShards(sids, [&](shard::Shard& s) {
    for (std::string_view key : keys_) {
      if (shard::shard_set->ShardOf(key) == s.id()) s.blocking().Remove(db_, key, this);
    }
  });
}

}  // namespace shardis::server
