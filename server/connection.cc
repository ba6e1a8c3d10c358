#include "server/connection.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/fiber/context.hpp>

#include <absl/strings/str_cat.h>
#include <glog/logging.h>

#include "server/server_state.h"
#include "shard/shard_set.h"

namespace shardis::server {

using boost::fibers::context;

namespace {

constexpr size_t kInitialReadSize = 16 * 1024;
// Buffers larger than this are released when the connection goes idle, so one big request does
// not pin memory for the rest of the connection's life.
constexpr size_t kKeepBufferSize = 256 * 1024;

std::string SockAddrToString(const sockaddr_storage& ss) {
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (ss.ss_family == AF_INET) {
    auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
    port = ntohs(a->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
    port = ntohs(a->sin6_port);
  }
  return absl::StrCat(host, ":", port);
}

bool ArityOk(const CommandSpec& spec, size_t argc) {
  return spec.arity >= 0 ? argc == size_t(spec.arity) : argc >= size_t(-spec.arity);
}

}  // namespace

Connection::Connection(int fd, io::Proactor* proactor) : proactor_(proactor) {
  state_.id = NextClientId();
  state_.thread = proactor->index();
  state_.fd = fd;
  state_.created_ms = shard::NowMs();
  state_.last_interaction_ms = state_.created_ms;
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0) state_.addr = SockAddrToString(ss);
  len = sizeof(ss);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0) state_.laddr = SockAddrToString(ss);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  send_op_.conn = this;
  batches_.resize(shard::shard_set->size());
  for (unsigned i = 0; i < batches_.size(); ++i) {
    batches_[i].conn = this;
    batches_[i].shard = i;
  }
  // Registered from the start, so that a stopping server sees connections whose fiber has not
  // run yet.
  ServerThreadState::current().AddConnection(&state_);
}

Connection::~Connection() {
  ServerThreadState::current().RemoveConnection(&state_);
  close(state_.fd);
}

void Connection::Run() {
  fiber_ = context::active();
  while (ReadMore()) {
    if (!ProcessInput()) break;
  }
  // The buffer of a send in flight must outlive it, and the fd must stay open until it ends.
  WaitSendDone();
}

bool Connection::StartSend() {
  if (!WaitSendDone()) return false;
  sending_.swap(out_);
  if (out_.capacity() > kKeepBufferSize) std::string().swap(out_);
  send_offset_ = 0;
  send_in_flight_ = true;
  proactor_->SendAsync(state_.fd, sending_.data(), sending_.size(), &send_op_);
  return true;
}

bool Connection::WaitSendDone() {
  while (send_in_flight_) {
    waiting_send_ = true;
    fiber_->suspend();
    waiting_send_ = false;
  }
  return send_error_ == 0;
}

void Connection::SendOp::Complete(int res) {
  // In the proactor's loop, on the connection's thread.
  Connection* c = conn;
  if (res > 0 && c->send_offset_ + size_t(res) < c->sending_.size()) {
    // A short send (full socket buffer): send the rest.
    c->send_offset_ += size_t(res);
    c->proactor_->SendAsync(c->state_.fd, c->sending_.data() + c->send_offset_,
                            c->sending_.size() - c->send_offset_, this);
    return;
  }
  if (res <= 0) {
    c->send_error_ = res < 0 ? res : -EPIPE;
  } else {
    ServerThreadState::current().stats().net_output_bytes += c->sending_.size();
  }
  c->send_in_flight_ = false;
  if (c->waiting_send_) context::active()->schedule(c->fiber_);
}

bool Connection::ReadMore() {
  if (parse_start_ == filled_) {
    // Everything was consumed: start over at the front of the buffer.
    parse_start_ = filled_ = 0;
    if (in_.size() > kKeepBufferSize) std::string().swap(in_);
  }
  if (in_.empty()) in_.resize(kInitialReadSize);
  // Make room for the request in progress: move it to the front, then grow if it is still short
  // of what the parser knows it needs (a large bulk string arrives in one buffer).
  size_t needed = std::max(parser_.bytes_needed(), filled_ - parse_start_ + 1);
  if (in_.size() - parse_start_ < needed || filled_ == in_.size()) {
    if (parse_start_ > 0) {
      std::memmove(in_.data(), in_.data() + parse_start_, filled_ - parse_start_);
      filled_ -= parse_start_;
      parse_start_ = 0;
    }
    if (in_.size() < needed || filled_ == in_.size()) {
      in_.resize(std::max(needed, in_.size() * 2));
    }
  }
  int n = proactor_->Recv(state_.fd, in_.data() + filled_, in_.size() - filled_);
  if (n <= 0) return false;
  filled_ += size_t(n);
  ServerThreadState::current().stats().net_input_bytes += size_t(n);
  return true;
}

bool Connection::ProcessInput() {
  args_.clear();
  owned_args_.clear();
  out_.clear();
  used_slots_ = 0;
  bool keep_open = true;
  const char* buf_begin = in_.data();
  const char* buf_end = in_.data() + filled_;
  // Parse every complete request before executing any: the batch is what gets routed.
  std::vector<Parsed>& parsed = parsed_;
  parsed.clear();
  std::string_view protocol_error;
  while (parse_start_ < filled_) {
    auto r = parser_.Parse(in_.data() + parse_start_, filled_ - parse_start_);
    if (r == core::RespParser::Result::kNeedMore) break;
    if (r == core::RespParser::Result::kError) {
      protocol_error = parser_.error();
      keep_open = false;
      break;
    }
    const auto& a = parser_.args();
    if (!a.empty()) {
      Parsed p{uint32_t(args_.size()), uint32_t(a.size())};
      for (std::string_view arg : a) {
        // Quoted inline arguments live in the parser, which the next request reuses: copy them.
        if (!arg.empty() && (arg.data() < buf_begin || arg.data() >= buf_end)) {
          arg = owned_args_.emplace_back(arg);
        }
        args_.push_back(arg);
      }
      parsed.push_back(p);
    }
    parse_start_ += parser_.consumed();
    parser_.Reset();
  }

  rb_.set_output(&out_);
  for (const Parsed& p : parsed) {
    Dispatch(p.begin, p.count);
    if (state_.close_after_reply) {
      keep_open = false;
      break;
    }
  }
  FlushRemote();
  if (!protocol_error.empty()) {
    ++ServerThreadState::current().stats().protocol_errors;
    rb_.set_output(&out_);
    rb_.Error(protocol_error);
    LOG_EVERY_N(INFO, 100) << "protocol error from " << state_.addr << ": " << protocol_error;
  }
  if (!out_.empty() && !StartSend()) return false;
  return keep_open;
}

std::string* Connection::NextReplyTarget(uint32_t* slot) {
  if (pending_shards_.empty()) {
    *slot = UINT32_MAX;
    return &out_;
  }
  // A remote reply comes before this one: keep request order by queueing into a slot.
  if (used_slots_ == slots_.size()) slots_.emplace_back();
  *slot = used_slots_++;
  slots_[*slot].clear();
  return &slots_[*slot];
}

void Connection::Dispatch(uint32_t args_begin, uint32_t args_count) {
  ArgSlice args(args_.data() + args_begin, args_count);
  ServerThreadState::current().stats().commands_processed++;
  state_.last_interaction_ms = shard::NowMs();
  const CommandSpec* spec = Registry().Find(args[0]);
  uint32_t slot;
  if (spec == nullptr || !ArityOk(*spec, args.size())) {
    rb_.set_output(NextReplyTarget(&slot));
    rb_.set_resp3(state_.resp3);
    if (spec == nullptr) {
      ReplyUnknownCommand(args);
    } else {
      rb_.Error(WrongArgsError(args[0]));
    }
    return;
  }
  state_.last_command = spec->name;

  if (spec->on_shard != nullptr) {
    unsigned sid = shard::shard_set->ShardOf(args[1]);
    if (sid != proactor_->index()) {
      // Remote: reserve the reply's place and queue the command for its owner.
      if (used_slots_ == slots_.size()) slots_.emplace_back();
      slot = used_slots_++;
      slots_[slot].clear();
      RemoteBatch& batch = batches_[sid];
      if (batch.items.empty()) pending_shards_.push_back(sid);
      batch.items.push_back({spec, args_begin, args_count, slot, state_.db, state_.resp3});
      return;
    }
    rb_.set_output(NextReplyTarget(&slot));
    rb_.set_resp3(state_.resp3);
    shard::Shard& shard = *shard::Shard::current();
    ShardContext ctx{shard, shard.db(state_.db), rb_, shard::NowMs()};
    spec->on_shard(args, ctx);
    return;
  }

  // Connection-level commands may hop and wait themselves; everything queued before them must
  // have run first, so that one client's commands keep their order.
  FlushRemote();
  rb_.set_output(&out_);
  rb_.set_resp3(state_.resp3);
  ConnContext ctx{state_, rb_};
  spec->on_conn(args, ctx);
}

void Connection::FlushRemote() {
  if (pending_shards_.empty()) return;
  outstanding_ = int(pending_shards_.size());
  for (unsigned sid : pending_shards_) proactor_->SendHop(sid, &batches_[sid]);
  while (outstanding_ > 0) {
    waiting_ = true;
    fiber_->suspend();
    waiting_ = false;
  }
  for (unsigned sid : pending_shards_) batches_[sid].items.clear();
  pending_shards_.clear();
  for (uint32_t i = 0; i < used_slots_; ++i) out_.append(slots_[i]);
  used_slots_ = 0;
}

void Connection::RemoteBatch::Run() {
  // On the owning shard's thread: run the commands in the order the client sent them.
  shard::Shard& shard = *shard::Shard::current();
  const int64_t now = shard::NowMs();
  core::ReplyBuilder rb;
  for (const RemoteItem& item : items) {
    rb.set_output(&conn->slots_[item.slot]);
    rb.set_resp3(item.resp3);
    ShardContext ctx{shard, shard.db(item.db), rb, now};
    item.spec->on_shard(ArgSlice(conn->args_.data() + item.args_begin, item.args_count), ctx);
  }
}

void Connection::RemoteBatch::Done() {
  // Back on the connection's thread.
  if (--conn->outstanding_ == 0 && conn->waiting_) context::active()->schedule(conn->fiber_);
}

void Connection::ReplyUnknownCommand(ArgSlice args) {
  ++ServerThreadState::current().stats().unknown_commands;
  // As Redis: the name (at most 128 bytes) and the first args, quoted, in at most ~128 bytes:
  // ERR unknown command 'foo', with args beginning with: 'a' 'b'
  std::string quoted;
  for (size_t i = 1; i < args.size() && quoted.size() < 128; ++i) {
    core::Append(&quoted, "'", args[i].substr(0, 128 - quoted.size()), "' ");
  }
  std::string msg = core::Concat("ERR unknown command '", args[0].substr(0, 128),
                                 "', with args beginning with: ", quoted);
  for (char& c : msg) {
    if (c == '\r' || c == '\n') c = ' ';
  }
  rb_.Error(msg);
}

}  // namespace shardis::server
