#include "server/connection.h"
#include "shard/journal_durability.h"

#include <absl/strings/str_cat.h>
#include <arpa/inet.h>
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <utility>

#include "core/cycle_clock.h"
#include "server/acl_user.h"
#include "server/acl_users.h"
#include "server/auth.h"
#include "server/client_buffers.h"
#include "server/client_pause.h"
#include "server/client_tracking.h"
#include "server/command_stats.h"
#include "server/http_connection.h"
#include "server/monitor.h"
#include "server/multi_family.h"
#include "server/persistence_status.h"
#include "server/pubsub.h"
#include "server/script_run.h"
#include "server/server_state.h"
#include "server/snapshot.h"
#include "server/subcommand.h"
#include "shard/shard_set.h"
#include "shard/transaction.h"

DEFINE_uint64(pubsub_output_limit, 0,
              "deprecated: sets the pubsub hard limit of --client_output_buffer_limit (bytes); "
              "0 leaves it");
// The deprecated flag still works: setting it sets the pubsub class's hard limit.
static bool ApplyPubSubOutputLimit(const char*, uint64_t bytes) {
  if (bytes != 0) {
    shardis::server::SetOutputBufferLimits(absl::StrCat(
        "pubsub ", bytes, " ",
        shardis::server::GetOutputBufferLimit(shardis::server::ClientClass::kPubSub).soft, " ",
        shardis::server::GetOutputBufferLimit(shardis::server::ClientClass::kPubSub)
            .soft_seconds));
  }
  return true;
}
DEFINE_validator(pubsub_output_limit, ApplyPubSubOutputLimit);

namespace shardis::server {

namespace {

// Reply slots larger than this are released after their batch, so one big reply does not pin
// memory for the rest of the connection's life; smaller ones are reused.
constexpr size_t kKeepBufferSize = 256 * 1024;
// A batch's argument views and parsed commands are kept for the next batch up to this many
// (1 MiB of views; pipelines of thousands of commands keep theirs), not after one huge MSET.
constexpr size_t kKeepArgs = 64 * 1024;

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

Connection::Connection(int fd, io::Proactor* proactor, std::unique_ptr<io::TlsSession> tls)
    : proactor_(proactor),
      stream_(proactor, fd, &ServerThreadState::current().stats().net),
      slot_bytes_(RelaxedPipelineOrder() ? shard::shard_set->size() : 1),
      runs_(proactor, this, &state_.handed_off),
      relaxed_order_(RelaxedPipelineOrder()) {
  state_.id = NextClientId();
  state_.thread = proactor->index();
  state_.handed_off.set_thread(state_.thread);
  state_.fd = fd;
  state_.created_ms = shard::NowMs();
  state_.last_interaction_ms = state_.created_ms;
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0)
    state_.addr = SockAddrToString(ss);
  len = sizeof(ss);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0)
    state_.laddr = SockAddrToString(ss);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  stream_.set_send_listener(this);
  if (tls != nullptr) stream_.set_tls(std::move(tls));
  state_.push = this;
  ResetConnectionUser(state_);
  // Registered from the start, so that a stopping server sees connections whose fiber has not
  // run yet.
  ServerThreadState::current().AddConnection(&state_);
}

Connection::~Connection() {
  // The stream (destroyed after this) closes the fd.
  ServerThreadState::current().RemoveConnection(&state_);
}

void Connection::Run() {
  bool sniffed = false;
  // A bulk header announces its length; the buffer grows for it, but never past the limit that
  // closes the client anyway.
  while (stream_.Read(std::min(parser_.bytes_needed(), QueryBufferLimit() + 1))) {
    if (!QueryBufferOk()) break;
    io::InputBuffer& in = stream_.input();
    if (!sniffed) [[unlikely]] {
      // HTTP on the RESP port (/metrics, /healthz for probes): told apart by its first line.
      const HttpSniff sniff = SniffHttp({in.unparsed(), in.unparsed_size()});
      if (sniff == HttpSniff::kNeedMore) continue;
      sniffed = true;
      if (sniff == HttpSniff::kHttp) {
        ServeHttp(&stream_);
        break;
      }
    }
    bool open = ProcessInput();
    while (open && requests_left_) open = ProcessInput();  // one request per batch, see there
    if (!open) break;
    in.ReleaseIfIdle();
  }
  // Nothing of this client may stay registered with its thread or the shards.
  closing_ = true;
  UnsubscribeAll(state_);
  if (state_.tracking.on) DisableTracking(state_);
  StopMonitoring(state_);
  // The buffer of a send in flight must outlive it, and the fd must stay open until it ends;
  // the same for the receive.
  stream_.StopReading();
  stream_.WaitSendDone();
  UnwatchAll(state_);
  state_.handed_off.Wait();  // the moving clients report to it
}

void Connection::Push(std::string_view bytes) {
  if (closing_) return;
  if (state_.monitor && push_out_.size() + bytes.size() > MonitorOutputLimit()) {
    // Too slow a reader: drop it. The fiber's recv (and any send) fails, and it cleans up.
    LOG_EVERY_N(INFO, 100) << "client " << state_.addr
                           << " closed for overcoming of output buffer limits (monitor)";
    Kill();
    return;
  }
  push_out_.append(bytes);
  if (!state_.monitor && OutputLimitReached()) return;
  MaybeSendPushes();
}

bool Connection::QueryBufferOk() {
  // Input counts wherever it waits: in the input buffer (a request in progress, or a batch's
  // requests while it runs) and in the stream's stash (received while the fiber was busy).
  const size_t qbuf = stream_.pending_input();
  peaks_.input = std::max(peaks_.input, InputMemory());
  parser_.set_max_bulk_len(ProtoMaxBulkLen());
  if (qbuf <= QueryBufferLimit()) [[likely]] return true;
  ++ServerThreadState::current().stats().client_query_buffer_limit_disconnections;
  std::string head;  // Redis logs the first 64 bytes, quoted
  const io::InputBuffer& in = stream_.input();
  core::AppendRepr(&head, std::string_view(in.unparsed(), in.unparsed_size()).substr(0, 64));
  LOG(WARNING) << "Closing client that reached max query buffer length: "
               << ClientInfoLine(state_) << " (qbuf initial bytes: " << head << ")";
  return false;
}

size_t Connection::InputMemory() const {
  return stream_.input_memory() + parser_.retained_bytes();
}

size_t Connection::PendingOutput() const {
  return out_.size() + stream_.unsent_bytes() + push_out_.size();
}

bool Connection::OutputLimitReached() {
  const ClientClass cls = state_.pubsub.count() > 0 ? ClientClass::kPubSub : ClientClass::kNormal;
  const OutputBufferLimit limit = GetOutputBufferLimit(cls);
  const size_t used = PendingOutput();
  peaks_.output = std::max(peaks_.output, used);
  const bool hard = limit.hard != 0 && used >= limit.hard;
  bool soft = limit.soft != 0 && used >= limit.soft;
  if (soft) {
    const int64_t now = shard::NowMs();
    if (soft_limit_since_ms_ == 0) {
      soft_limit_since_ms_ = now;
      soft = false;
    } else if (now - soft_limit_since_ms_ <= limit.soft_seconds * 1000) {
      soft = false;
    }
  } else {
    soft_limit_since_ms_ = 0;
  }
  if (!hard && !soft) return false;
  ++ServerThreadState::current().stats().client_output_buffer_limit_disconnections;
  LOG_EVERY_N(WARNING, 100) << "Client " << ClientInfoLine(state_)
                            << " scheduled to be closed ASAP for overcoming of output buffer "
                               "limits.";
  output_limit_hit_ = true;
  Kill();
  return true;
}

void Connection::CheckSoftOutputLimit() {
  // Also starts the soft limit's timer for output that grew past it between two checks.
  if (!state_.killed && !state_.monitor) OutputLimitReached();
}

void Connection::ArmOutputCheck() {
  const ClientClass cls = state_.pubsub.count() > 0 ? ClientClass::kPubSub : ClientClass::kNormal;
  const OutputBufferLimit limit = GetOutputBufferLimit(cls);
  // The soft limit's timer runs: this check resets it if the output fell below, or closes.
  if (soft_limit_since_ms_ != 0 && OutputLimitReached()) return;
  uint64_t at = UINT64_MAX;
  if (limit.hard != 0) at = limit.hard;
  if (limit.soft != 0) at = std::min(at, limit.soft);
  const size_t pending = PendingOutput();
  out_check_at_ = at == UINT64_MAX ? SIZE_MAX : at > pending ? size_t(at - pending) : 0;
  // Only the hard limit closes at once; the soft one must first last its seconds.
  hard_left_ = limit.hard == 0 ? SIZE_MAX : limit.hard > pending ? size_t(limit.hard - pending) : 0;
}

ClientBuffers Connection::Buffers() const {
  ClientBuffers b;
  // Redis' qbuf is its query buffer's length, which holds the requests of the last read until
  // they have all run; ours is the same: the requests of the batch running (a client listing
  // itself sees its CLIENT LIST) and the input not parsed yet wherever it waits (the input
  // buffer's unconsumed bytes, the stash). qbuf-free: the room left in the input buffer.
  b.qbuf = stream_.pending_input() + (batch_active_ ? batch_input_bytes_ : 0);
  b.qbuf_free = stream_.input().free_space();
  // argv-mem: Redis' argv_len_sum of the command running; ours the arguments of the batch
  // running (views into the input and the copies of unescaped ones), and MULTI's queued copies.
  if (batch_active_) {
    for (std::string_view a : args_) b.argv_mem += a.size();
  }
  for (const MultiState::Queued& q : state_.multi.queue) {
    for (const std::string& a : q.args) b.argv_mem += a.size();
  }
  // obl: Redis' fixed reply buffer (bufpos); ours the batch's replies being built. oll: Redis'
  // reply list length; ours the chunks waiting (a send in flight, pushes). omem: what the
  // output limits count (Redis' getClientOutputBufferMemoryUsage).
  b.obl = out_.size();
  b.oll = size_t(stream_.sending()) + size_t(!push_out_.empty());
  b.omem = PendingOutput();
  // tot-mem: Redis' getClientMemoryUsage, the allocations the client holds: ours the buffers'
  // capacities, the parser's retained vectors and the connection object.
  size_t slots = 0;
  for (const std::string& slot : slots_) slots += slot.capacity();
  b.tot_mem = sizeof(*this) + stream_.input_memory() + out_.capacity() +
              stream_.send_buffer_capacity() + push_out_.capacity() + slots + parser_.retained_bytes() +
              args_.capacity() * sizeof(std::string_view) + parsed_.capacity() * sizeof(Parsed) +
              queued_.capacity() * sizeof(QueuedItem) + b.argv_mem;
  return b;
}

ClientBufferPeaks Connection::TakeBufferPeaks() {
  ClientBufferPeaks peaks = peaks_;
  peaks_ = {InputMemory(), PendingOutput()};
  peaks.input = std::max(peaks.input, peaks_.input);
  peaks.output = std::max(peaks.output, peaks_.output);
  return peaks;
}

void Connection::Kill() {
  if (closing_) return;
  closing_ = true;
  state_.killed = true;
  push_out_.clear();
  // A TLS client gets close_notify first, as Redis' connection close sends it; the shutdown
  // that wakes this connection's fiber leaves no way to send it later.
  stream_.SendCloseNotify();
  ::shutdown(state_.fd, SHUT_RDWR);
}

void Connection::BeforeBlocking() {
  blocked_since_ = CommandClockNow();
  FeedMonitorsOnce();
  FlushMonitorFeed();
  // Dispatch ran everything queued before the command (FlushQueued): out_ holds every earlier
  // reply, in order, and nothing of the command's own. The commands after it wait behind it.
  if (out_.empty() && push_out_.empty()) return;
  // appendfsync always: replies of writes leave only once their journal records are on disk.
  // batch_writes_ stays set: the blocking command's own write (a pop served later) waits too.
  if (batch_writes_) shard::AwaitJournal();
  out_.append(push_out_);
  push_out_.clear();
  peaks_.output = std::max(peaks_.output, PendingOutput());
  out_sent_ += out_.size();
  SendReplies();  // a failed send closes the connection: the wait ends on the hang-up
}

void Connection::AfterBlocking() { blocked_ticks_ += CommandClockNow() - blocked_since_; }

void Connection::MaybeSendPushes() {
  if (batch_active_ || stream_.sending() || push_out_.empty() || closing_) return;
  stream_.StartSend(&push_out_);
}

void Connection::PushesAheadOfReply() {
  // The shards' messages to this client come back on the same rings as the hops' completions and
  // before them, so they are in push_out_ by now (a local shard delivers them inline).
  if (push_out_.empty() || state_.replies_altered()) return;
  DCHECK(runs_.empty());  // out_ holds every earlier reply
  out_.append(push_out_);
  push_out_.clear();
}

bool Connection::SendReplies() {
  // Redis' reply buffer starts at 16 KiB (PROTO_REPLY_CHUNK_BYTES) and its expands count the
  // times it had to grow: here, the replies outgrew the buffer they were written into, past that
  // size (a new connection's first replies growing an empty string are no expand).
  constexpr size_t kReplyBufferStart = 16 * 1024;
  if (out_.capacity() > std::max(out_capacity_, kReplyBufferStart)) [[unlikely]] {
    ++ServerThreadState::current().stats().reply_buffer_expands;
  }
  const bool sent = stream_.Send(&out_);
  out_capacity_ = out_.capacity();  // the buffer the stream gave back: the next batch's
  return sent;
}

bool Connection::ProcessInput() {
  batch_active_ = true;
  state_.executing = true;
  args_.clear();
  owned_args_.clear();
  out_.clear();
  out_sent_ = 0;
  used_slots_ = 0;
  bool keep_open = true;
  batch_input_bytes_ = 0;
  io::InputBuffer& in = stream_.input();
  const char* buf_begin = in.begin();
  const char* buf_end = in.end();
  // Parse every complete request before executing any: the batch is what gets routed.
  std::vector<Parsed>& parsed = parsed_;
  parsed.clear();
  std::string_view protocol_error;
  // Until it authenticates, a client's requests have Redis' smaller limits, and each is a batch
  // of its own that runs before the next is parsed: an AUTH lifts the limits for the requests
  // pipelined after it, as in Redis, which checks authRequired() as it parses each one.
  const bool unauthenticated = !state_.authenticated && AuthRequired();
  parser_.set_unauthenticated(unauthenticated);
  requests_left_ = false;
  while (in.unparsed_size() > 0) {
    auto r = parser_.Parse(in.unparsed(), in.unparsed_size());
    if (r == core::RespParser::Result::kNeedMore) break;
    if (r == core::RespParser::Result::kError) {
      protocol_error = parser_.error();
      keep_open = false;
      break;
    }
    const auto& a = parser_.args();
    if (!a.empty()) {
      Parsed p{uint32_t(args_.size()), uint32_t(a.size()), nullptr, false, 0, 0, 0,
               parser_.canonical()};
      for (std::string_view arg : a) {
        // Quoted inline arguments live in the parser, which the next request reuses: copy them.
        if (!arg.empty() && (arg.data() < buf_begin || arg.data() >= buf_end)) {
          arg = owned_args_.emplace_back(arg);
        }
        args_.push_back(arg);
      }
      parsed.push_back(p);
    }
    in.Consume(parser_.consumed());
    batch_input_bytes_ += parser_.consumed();
    parser_.Reset();
    if (unauthenticated) [[unlikely]] {
      requests_left_ = in.unparsed_size() > 0;
      break;
    }
  }

  PlanBatch();
  rb_.set_output(&out_);
  const uint64_t batch_tick = Tick();
  const int64_t now_ms = shard::NowMs();
  state_.last_interaction_ms = now_ms;
  ArmOutputCheck();
  for (const Parsed& p : parsed) {
    if (state_.replies_altered()) [[unlikely]] {
      DispatchSilenced(p, now_ms);
    } else {
      Dispatch(p, now_ms);
    }
    if (state_.tracking.caching) [[unlikely]] EndCachingAnswer(state_, p.spec);
    if (feed_monitors_) [[unlikely]] FeedMonitorsOnce();
    if (out_.size() > out_check_at_) [[unlikely]] OutputLimitReached();
    if (state_.close_after_reply || state_.killed) [[unlikely]] {
      keep_open = false;
      break;
    }
  }
  FlushQueued();
  FlushMonitorFeed();
  if (batch_writes_) [[unlikely]] {
    // appendfsync always: no reply before the journal records of the batch's writes are on
    // disk; one fsync serves every connection waiting for it (group commit). Otherwise the
    // batch waits only while a journal's backlog is over its bound.
    batch_writes_ = false;
    shard::AwaitJournal();
  }
  if (output_limit_hit_) [[unlikely]] {
    // Closed for its output: what it did not read is dropped, not sent.
    std::string().swap(out_);
    batch_active_ = false;
    return false;
  }
  if (!protocol_error.empty()) {
    ++ServerThreadState::current().stats().protocol_errors;
    rb_.set_output(&out_);
    rb_.Error(protocol_error);
    LOG_EVERY_N(INFO, 100) << "protocol error from " << state_.addr << ": " << protocol_error;
  }
  if (!keep_open && !stream_.sending() && !out_.empty()) {
    // Last words (QUIT, protocol error): write them at once and close right after, as Redis does,
    // so that a client sees the close as soon as it sees the reply.
    stream_.SendNow(&out_);
  }
  // Messages pushed while the batch ran go out after its replies.
  out_.append(push_out_);
  push_out_.clear();
  peaks_.output = std::max(peaks_.output, PendingOutput());
  const bool sent = out_.empty() || SendReplies();
  batch_active_ = false;
  if (state_.pending_user != nullptr) [[unlikely]] ApplyPendingAclUser(state_);
  state_.executing = false;
  // Idle time counts from the reply, as in Redis: a batch that ran long (a slow command, a wait
  // for a transaction or a pause) restamps it. A short one is close enough to its start.
  if (core::CycleClock::ToNs(clock_tick_ - batch_tick) > 100'000'000) {
    state_.last_interaction_ms = shard::NowMs();
  }
  if (args_.capacity() > kKeepArgs) [[unlikely]] {
    // Each command has an argument, so these are as large or smaller.
    std::vector<std::string_view>().swap(args_);
    std::vector<Parsed>().swap(parsed_);
    std::vector<std::string>().swap(slots_);
    std::vector<QueuedItem>().swap(queued_);
  }
  MaybeSendPushes();  // those pushed while Send waited for the previous send
  return sent && keep_open;
}

std::string* Connection::NextReplyTarget(uint32_t* slot) {
  if (runs_.empty()) {
    *slot = UINT32_MAX;
    return &out_;
  }
  // A remote reply comes before this one: keep request order by queueing into a slot.
  if (used_slots_ == slots_.size()) slots_.emplace_back();
  *slot = used_slots_++;
  slots_[*slot].clear();
  return &slots_[*slot];
}

namespace {

// Whether a command queued for EXEC has any of the flags.
bool MultiHasFlag(const ConnectionState& state, uint32_t flag) {
  for (const MultiState::Queued& q : state.multi.queue) {
    if (CallFlags(*q.spec, q.args.size() > 1 ? q.args[1] : "") & flag) return true;
  }
  return false;
}

// Whether EXEC would run a write: Redis counts it as a write command then (MISCONF).
bool MultiHasWrites(const ConnectionState& state) { return MultiHasFlag(state, kWrite); }

// Redis' processCommand: the OOM check applies to kDenyOom commands, to an EXEC that would run
// one, and to every command queued in MULTI except those that end or reset the transaction.
// flags: the call's (a container's subcommand's: XGROUP CREATE is kDenyOom).
bool NeedsMemoryAdmission(const CommandSpec& spec, uint32_t flags, const ConnectionState& state) {
  if (spec.name == "exec") return state.multi.active && MultiHasFlag(state, kDenyOom);
  if (state.multi.active) {
    return spec.name != "discard" && spec.name != "quit" && spec.name != "reset";
  }
  return (flags & kDenyOom) && spec.on_conn != nullptr;
}

}  // namespace

void Connection::PlanBatch() {
  const unsigned self = proactor_->index();
  unsigned local_keys = 0;
  // A pipeline mostly repeats one command: the previous request's name is compared first.
  std::string_view prev_name;
  const CommandSpec* prev_spec = nullptr;
  for (Parsed& p : parsed_) {
    ArgSlice args(args_.data() + p.begin, p.count);
    if (args[0] != prev_name || prev_spec == nullptr) {
      prev_name = args[0];
      prev_spec = Registry().Find(args[0]);
    }
    p.spec = prev_spec;
    p.arity_ok = p.spec != nullptr && ArityOk(*p.spec, args.size());
    p.on_shard = p.arity_ok && RunsOnShard(*p.spec, args);
    if (p.on_shard) {
      p.hash = core::HashBytes(args[1]);
      p.shard = shard::shard_set->ShardOf(args[1], p.hash);
      local_keys += p.shard == self;
    }
  }
  if (local_keys < 2) return;
  // Two interleaved passes: load the control bytes of every key, then (by the time they have
  // arrived) the slots they point at. The database is the current one; a SELECT inside the batch
  // only makes a prefetch useless, never wrong.
  shard::Db& db = shard::Shard::current()->db(state_.db);
  for (const Parsed& p : parsed_) {
    if (p.on_shard && p.shard == self) db.Prefetch(p.hash);
  }
  for (const Parsed& p : parsed_) {
    if (p.on_shard && p.shard == self) db.PrefetchSlots(p.hash);
  }
}

void Connection::Dispatch(const Parsed& cmd, int64_t now_ms) {
  ArgSlice args(args_.data() + cmd.begin, cmd.count);
  ServerThreadState::current().stats().commands_processed++;
  const CommandSpec* spec = cmd.spec;
  uint32_t slot;
  // Redis' processCommand checks, in its order. A rejected command inside MULTI makes EXEC
  // abort; a rejected EXEC ends the transaction at once (see Reject).
  if (!cmd.arity_ok) [[unlikely]] {
    if (spec == nullptr) {
      if (core::EqualsIgnoreCase(args[0], "post") || core::EqualsIgnoreCase(args[0], "host:"))
          [[unlikely]] {
        // Redis' securityWarningCommand: an HTTP request that is not ours (a browser or a
        // cross-protocol attack) is closed without a reply.
        LOG_EVERY_N(WARNING, 100) << "possible security attack detected: '" << args[0]
                                  << "' from " << state_.addr << "; connection aborted";
        state_.close_after_reply = true;
        return;
      }
      ++ServerThreadState::current().stats().unknown_commands;
      return Reject(spec, UnknownCommandMessage(args));
    }
    return Reject(spec, core::Concat("wrong number of arguments for '", core::ToLower(args[0]),
                                     "' command"));
  }
  // A container's subcommand is looked up (and its arity checked) before anything else, as
  // Redis looks up "container|sub" as a command of its own.
  const SubCommand* sub = nullptr;
  if (spec->container != nullptr && args.size() > 1) [[unlikely]] {
    std::string error;
    sub = CheckSub(*spec->container, args, &error);
    if (sub == nullptr) {
      // Redis counts a wrong arity against the subcommand, an unknown one against nothing.
      const SubCommand* known = FindSub(*spec->container, args[1]);
      return Reject(known != nullptr ? spec : nullptr, error, "ERR", known);
    }
  }
  // A container's flags are its subcommand's (XGROUP CREATE writes, XGROUP HELP does not).
  const uint32_t flags = sub != nullptr ? sub->flags : spec->flags;
  const bool write = flags & kWrite;
  // Redis' processCommand sets the client's command once it is found: a command refused from here
  // on (NOAUTH, NOPERM, OOM, ...) or waiting for CLIENT PAUSE is shown as cmd= (CLIENT LIST, the
  // client-info of ACL LOG).
  state_.last_command = spec->name;
  state_.last_subcommand = sub != nullptr ? sub->name : std::string_view();
  if (!state_.authenticated && AuthRequired() && !(spec->flags & kNoAuth)) [[unlikely]] {
    return Reject(spec, "Authentication required.", "NOAUTH");
  }
  if (!state_.user->unrestricted) [[unlikely]] {
    // A user with limits (the default user's +@all ~* &* skips this): checked once, here.
    if (std::string denial = CheckAclCall(state_, *spec, sub, args); !denial.empty()) {
      return Reject(spec, denial, "NOPERM", sub);
    }
  }
  // maxmemory: a kDenyOom command run on one shard is checked there (RunShardCommand); here the
  // ones that run in the connection and, as in Redis, anything queued in MULTI.
  bool evicted = false;  // the shards over their share evicted before this command
  if (shard::MemoryLimit::maxmemory() != 0) [[unlikely]] {
    if (NeedsMemoryAdmission(*spec, flags, state_)) {
      FlushQueued();  // admission may hop: what was queued before runs first
      const bool admitted = shard::AdmitUnderMaxMemory();
      evicted = true;
      PushesAheadOfReply();
      if (!admitted) return Reject(spec, shard::kOomError, /*code=*/"");
    } else if (shard::MemoryLimit::short_of_victims()) [[unlikely]] {
      // A shard over its share has nothing to evict: before this command (a read too, as Redis
      // evicts before every command), the others evict for it. A write that runs on one shard is
      // still admitted there.
      FlushQueued();
      (void)shard::AdmitUnderMaxMemory();
      evicted = true;
      PushesAheadOfReply();
    }
  }
  // Persistence: -MISCONF for writes (and PING, as Redis) after a failed background save, and
  // -LOADING while the dataset loads. One test of two rarely-written flags otherwise.
  if (PersistenceGateClosed()) [[unlikely]] {
    const bool is_write = write || spec->name == "ping" ||
                          (spec->name == "exec" && MultiHasWrites(state_));
    if (is_write) {
      if (const std::string denial = WritesDeniedByDiskError(); !denial.empty()) {
        return Reject(spec, denial, "MISCONF");
      }
    }
  }
  if (state_.pubsub.count() > 0 && !state_.resp3 && !AllowedWhileSubscribed(spec->name))
      [[unlikely]] {
    std::string name(spec->name);
    if (sub != nullptr) core::Append(&name, "|", sub->name);
    return Reject(spec, core::Concat("Can't execute '", name,
                                     "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / "
                                     "RESET are allowed in this context"));
  }
  if (Persistence().loading.load(std::memory_order_relaxed) &&
      !((sub != nullptr ? sub->flags : spec->flags) & kLoading)) [[unlikely]] {
    return Reject(spec, "Redis is loading the dataset in memory", "LOADING");
  }
  if (ScriptsBusy() && !(flags & kAllowBusy)) [[unlikely]] {
    // A script runs past busy-reply-threshold: only what may stop it (or ends a transaction)
    // gets through, as in Redis.
    return Reject(spec, BusyScriptError(), /*code=*/"");
  }
  if (PauseMaybeActive()) [[unlikely]] {
    // CLIENT PAUSE: what came before runs first; this one waits (or dies with the client).
    FlushQueued();
    if (!WaitWhilePaused(state_, *spec, args.size() > 1 ? args[1] : "")) return;
    Tick();  // the wait is not the command's time
  }
  if (shard::JournalWaitsActive()) [[unlikely]] {
    // The AOF is on: this batch's replies wait for its writes' journal records (ProcessInput).
    batch_writes_ |= write || (flags & kScript) || spec->name == "exec";
  }
  if (state_.multi.active) [[unlikely]] {
    FlushQueued();
    rb_.set_output(&out_);
    rb_.set_resp3(state_.resp3);
    ConnContext ctx{state_, rb_};
    if (QueueInMulti(spec, args, ctx)) return;
  }
  if (MonitorsActive()) [[unlikely]] {
    feed_monitors_ = true;
    monitor_args_ = args;
    // EVAL, EVALSHA, FCALL (Redis' skip_monitor): shown before the commands their script runs,
    // as Redis feeds them explicitly when they start.
    if (flags & kSkipMonitor) {
      FeedMonitorsOnce();
      FlushMonitorFeed();  // on its way before the script's lines, which may come from a worker
    }
  }

  if (cmd.on_shard) {
    // Redis' order: once a command waits for another shard, the ones after it wait for it.
    if (cmd.shard != proactor_->index() || !(runs_.empty() || relaxed_order_)) {
      return Enqueue(cmd, now_ms);
    }
    shard::Shard& shard = *shard::Shard::current();
    shard::TxQueue& txq = shard.tx_queue();
    if (txq.any_locks() && txq.Conflicts(state_.db, args[1], spec->flags & kWrite)) [[unlikely]] {
      // A transaction holds the key: queued, the command waits for it (RunLockedItems).
      Enqueue(cmd, now_ms);
      return FlushQueued();
    }
    std::string* target = NextReplyTarget(&slot);
    const size_t reply_at = target->size();
    rb_.set_output(target);
    rb_.set_resp3(state_.resp3);
    ShardContext ctx{shard, shard.db(state_.db), rb_, now_ms, cmd.hash};
    ctx.reader = TrackingReaderOf(state_);
    ctx.request = cmd.request;
    // Inline: nothing runs in between.
    shard::CurrentCommandClient() = {state_.id, nullptr, state_.no_touch};
    const uint64_t start = clock_tick_;
    RunShardCommand(*spec, args, ctx);
    RecordCall(*spec, spec->stats_id, Tick() - start, *target, reply_at, args,
               state_);
    shard.ServeBlocked(&state_.handed_off);
    state_.handed_off.Wait();  // the moves across shards it woke, before anything else of it
    return;
  }

  if (spec->script_shard != nullptr && ScriptsJoinQueue()) {
    // A script on one shard's keys is queued like a single-key command (when it would not run
    // here at once anyway): consecutive ones for a shard, with the plain commands between them,
    // go there in one hop (RunItemsInFiber) instead of one hop each.
    const int sid = spec->script_shard(args);
    if (sid >= 0 && (unsigned(sid) != proactor_->index() || !runs_.empty())) {
      return Enqueue(cmd, now_ms, sid);
    }
  }

  // Connection-level commands may hop and wait themselves; everything queued before them must
  // have run first, so that one client's commands keep their order.
  FlushQueued();
  if (shard::MemoryLimit::maxmemory() != 0 && !evicted) [[unlikely]] {
    // As Redis before every command (reads, PING and EXEC too; not while a script runs too long
    // or the dataset loads): the shards over their share evict if the process is over the limit
    // (only then a hop). A command that runs on one shard evicts there (RunShardCommand).
    if (!Persistence().loading.load(std::memory_order_relaxed) && !ScriptsBusy()) {
      (void)shard::AdmitUnderMaxMemory();
      PushesAheadOfReply();
    }
  }
  rb_.set_output(&out_);
  rb_.set_resp3(state_.resp3);
  ConnContext ctx{state_, rb_};
  const size_t reply_at = out_sent_ + out_.size();
  const uint64_t start = clock_tick_;
  // The Transactions the handler makes run as this client and, for a read-only command of a
  // tracking client, remember their keys (set here: another fiber may have changed it).
  shard::CurrentCommandClient() = state_.AsCommandClient(
      (flags & kReadOnly) && !(flags & kScript) ? TrackingReaderOf(state_) : nullptr);
  if (write) {
    // The Transactions the handler runs journal the command (Transaction::SendJournalPayload).
    shard::JournalCommand journal{state_.db, args, nullptr};
    shard::JournalCommandScope journal_scope(&journal);
    spec->on_conn(args, ctx);
  } else {
    spec->on_conn(args, ctx);
  }
  state_.handed_off.Wait();  // the moves across shards its writes woke (EXEC, LMOVE, scripts, ...)
  shard::CurrentCommandClient() = {};
  const uint64_t blocked = std::exchange(blocked_ticks_, 0);
  if (!std::exchange(state_.hung_up_while_blocked, false)) [[likely]] {
    RecordCall(*spec, StatsIdOf(*spec, sub), Tick() - start - blocked, out_, reply_at - out_sent_,
               args, state_);
  }
  if (state_.unblocked_by != nullptr) [[unlikely]] {
    std::exchange(state_.unblocked_by, nullptr)->Done();
  }
}

void Connection::DispatchSilenced(const Parsed& cmd, int64_t now_ms) {
  // Everything before this command is in out_ after the first flush; after the second, its reply
  // is exactly what follows the mark (an OFF or a SKIP that CLIENT REPLY ON ends keeps ON's +OK).
  state_.reply_skip = state_.reply_skip_next;
  state_.reply_skip_next = false;
  FlushQueued();
  const size_t sent_mark = out_sent_ + out_.size();
  Dispatch(cmd, now_ms);
  FlushQueued();
  const size_t mark = sent_mark - out_sent_;  // a blocking command sent what came before it
  // Subscription confirmations are pushes and go out anyway; an error reply (arity) does not.
  const bool pushed = cmd.spec != nullptr && RepliesArePushes(cmd.spec->name) &&
                      out_.size() > mark && out_[mark] != '-';
  if ((state_.reply_skip || state_.reply_off) && !pushed) out_.resize(mark);
  state_.reply_skip = false;
}

void Connection::Enqueue(const Parsed& cmd, int64_t now_ms, int script_shard) {
  if (used_slots_ == slots_.size()) slots_.emplace_back();
  const uint32_t slot = used_slots_++;
  slots_[slot].clear();
  const bool script = script_shard >= 0;
  queued_.push_back({cmd.spec, cmd.begin, cmd.count, slot, state_.db, state_.resp3,
                     TrackingReaderOf(state_) != nullptr, cmd.hash, clock_tick_, script,
                     cmd.request});
  queued_now_ms_ = now_ms;
  runs_.Add(script ? unsigned(script_shard) : cmd.shard, /*in_fiber=*/script);
}

bool Connection::ScriptsJoinQueue() const {
  // Not in the relaxed order (its shards run in parallel, inline in their loops); not while
  // MONITOR is on (the script's lines are fed from this thread after the command's own, see
  // RunScriptAtomically); not for a tracking client with OPTIN/OPTOUT, whose CLIENT CACHING answer
  // ends with the command's dispatch, before a queued script would read under it.
  // With one shard there is no other thread to bring a script to: it runs here either way.
  const TrackingState& t = state_.tracking;
  return shard::shard_set->size() > 1 && !relaxed_order_ && !MonitorsActive() &&
         (!t.on || (!t.optin && !t.optout));
}

void Connection::FlushQueued() {
  if (runs_.empty()) return;
  slot_budget_ = hard_left_ > out_.size() ? hard_left_ - out_.size() : 0;
  std::fill(slot_bytes_.begin(), slot_bytes_.end(), 0);
  runs_.RunAll();
  // Scripts run on their keys' threads leave their ACL denials for this one to log.
  if (!state_.deferred_acl_denials.empty()) [[unlikely]] LogDeferredAclDenials(state_);
  // A queued command is timed here, on the connection's thread, from its dispatch to its reply
  // being back (so its time includes the hops and the commands queued before it); one clock read
  // covers every reply of the flush.
  const uint64_t done = Tick();
  for (const QueuedItem& item : queued_) {
    RecordCall(*item.spec, item.spec->stats_id, done - item.start_tick,
               slots_[item.slot], 0,
               ArgSlice(args_.data() + item.args_begin, item.args_count), state_);
  }
  queued_.clear();
  for (uint32_t i = 0; i < used_slots_; ++i) {
    out_.append(slots_[i]);
    if (slots_[i].capacity() > kKeepBufferSize) [[unlikely]] std::string().swap(slots_[i]);
  }
  used_slots_ = 0;
  if (out_.size() > out_check_at_) [[unlikely]] OutputLimitReached();
}

size_t Connection::RunItems(shard::Shard& shard, size_t begin, size_t end) {
  // On the shard's thread (this connection's own, or inline in another's loop): the commands in
  // the order the client sent them.
  if (end - begin > 1) {
    // The same interleaved prefetch as for a batch's local keys (see PlanBatch).
    for (size_t i = begin; i < end; ++i) shard.db(queued_[i].db).Prefetch(queued_[i].hash);
    for (size_t i = begin; i < end; ++i) shard.db(queued_[i].db).PrefetchSlots(queued_[i].hash);
  }
  core::ReplyBuilder rb;
  shard::TxQueue& txq = shard.tx_queue();
  shard::CommandClientScope as_client(state_.AsCommandClient());
  // The client's output limit bounds the replies of a run too: once they pass what is left of it,
  // the client is going to be closed (FlushQueued), and, as Redis stops executing a client
  // scheduled to be closed, the rest are skipped rather than buffered.
  // Strict order runs one run at a time (each hop hands over to the next), so one count serves;
  // the relaxed order's shards run in parallel and each counts its own.
  size_t& produced = slot_bytes_[relaxed_order_ ? shard.id() : 0];
  if (produced > slot_budget_) [[unlikely]] return end - begin;
  size_t i = begin;
  for (; i < end; ++i) {
    const QueuedItem& item = queued_[i];
    ArgSlice args(args_.data() + item.args_begin, item.args_count);
    if (txq.any_locks() && txq.Conflicts(item.db, args[1], item.spec->flags & kWrite)) {
      break;  // this one and the rest wait for the transaction (RunLockedItems)
    }
    rb.set_output(&slots_[item.slot]);
    rb.set_resp3(item.resp3);
    ShardContext ctx{shard, shard.db(item.db), rb, queued_now_ms_, item.hash};
    if (item.tracked) [[unlikely]] ctx.reader = &state_.tracking.reader;
    ctx.request = item.request;
    RunShardCommand(*item.spec, args, ctx);
    // The clients its write made ready are served before the next command runs, as in Redis.
    shard.ServeBlocked(&state_.handed_off);
    produced += slots_[item.slot].size();
    if (produced > slot_budget_) [[unlikely]] {
      i = end;
      break;
    }
    if (state_.handed_off.pending()) [[unlikely]] {
      // It woke a BLMOVE that moves across shards: the rest waits until that is done.
      ++i;
      break;
    }
  }
  return i - begin;
}

void Connection::RunItemsInFiber(unsigned sid, size_t begin, size_t end) {
  // In a fiber on shard sid's thread, in order: the plain commands as any run's (those whose key
  // a transaction holds behind it), each script through its handler, which then runs it here
  // (RunScriptAtomically) and may wait for its transaction.
  size_t i = begin;
  while (i < end) {
    if (queued_[i].script) {
      RunQueuedScript(i++);
      continue;
    }
    size_t plain_end = i;
    while (plain_end < end && !queued_[plain_end].script) ++plain_end;
    PipelineRuns::Executor::RunItemsInFiber(sid, i, plain_end);
    i = plain_end;
  }
}

void Connection::RunQueuedScript(size_t i) {
  const QueuedItem& item = queued_[i];
  // The replies' budget, as in RunItems (only the strict order queues scripts: one count).
  size_t& produced = slot_bytes_[0];
  if (produced > slot_budget_) [[unlikely]] return;
  std::string& reply = slots_[item.slot];
  core::ReplyBuilder rb(&reply);
  rb.set_resp3(item.resp3);
  // The client's state holds still meanwhile: its fiber waits for this run, and what changes it
  // (SELECT, HELLO, CLIENT ...) runs on its own, after the queue.
  ConnContext ctx{state_, rb};
  shard::CommandClientScope as_client(state_.AsCommandClient());
  item.spec->on_conn(ArgSlice(args_.data() + item.args_begin, item.args_count), ctx);
  produced += reply.size();
}

void Connection::RunLockedItems(unsigned sid, size_t begin, size_t end) {
  // After the moves an earlier item woke, when this is the client's thread (the moves report
  // there); a worker elsewhere runs on, and the replies wait for them (PipelineRuns::RunAll).
  if (proactor_->index() == state_.thread) state_.handed_off.Wait();
  // Every item of a run has the same database (SELECT runs the queue first).
  std::vector<std::string_view> keys;
  keys.reserve(end - begin);
  for (size_t i = begin; i < end; ++i) keys.push_back(args_[queued_[i].args_begin + 1]);
  // The transaction takes it.
  shard::CurrentCommandClient() = state_.AsCommandClient();
  shard::Transaction tx(queued_[begin].db, keys, shard::Transaction::kWrite);
  shard::CurrentCommandClient() = {};
  DCHECK(tx.shards().size() == 1 && tx.shards()[0] == sid);
  tx.Run(
      [&](shard::TxShard& t) {
        core::ReplyBuilder rb;
        for (size_t i = begin; i < end; ++i) {
          const QueuedItem& item = queued_[i];
          rb.set_output(&slots_[item.slot]);
          rb.set_resp3(item.resp3);
          ShardContext ctx{t.shard, t.db, rb, t.now_ms, item.hash};
          if (item.tracked) [[unlikely]] ctx.reader = &state_.tracking.reader;
          ctx.request = item.request;
          RunShardCommand(*item.spec, ArgSlice(args_.data() + item.args_begin, item.args_count),
                          ctx);
        }
      },
      /*conclude=*/true);
}

void Connection::Reject(const CommandSpec* spec, std::string_view message, std::string_view code,
                        const SubCommand* sub) {
  if (spec != nullptr) RecordRejected(StatsIdOf(*spec, sub));
  if (state_.multi.active) state_.multi.aborted = true;
  if (spec != nullptr && spec->name == "exec") {
    // Redis' execCommandAbort, in or out of MULTI: any transaction ends here.
    FlushQueued();  // every earlier reply is in out_ (unwatching hops)
    DiscardMulti(state_);
    UnwatchAll(state_);
    rb_.set_output(&out_);
    rb_.set_resp3(state_.resp3);
    const bool coded = !code.empty() && code != "ERR";
    return rb_.Error(core::Concat("EXECABORT Transaction discarded because of: ", coded ? code : "",
                                  coded ? " " : "", message));
  }
  uint32_t slot;
  rb_.set_output(NextReplyTarget(&slot));
  rb_.set_resp3(state_.resp3);
  rb_.Error(code.empty() ? std::string(message) : core::Concat(code, " ", message));
}

std::string Connection::UnknownCommandMessage(ArgSlice args) {
  // As Redis: the name (at most 128 bytes) and the first args, quoted, in at most ~128 bytes:
  // unknown command 'foo', with args beginning with: 'a' 'b'
  std::string quoted;
  for (size_t i = 1; i < args.size() && quoted.size() < 128; ++i) {
    core::Append(&quoted, "'", args[i].substr(0, 128 - quoted.size()), "' ");
  }
  std::string msg = core::Concat("unknown command '", args[0].substr(0, 128),
                                 "', with args beginning with: ", quoted);
  for (char& c : msg) {
    if (c == '\r' || c == '\n') c = ' ';
  }
  return msg;
}

}  // namespace shardis::server
