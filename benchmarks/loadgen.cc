// loadgen: the load generator of benchmarks/run.sh (redis-benchmark cannot mix SET and GET).
//
// One thread drives N connections with epoll. Each connection sends a pipeline of P requests in
// one write, waits for all P replies, and sends the next pipeline (redis-benchmark's -P). The
// latency of a request is the time from the write of its pipeline to the read that completed its
// reply, recorded in a log-linear histogram (< 0.8% relative error). When the run ends it prints
// one line of key=value pairs (see kOutputHelp), so that scripts can pick figures by name.
//
//   loadgen --port 6379 --ratio 1:10 --pipeline 1 --duration 10 --server-pid 1234
//   loadgen --port 6379 --fill --keyspace 1000000 --pipeline 16       # SET key 0..N-1 once
//   loadgen --port 6379 --fill --keyspace 10000000 -c 4 -P 1          # fill latency: see max_us
//   loadgen --port 11211 --protocol memcache --ratio 0:1 --keys-per-get 10   # memcached multi-get
//
// It depends on nothing but libc and the standard library, and has its own reply parser: it only
// needs to find where each reply ends.
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace shardis::bench {
namespace {

constexpr const char* kUsage = R"(usage: loadgen [options]
  --host H           server address (default 127.0.0.1)
  --port N           server port (default 6379)
  -c, --connections N  connections, all on one thread (default 50)
  -P, --pipeline N   requests per pipeline; the next pipeline leaves when all replies are in (1)
  --ratio S:G        SET:GET mix, e.g. 1:10, 1:0 (only SET), 0:1 (only GET) (default 1:10)
  --keyspace N       keys are "key:%012d", uniform random in [0, N) (default 1000000)
  --value-size N     bytes per SET value (default 128)
  --random-value     the value is a fixed string of pseudo-random letters and digits (which
                     LZF, and so RDB compression, cannot shrink) instead of 'x' repeated
  --requests N       stop after N requests in all (default 100000 unless --duration)
  --duration S       stop sending after S seconds (fractions allowed)
  --fill             SET every key 0..keyspace-1 once, in order (ignores ratio/requests/duration)
  --server-pid PID   also measure the server's CPU time (utime+stime of all its threads, from
                     /proc/PID/stat) over the run, and operations per server CPU-second
  --seed N           random seed (default 1)
  --timeout S        fail when no reply arrives for S seconds (default 30)
  --progress         print progress to stderr every 10 s
SIGINT or SIGTERM stops sending: the replies in flight are read and the line below is printed, as
at the end of --duration (a script can run a load for as long as something else lasts).
  --protocol P       resp (default) or memcache (the memcached text protocol: set/get)
  --keys-per-get N   memcache only: each GET request is one `get` of N keys (default 1)
  --evalsha SHA      each GET request is `EVALSHA SHA 1 key` instead (a script on one key;
                     use --ratio 0:1)
)";

constexpr const char* kOutputHelp = R"(output (one line, key=value):
  ops, sets, gets, get_hits, get_misses, errors     replies received, by kind
  wall_s, ops_per_s                                  first write to last reply
  mean_us, p50_us, p99_us, p999_us, p9999_us, max_us  per-request latency
  max_at_s                                           when the slowest request was sent
  over_1ms, over_5ms                                 requests slower than 1 ms / 5 ms
  client_cpu_s, client_cpu_util                      this process' utime+stime (and / wall_s)
  server_cpu_s, server_cpu_util, ops_per_server_cpu_s  with --server-pid
  server_cpu_others_util, client_cpu_others_util     when the server / this process is pinned
                                                     to one CPU: the share of that CPU that
                                                     everything else took (/proc/stat)
)";

[[noreturn]] void Fail(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::fputs("loadgen: ", stderr);
  std::vfprintf(stderr, fmt, args);
  std::fputc('\n', stderr);
  va_end(args);
  std::exit(2);
}

// Set by SIGINT/SIGTERM: send no more pipelines (see kUsage).
volatile std::sig_atomic_t g_stop = 0;

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

// ------------------------------------------------------------------------------------------------
// Latency histogram: log-linear, like HdrHistogram. Values below 2^(kSubBits+1) have a bucket
// each; above, every power of two is split into 2^kSubBits equal buckets, so a bucket is at most
// 1/128 of its value wide. Record() is a clz, a shift and an increment.
// ------------------------------------------------------------------------------------------------
class Histogram {
 public:
  static constexpr int kSubBits = 7;
  static constexpr size_t kBuckets = size_t(64 - kSubBits + 1) << kSubBits;

  Histogram() : counts_(kBuckets, 0) {}

  void Record(uint64_t v) {
    ++counts_[Index(v)];
    ++total_;
    sum_ += v;
    max_ = std::max(max_, v);
  }

  uint64_t total() const { return total_; }
  uint64_t max() const { return max_; }
  double mean() const { return total_ ? double(sum_) / double(total_) : 0; }

  // The smallest recorded value v with at least p% of the values <= v, to the bucket's upper edge.
  uint64_t Percentile(double p) const {
    if (total_ == 0) return 0;
    uint64_t rank = std::max<uint64_t>(1, uint64_t(std::ceil(p / 100.0 * double(total_))));
    uint64_t seen = 0;
    for (size_t i = 0; i < kBuckets; ++i) {
      seen += counts_[i];
      if (seen >= rank) return std::min(HighestInBucket(i), max_);
    }
    return max_;
  }

  // How many values are above `v` (to bucket precision).
  uint64_t CountAbove(uint64_t v) const {
    uint64_t n = 0;
    for (size_t i = Index(v) + 1; i < kBuckets; ++i) n += counts_[i];
    return n;
  }

  static size_t Index(uint64_t v) {
    if (v < (uint64_t(2) << kSubBits)) return size_t(v);
    int msb = 63 - __builtin_clzll(v);
    int shift = msb - kSubBits;  // >= 1; v >> shift is in [2^kSubBits, 2^(kSubBits+1))
    return (size_t(shift) << kSubBits) + size_t(v >> shift);
  }

  static uint64_t HighestInBucket(size_t i) {
    if (i < (size_t(2) << kSubBits)) return i;
    int shift = int(i >> kSubBits) - 1;
    uint64_t sub = i - (uint64_t(shift) << kSubBits);
    return ((sub + 1) << shift) - 1;
  }

 private:
  std::vector<uint64_t> counts_;
  uint64_t total_ = 0;
  uint64_t sum_ = 0;
  uint64_t max_ = 0;
};

// ------------------------------------------------------------------------------------------------
// CPU time of this process and of the server.
// ------------------------------------------------------------------------------------------------
double SelfCpuSeconds() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// utime+stime of every thread of `pid`, live or exited (the process line of /proc/PID/stat sums
// them), in seconds; clock-tick resolution (getconf CLK_TCK, usually 10 ms).
double ProcessCpuSeconds(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t paren = stat.rfind(')');  // the command name may contain spaces and parentheses
  if (stat.empty() || paren == std::string::npos) Fail("cannot read /proc/%d/stat", pid);
  std::istringstream fields(stat.substr(paren + 2));
  std::string field;
  uint64_t utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {  // fields are numbered from 1; state is 3
    if (i == 14) utime = std::strtoull(field.c_str(), nullptr, 10);
    if (i == 15) stime = std::strtoull(field.c_str(), nullptr, 10);
  }
  return double(utime + stime) / double(sysconf(_SC_CLK_TCK));
}

// The one CPU `pid` (0: this process) may run on, or -1 when it may run on several.
int PinnedCpu(int pid) {
  cpu_set_t set;
  if (sched_getaffinity(pid, sizeof(set), &set) != 0 || CPU_COUNT(&set) != 1) return -1;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) return cpu;
  }
  return -1;
}

// Seconds CPU `cpu` has not been idle (user, nice, system, irq, softirq and steal in /proc/stat):
// with a process pinned there, the busy time minus the process' CPU time is what everything else
// on the machine took from it.
double CpuBusySeconds(int cpu) {
  std::ifstream in("/proc/stat");
  std::string line, prefix = "cpu" + std::to_string(cpu) + " ";
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) != 0) continue;
    std::istringstream fields(line.substr(prefix.size()));
    uint64_t v[8] = {};
    for (uint64_t& x : v) fields >> x;  // user nice system idle iowait irq softirq steal
    return double(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / double(sysconf(_SC_CLK_TCK));
  }
  return 0;
}

// ------------------------------------------------------------------------------------------------
// Options.
// ------------------------------------------------------------------------------------------------
struct Options {
  std::string host = "127.0.0.1";
  int port = 6379;
  int connections = 50;
  int pipeline = 1;
  uint32_t set_weight = 1;
  uint32_t get_weight = 10;
  uint64_t keyspace = 1000000;
  size_t value_size = 128;
  bool random_value = false;
  uint64_t requests = 0;
  double duration_s = 0;
  bool fill = false;
  int server_pid = 0;
  uint64_t seed = 1;
  double timeout_s = 30;
  bool progress = false;
  bool memcache = false;
  int keys_per_get = 1;
  std::string evalsha;
};

uint64_t ParseUint(const char* flag, const std::string& s) {
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno != 0 || s[0] == '-')
    Fail("bad value for %s: %s", flag, s.c_str());
  return v;
}

Options ParseOptions(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    bool has_inline_value = false;
    if (size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_inline_value = true;
    }
    auto next = [&]() -> std::string {
      if (has_inline_value) return value;
      if (i + 1 >= argc) Fail("%s needs a value", arg.c_str());
      return argv[++i];
    };
    const char* a = arg.c_str();
    if (arg == "--help" || arg == "-h") {
      std::printf("%s\n%s", kUsage, kOutputHelp);
      std::exit(0);
    } else if (arg == "--host") {
      o.host = next();
    } else if (arg == "--port" || arg == "-p") {
      o.port = int(ParseUint(a, next()));
    } else if (arg == "--connections" || arg == "-c") {
      o.connections = int(ParseUint(a, next()));
    } else if (arg == "--pipeline" || arg == "-P") {
      o.pipeline = int(ParseUint(a, next()));
    } else if (arg == "--ratio") {
      std::string r = next();
      size_t colon = r.find(':');
      if (colon == std::string::npos) Fail("--ratio wants SET:GET, e.g. 1:10");
      o.set_weight = uint32_t(ParseUint(a, r.substr(0, colon)));
      o.get_weight = uint32_t(ParseUint(a, r.substr(colon + 1)));
    } else if (arg == "--keyspace") {
      o.keyspace = ParseUint(a, next());
    } else if (arg == "--value-size") {
      o.value_size = ParseUint(a, next());
    } else if (arg == "--random-value") {
      o.random_value = true;
    } else if (arg == "--requests" || arg == "-n") {
      o.requests = ParseUint(a, next());
    } else if (arg == "--duration") {
      std::string d = next();
      char* end = nullptr;
      o.duration_s = std::strtod(d.c_str(), &end);
      if (d.empty() || *end != '\0' || !(o.duration_s > 0))
        Fail("bad value for --duration: %s", d.c_str());
    } else if (arg == "--fill") {
      o.fill = true;
    } else if (arg == "--server-pid") {
      o.server_pid = int(ParseUint(a, next()));
    } else if (arg == "--evalsha") {
      o.evalsha = next();
      if (o.evalsha.size() != 40) Fail("--evalsha wants a 40-character SHA-1");
    } else if (arg == "--seed") {
      o.seed = ParseUint(a, next());
    } else if (arg == "--timeout") {
      o.timeout_s = double(ParseUint(a, next()));
    } else if (arg == "--progress") {
      o.progress = true;
    } else if (arg == "--protocol") {
      std::string p = next();
      if (p != "resp" && p != "memcache") Fail("--protocol must be resp or memcache");
      o.memcache = p == "memcache";
    } else if (arg == "--keys-per-get") {
      o.keys_per_get = int(ParseUint(a, next()));
    } else {
      Fail("unknown option %s (see --help)", argv[i]);
    }
  }
  if (o.connections < 1 || o.pipeline < 1) Fail("--connections and --pipeline must be >= 1");
  if (o.keyspace < 1 || o.keyspace > 1000000000000ull) Fail("--keyspace must be in [1, 10^12]");
  if (o.set_weight + o.get_weight == 0) Fail("--ratio 0:0 sends nothing");
  if (o.keys_per_get < 1 || (o.keys_per_get > 1 && !o.memcache))
    Fail("--keys-per-get must be >= 1, and above 1 only with --protocol memcache");
  if (!o.fill && o.requests == 0 && o.duration_s == 0) o.requests = 100000;
  return o;
}

// ------------------------------------------------------------------------------------------------
// The load.
// ------------------------------------------------------------------------------------------------

// splitmix64: small, fast, good enough to pick keys.
struct Rng {
  uint64_t state;
  uint64_t Next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint64_t Below(uint64_t n) { return uint64_t((__uint128_t(Next()) * n) >> 64); }  // Lemire
};

struct Conn {
  int fd = -1;
  int index = 0;
  Rng rng{0};
  uint64_t mix_counter = 0;  // position in the SET:GET cycle
  // Output: the current pipeline, and how much of it the socket took.
  std::string out;
  size_t out_sent = 0;
  bool want_write = false;
  // Input: unparsed bytes (never a whole bulk body: bodies are skipped as they arrive).
  std::unique_ptr<char[]> in;
  size_t in_len = 0;
  uint64_t skip = 0;  // bytes of a bulk body (+ CRLF) still to come
  int pending = 0;    // replies still expected for the current pipeline
  int values = 0;     // memcache: VALUE blocks of the get reply being read
  uint64_t sent_ns = 0;
  bool done = false;
};

constexpr size_t kInBuffer = 256 * 1024;

class LoadGen {
 public:
  explicit LoadGen(const Options& o) : o_(o) {
    std::string value(o.value_size, 'x');
    if (o.random_value) {
      static constexpr char kChars[] =
          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
      Rng rng{0x5eed};
      for (char& ch : value) ch = kChars[rng.Below(sizeof(kChars) - 1)];
    }
    value_tail_ = std::string(o.memcache ? " 0 0 " : "$") + std::to_string(o.value_size) + "\r\n" +
                  value + "\r\n";
  }

  void Connect();
  void Run();
  void Print() const;

 private:
  // Builds and sends the next pipeline of `c`, or marks it done when there is no more work.
  void StartPipeline(Conn& c, uint64_t now);
  void Flush(Conn& c);
  void OnReadable(Conn& c);
  void OnReply(Conn& c, uint64_t now);
  void SetWriteInterest(Conn& c, bool on);
  void AppendRequest(Conn& c, bool is_set, uint64_t key);
  // Consumes the reply line buf[pos, line_end) (memcache: a reply ends at its END line).
  void OnRespLine(Conn& c, const char* line, size_t len, uint64_t now);
  void OnMemcacheLine(Conn& c, const char* line, size_t len, uint64_t now);
  void OnError(Conn& c, const char* line, size_t len, uint64_t now);

  Options o_;
  std::string value_tail_;
  std::vector<Conn> conns_;
  int epoll_fd_ = -1;
  int active_ = 0;
  Histogram hist_;

  uint64_t issued_ = 0;     // requests handed out (--requests / --fill)
  uint64_t fill_next_ = 0;  // next key to fill
  uint64_t deadline_ns_ = 0;
  uint64_t start_ns_ = 0, end_ns_ = 0, last_reply_ns_ = 0;
  uint64_t sets_ = 0, gets_ = 0, hits_ = 0, misses_ = 0, errors_ = 0, completed_ = 0;
  uint64_t max_sent_ns_ = 0;  // when the slowest request was sent
  double client_cpu_s_ = 0, server_cpu_s_ = 0;
  // The CPUs the server and this process are pinned to (-1: not pinned to one), and how long
  // other processes kept them busy during the run.
  int server_cpu_ = -1, client_cpu_ = -1;
  double server_cpu_others_s_ = 0, client_cpu_others_s_ = 0;
};

void LoadGen::Connect() {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* addrs = nullptr;
  std::string port = std::to_string(o_.port);
  if (int rc = getaddrinfo(o_.host.c_str(), port.c_str(), &hints, &addrs); rc != 0) {
    Fail("cannot resolve %s: %s", o_.host.c_str(), gai_strerror(rc));
  }
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  conns_.resize(o_.connections);
  // Each connection's generator starts at an output of one seeded from --seed. (A start of
  // seed + i * the generator's own step made connection i's keys connection 0's, i steps later:
  // 50 connections wrote ~1/50 of the keyspace, in lockstep.)
  Rng seeds{o_.seed * 0x100000001b3ull};
  for (int i = 0; i < o_.connections; ++i) {
    Conn& c = conns_[i];
    c.index = i;
    c.rng.state = seeds.Next();
    c.mix_counter = uint64_t(i);  // connections start at different points of the SET:GET cycle
    c.in.reset(new char[kInBuffer]);
    c.fd = socket(addrs->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c.fd < 0 || connect(c.fd, addrs->ai_addr, addrs->ai_addrlen) != 0) {
      Fail("connection %d to %s:%d: %s", i, o_.host.c_str(), o_.port, std::strerror(errno));
    }
    int one = 1;
    setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    fcntl(c.fd, F_SETFL, fcntl(c.fd, F_GETFL) | O_NONBLOCK);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = uint32_t(i);
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c.fd, &ev);
  }
  freeaddrinfo(addrs);
}

void LoadGen::AppendRequest(Conn& c, bool is_set, uint64_t key) {
  char buf[12];
  for (int i = 11; i >= 0; --i, key /= 10) buf[i] = char('0' + key % 10);
  if (!o_.memcache && !is_set && !o_.evalsha.empty()) {
    c.out.append("*4\r\n$7\r\nEVALSHA\r\n$40\r\n");
    c.out.append(o_.evalsha);
    c.out.append("\r\n$1\r\n1\r\n$16\r\nkey:");
    c.out.append(buf, 12);
    c.out.append("\r\n", 2);
    return;
  }
  if (!o_.memcache) {
    c.out.append(is_set ? "*3\r\n$3\r\nSET\r\n" : "*2\r\n$3\r\nGET\r\n", 13);
    c.out.append("$16\r\nkey:", 9);
    c.out.append(buf, 12);
    c.out.append("\r\n", 2);
    if (is_set) c.out.append(value_tail_);
    return;
  }
  if (is_set) {
    c.out.append("set key:", 8);
    c.out.append(buf, 12);
    c.out.append(value_tail_);
    return;
  }
  c.out.append("get key:", 8);
  c.out.append(buf, 12);
  for (int k = 1; k < o_.keys_per_get; ++k) {
    uint64_t more = c.rng.Below(o_.keyspace);
    for (int i = 11; i >= 0; --i, more /= 10) buf[i] = char('0' + more % 10);
    c.out.append(" key:", 5);
    c.out.append(buf, 12);
  }
  c.out.append("\r\n", 2);
}

void LoadGen::StartPipeline(Conn& c, uint64_t now) {
  int n = o_.pipeline;
  if (o_.fill) {
    n = int(std::min<uint64_t>(uint64_t(n), o_.keyspace - fill_next_));
  } else if (o_.requests > 0) {
    n = int(std::min<uint64_t>(uint64_t(n), o_.requests - issued_));
  }
  if ((deadline_ns_ != 0 && now >= deadline_ns_) || g_stop) n = 0;
  if (n <= 0) {
    c.done = true;
    --active_;
    return;
  }
  issued_ += uint64_t(n);
  c.out.clear();
  c.out_sent = 0;
  const uint64_t cycle = uint64_t(o_.set_weight) + o_.get_weight;
  for (int i = 0; i < n; ++i) {
    bool is_set;
    uint64_t key;
    if (o_.fill) {
      is_set = true;
      key = fill_next_++;
    } else {
      is_set = c.mix_counter++ % cycle < o_.set_weight;
      key = c.rng.Below(o_.keyspace);
    }
    AppendRequest(c, is_set, key);
    ++(is_set ? sets_ : gets_);
  }
  c.pending = n;
  c.sent_ns = now;
  Flush(c);
}

void LoadGen::SetWriteInterest(Conn& c, bool on) {
  if (c.want_write == on) return;
  c.want_write = on;
  epoll_event ev{};
  ev.events = EPOLLIN | (on ? uint32_t(EPOLLOUT) : 0u);
  ev.data.u32 = uint32_t(c.index);
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev);
}

void LoadGen::Flush(Conn& c) {
  while (c.out_sent < c.out.size()) {
    ssize_t w = send(c.fd, c.out.data() + c.out_sent, c.out.size() - c.out_sent, MSG_NOSIGNAL);
    if (w > 0) {
      c.out_sent += size_t(w);
    } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      SetWriteInterest(c, true);
      return;
    } else if (w < 0 && errno == EINTR) {
      continue;
    } else {
      Fail("connection %d: send: %s (after %" PRIu64 " replies in all)", c.index,
           std::strerror(errno), completed_);
    }
  }
  SetWriteInterest(c, false);
}

void LoadGen::OnReply(Conn& c, uint64_t now) {
  uint64_t latency = now - c.sent_ns;
  if (latency > hist_.max()) max_sent_ns_ = c.sent_ns;
  hist_.Record(latency);
  --c.pending;
  ++completed_;
  last_reply_ns_ = now;
}

void LoadGen::OnError(Conn& c, const char* line, size_t len, uint64_t now) {
  if (errors_++ == 0) std::fprintf(stderr, "loadgen: first error reply: %.*s\n", int(len), line);
  OnReply(c, now);
}

void LoadGen::OnRespLine(Conn& c, const char* line, size_t len, uint64_t now) {
  switch (line[0]) {
    case '+':
    case ':':
      return OnReply(c, now);
    case '-':
      return OnError(c, line, len, now);
    case '$': {
      int64_t n = std::strtoll(line + 1, nullptr, 10);
      if (n < 0) {
        ++misses_;
        return OnReply(c, now);
      }
      ++hits_;
      c.skip = uint64_t(n) + 2;
      return;
    }
    default:
      Fail("connection %d: unexpected reply: %.*s", c.index, int(std::min<size_t>(len, 80)), line);
  }
}

void LoadGen::OnMemcacheLine(Conn& c, const char* line, size_t len, uint64_t now) {
  const std::string_view l(line, len > 0 && line[len - 1] == '\r' ? len - 1 : len);
  if (l == "STORED") return OnReply(c, now);
  if (l.rfind("VALUE ", 0) == 0) {  // VALUE <key> <flags> <bytes>: its block follows
    ++hits_;
    ++c.values;
    c.skip = std::strtoull(line + l.rfind(' ') + 1, nullptr, 10) + 2;
    return;
  }
  if (l == "END") {
    misses_ += uint64_t(std::max(0, o_.keys_per_get - c.values));
    c.values = 0;
    return OnReply(c, now);
  }
  if (l.find("ERROR") != std::string_view::npos) return OnError(c, line, len, now);
  Fail("connection %d: unexpected reply: %.*s", c.index, int(std::min<size_t>(len, 80)), line);
}

void LoadGen::OnReadable(Conn& c) {
  ssize_t r;
  do {
    r = recv(c.fd, c.in.get() + c.in_len, kInBuffer - c.in_len, 0);
  } while (r < 0 && errno == EINTR);
  if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
  if (r <= 0) {
    Fail("connection %d closed by the server (%s) with %d replies outstanding, after %" PRIu64
         " replies in all",
         c.index, r == 0 ? "EOF" : std::strerror(errno), c.pending, completed_);
  }
  const uint64_t now = NowNs();
  char* buf = c.in.get();
  size_t len = c.in_len + size_t(r);
  size_t pos = 0;
  while (true) {
    if (c.skip > 0) {  // inside a bulk body
      size_t take = size_t(std::min<uint64_t>(c.skip, len - pos));
      pos += take;
      c.skip -= take;
      if (c.skip > 0) break;
      if (!o_.memcache) OnReply(c, now);  // memcache: the reply goes on until END
      continue;
    }
    if (pos >= len) break;
    char* nl = static_cast<char*>(std::memchr(buf + pos, '\n', len - pos));
    if (nl == nullptr) break;
    size_t line_end = size_t(nl - buf);
    if (c.pending <= 0) Fail("connection %d: a reply that nobody asked for", c.index);
    if (o_.memcache) {
      OnMemcacheLine(c, buf + pos, line_end - pos, now);
    } else {
      OnRespLine(c, buf + pos, line_end - pos, now);
    }
    pos = line_end + 1;
  }
  if (pos < len) std::memmove(buf, buf + pos, len - pos);
  c.in_len = len - pos;
  if (c.in_len == kInBuffer)
    Fail("connection %d: a reply line longer than %zu bytes", c.index, kInBuffer);
  if (c.pending == 0 && c.skip == 0) {
    if (c.in_len != 0) Fail("connection %d: %zu bytes after the last reply", c.index, c.in_len);
    StartPipeline(c, now);
  }
}

void LoadGen::Run() {
  client_cpu_ = PinnedCpu(0);
  if (o_.server_pid) server_cpu_ = PinnedCpu(o_.server_pid);
  double server_busy0 = server_cpu_ >= 0 ? CpuBusySeconds(server_cpu_) : 0;
  double client_busy0 = client_cpu_ >= 0 ? CpuBusySeconds(client_cpu_) : 0;
  double server_cpu0 = o_.server_pid ? ProcessCpuSeconds(o_.server_pid) : 0;
  double client_cpu0 = SelfCpuSeconds();
  start_ns_ = NowNs();
  last_reply_ns_ = start_ns_;
  if (o_.duration_s > 0) deadline_ns_ = start_ns_ + uint64_t(o_.duration_s * 1e9);
  active_ = int(conns_.size());
  for (Conn& c : conns_) StartPipeline(c, start_ns_);

  uint64_t next_progress = start_ns_ + 10000000000ull;
  std::vector<epoll_event> events(conns_.size());
  while (active_ > 0) {
    int n = epoll_wait(epoll_fd_, events.data(), int(events.size()), 1000);
    if (n < 0 && errno != EINTR) Fail("epoll_wait: %s", std::strerror(errno));
    for (int i = 0; i < n; ++i) {
      Conn& c = conns_[events[i].data.u32];
      if (c.done) continue;
      if (events[i].events & EPOLLOUT) Flush(c);
      if (events[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) OnReadable(c);
    }
    uint64_t now = NowNs();
    if (double(now - last_reply_ns_) > o_.timeout_s * 1e9) {
      Fail("no reply for %.0f s (%" PRIu64 " replies so far, %d connections waiting)", o_.timeout_s,
           completed_, active_);
    }
    if (o_.progress && now >= next_progress) {
      std::fprintf(stderr, "loadgen: %.0f s: %" PRIu64 " replies, max latency so far %.3f ms\n",
                   double(now - start_ns_) / 1e9, completed_, double(hist_.max()) / 1e6);
      next_progress += 10000000000ull;
    }
  }
  end_ns_ = last_reply_ns_;
  client_cpu_s_ = SelfCpuSeconds() - client_cpu0;
  if (o_.server_pid) server_cpu_s_ = ProcessCpuSeconds(o_.server_pid) - server_cpu0;
  if (client_cpu_ >= 0 && client_cpu_ != server_cpu_) {
    client_cpu_others_s_ =
        std::max(0.0, CpuBusySeconds(client_cpu_) - client_busy0 - client_cpu_s_);
  }
  if (server_cpu_ >= 0) {
    server_cpu_others_s_ =
        std::max(0.0, CpuBusySeconds(server_cpu_) - server_busy0 - server_cpu_s_ -
                          (client_cpu_ == server_cpu_ ? client_cpu_s_ : 0.0));
  }
}

void LoadGen::Print() const {
  const double wall = double(end_ns_ - start_ns_) / 1e9;
  const double ops = double(completed_);
  auto us = [](uint64_t ns) { return double(ns) / 1e3; };
  std::printf("mode=%s connections=%d pipeline=%d ratio=%u:%u keyspace=%" PRIu64 " value_size=%zu",
              o_.fill ? "fill" : "run", o_.connections, o_.pipeline, o_.fill ? 1 : o_.set_weight,
              o_.fill ? 0 : o_.get_weight, o_.keyspace, o_.value_size);
  std::printf(" ops=%" PRIu64 " sets=%" PRIu64 " gets=%" PRIu64 " get_hits=%" PRIu64
              " get_misses=%" PRIu64 " errors=%" PRIu64,
              completed_, sets_, gets_, hits_, misses_, errors_);
  std::printf(" wall_s=%.4f ops_per_s=%.0f", wall, wall > 0 ? ops / wall : 0.0);
  std::printf(" mean_us=%.1f p50_us=%.1f p99_us=%.1f p999_us=%.1f p9999_us=%.1f max_us=%.1f",
              hist_.mean() / 1e3, us(hist_.Percentile(50)), us(hist_.Percentile(99)),
              us(hist_.Percentile(99.9)), us(hist_.Percentile(99.99)), us(hist_.max()));
  std::printf(" max_at_s=%.3f over_1ms=%" PRIu64 " over_5ms=%" PRIu64,
              double(max_sent_ns_ > start_ns_ ? max_sent_ns_ - start_ns_ : 0) / 1e9,
              hist_.CountAbove(1000000), hist_.CountAbove(5000000));
  std::printf(" client_cpu_s=%.3f client_cpu_util=%.3f", client_cpu_s_,
              wall > 0 ? client_cpu_s_ / wall : 0.0);
  if (o_.server_pid) {
    std::printf(" server_cpu_s=%.3f server_cpu_util=%.3f ops_per_server_cpu_s=%.0f", server_cpu_s_,
                wall > 0 ? server_cpu_s_ / wall : 0.0,
                server_cpu_s_ > 0 ? ops / server_cpu_s_ : 0.0);
  }
  // Noise: the share of the pinned CPUs that other processes (and interrupts, and the hypervisor)
  // took during the run. Only printed when the process in question is pinned to one CPU.
  if (client_cpu_ >= 0 && client_cpu_ != server_cpu_) {
    std::printf(" client_cpu_others_util=%.3f", wall > 0 ? client_cpu_others_s_ / wall : 0.0);
  }
  if (server_cpu_ >= 0) {
    std::printf(" server_cpu_others_util=%.3f", wall > 0 ? server_cpu_others_s_ / wall : 0.0);
  }
  std::printf("\n");
  std::fflush(stdout);
}

}  // namespace
}  // namespace shardis::bench

int main(int argc, char** argv) {
  using namespace shardis::bench;
  Options o = ParseOptions(argc, argv);
  struct sigaction sa {};
  sa.sa_handler = [](int) { g_stop = 1; };  // no SA_RESTART: epoll_wait returns EINTR
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  LoadGen gen(o);
  gen.Connect();
  gen.Run();
  gen.Print();
  return 0;
}
