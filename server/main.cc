// shardis: the process. Parses flags, starts one pinned io_uring thread per shard, listens on
// every thread, and on SIGTERM/SIGINT drains the connections and exits 0.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <future>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <random>
#include <thread>

#include <absl/strings/str_cat.h>
#include <gflags/gflags.h>
#include <glog/logging.h>

#include "io/cgroup_limits.h"
#include "io/cpu_count.h"
#include "io/proactor_pool.h"
#include "server/command.h"
#include "server/client_buffers.h"
#include "server/client_tracking.h"
#include "server/instantaneous_metrics.h"
#include "server/listener.h"
#include "server/config_registry.h"
#include "server/fd_limit.h"
#include "server/idle_timeout.h"
#include "server/latency_monitor.h"
#include "server/persistence_config.h"
#include "server/aof.h"
#include "server/persistence_status.h"
#include "server/rdb_load.h"
#include "server/resp_listeners.h"
#include "server/script_run.h"
#include "server/server_state.h"
#include "server/shutdown.h"
#include "server/snapshot.h"
#include "server/startup_config.h"
#include "server/acl_file.h"
#include "server/tls.h"
#include "shard/memory_limit.h"
#include "shard/shard_set.h"

DEFINE_int32(threads, 0,
             "shard threads; 0 = the CPUs this process may use (affinity mask, capped by the "
             "cgroup CPU quota)");
DEFINE_int32(memcached_port, 0,
             "TCP port for the memcached text protocol (keys shared with RESP database 0); "
             "0 = off");
DEFINE_int32(admin_port, 0,
             "TCP port that serves only HTTP (/metrics, /healthz) on --bind; 0 = off (the RESP "
             "port answers HTTP requests too)");
DEFINE_bool(memcached_tls, false,
             "the --memcached_port speaks TLS, with the tls-* certificates and tls-auth-clients");
DEFINE_bool(admin_tls, false,
            "the --admin_port speaks TLS (HTTPS), with the tls-* certificates and "
            "tls-auth-clients");
DEFINE_int32(shutdown_timeout_ms, 10000,
             "on SIGTERM/SIGINT, how long to wait for connections to finish their requests");

namespace shardis::server {
namespace {

// Starts fn in a fiber on thread 0 (it may hop and do fiber-blocking I/O); this (non-proactor)
// thread gets its result through the future.
std::future<absl::Status> StartInFiber(io::ProactorPool& pool, std::function<absl::Status()> fn) {
  auto done = std::make_shared<std::promise<absl::Status>>();
  std::future<absl::Status> result = done->get_future();
  pool.AwaitOn(0, [&](io::Proactor* p) {
    if (!p->Launch([done, fn] { done->set_value(fn()); })) {
      done->set_value(absl::ResourceExhaustedError("no memory for a fiber"));
    }
  });
  return result;
}

absl::Status RunInFiber(io::ProactorPool& pool, std::function<absl::Status()> fn) {
  return StartInFiber(pool, std::move(fn)).get();
}

std::string RandomHex(size_t n) {
  std::random_device rd;
  std::mt19937_64 gen(rd());
  static const char kHex[] = "0123456789abcdef";
  std::string s(n, '0');
  for (char& c : s) c = kHex[gen() % 16];
  return s;
}

// "1.60GiB": the log line the container tests read.
std::string HumanBytes(uint64_t n) {
  if (n == 0) return "0 (no limit)";
  char buf[64];
  if (n >= (uint64_t{1} << 30)) {
    snprintf(buf, sizeof(buf), "%.2fGiB", double(n) / double(uint64_t{1} << 30));
  } else {
    snprintf(buf, sizeof(buf), "%.2fMiB", double(n) / double(uint64_t{1} << 20));
  }
  return buf;
}

// maxmemory when no setting gave one: 80% of the cgroup memory limit (the rest is left to what
// used_memory does not count: fragmentation, connection buffers, the binary), or none.
uint64_t DeriveMaxMemory(uint64_t cgroup_limit, std::string* why) {
  if (cgroup_limit == 0) {
    *why = "0 (no limit: --maxmemory unset and no cgroup memory limit)";
    return 0;
  }
  const uint64_t derived = cgroup_limit / 5 * 4;
  *why = absl::StrCat(HumanBytes(derived), " (80% of cgroup memory limit ", HumanBytes(cgroup_limit),
                      ")");
  return derived;
}

// A start refused with one of Redis' log lines: logged as Redis logs it, and on stderr too when
// the log goes to files. Returns the exit code.
int FailStart(const std::string& message) {
  LOG(WARNING) << message;
  if (!FLAGS_logtostderr) std::cerr << "shardis: " << message << "\n";
  return 1;
}

void ExplainIoUringFailure(const absl::Status& status) {
  std::cerr << "shardis: cannot start: " << status.message() << "\n"
            << "shardis runs every thread on io_uring, and this system refused it. Check:\n"
            << "  - the kernel is Linux 6.0 or newer with io_uring enabled "
               "(sysctl kernel.io_uring_disabled must be 0);\n"
            << "  - in a container, the seccomp profile allows io_uring_setup, io_uring_enter "
               "and io_uring_register\n"
            << "    (Docker: docker run --security-opt seccomp=unconfined ..., or a profile "
               "that allows them);\n"
            << "  - the locked-memory limit is large enough (ulimit -l; raise it with "
               "--ulimit memlock=-1 in Docker).\n";
}

int Main(int argc, char** argv) {
  gflags::SetUsageMessage(
      "shardis: a Redis-compatible, thread-per-core datastore on io_uring\n"
      "usage: shardis [/path/to/shardis.conf] [--flag=value ...] [--config-name value ...]");
  gflags::SetVersionString("0.1.0");
  StartupConfig config;
  if (absl::Status status = LoadStartupConfig(&argc, &argv, &config); !status.ok()) {
    std::cerr << status.message() << "\n";
    return 1;
  }
  google::InitGoogleLogging(argv[0]);
  google::InstallFailureSignalHandler();

  if (argc > 1) {
    std::cerr << "shardis: unexpected argument '" << argv[1]
              << "' (flags are --name=value or --name value...; a config file must be the first "
                 "argument)\n";
    return 1;
  }

  io::CpuBudget budget = io::DetectCpuBudget();
  unsigned threads = FLAGS_threads > 0 ? unsigned(FLAGS_threads) : budget.threads;
  LOG(INFO) << "shardis 0.1.0 starting: " << threads << " thread(s) (affinity allows "
            << budget.affinity_cpus << " CPU(s), cgroup quota "
            << (budget.quota_cpus > 0 ? absl::StrCat(budget.quota_cpus) : "none")
            << (FLAGS_threads > 0 ? ", set by --threads)" : ")");
  const uint64_t cgroup_memory_limit = io::CgroupMemoryLimit();
  if (config.maxmemory_source.empty()) {
    std::string why;
    const uint64_t derived = DeriveMaxMemory(cgroup_memory_limit, &why);
    gflags::SetCommandLineOption("maxmemory", absl::StrCat(derived).c_str());
    // CONFIG REWRITE writes what differs from this: a derived value stays derived.
    Config().SetDefault("maxmemory", absl::StrCat(derived));
    LOG(INFO) << "maxmemory " << why;
  }
  if (absl::Status status = ApplyConfigFlags(); !status.ok()) {
    std::cerr << "shardis: " << status.message() << "\n";
    return 1;
  }
  if (!config.maxmemory_source.empty()) {
    LOG(INFO) << "maxmemory " << HumanBytes(shard::MemoryLimit::maxmemory()) << " (set by "
              << config.maxmemory_source << ")";
  } else if (cgroup_memory_limit != 0) {
    // After ApplyConfigFlags, whose maxmemory setter clears it (docs/memory.md).
    shard::MemoryLimit::set_container_limit(cgroup_memory_limit);
    LOG(INFO) << "maxmemory in a container: eviction keeps the resident memory under "
              << HumanBytes(uint64_t(double(cgroup_memory_limit) *
                                     shard::MemoryLimit::kResidentTarget))
              << ", writes are refused over "
              << HumanBytes(
                     uint64_t(double(cgroup_memory_limit) * shard::MemoryLimit::kResidentDeny));
  }
  LOG(INFO) << "maxmemory-policy " << shard::EvictionPolicyName(shard::MemoryLimit::policy());
  if (!config.config_file.empty()) LOG(INFO) << "config file " << config.config_file;
  if (!config.summary.empty()) LOG(INFO) << "configuration: " << config.summary;

  // Signals are taken synchronously by this thread; every other thread inherits the blocked mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  ServerInfo& info = MutableInfo();
  info.start_ms = shard::NowMs();
  info.run_id = RandomHex(40);
  info.threads = threads;
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  info.executable = n > 0 ? std::string(exe, size_t(n)) : argv[0];
  info.config_file = config.config_file;

  RegisterAllFamilies(&Registry());
  if (std::string err = LoadAclUsersAtStart(); !err.empty()) {
    std::cerr << "shardis: " << err << "\n";
    return 1;
  }
  InstallTrackingDelivery();

  if (Port() <= 0 && TlsPort() <= 0) {
    return FailStart("Configured to not listen anywhere, exiting.");
  }
  const unsigned ports = (Port() > 0) + (TlsPort() > 0) + (FLAGS_memcached_port > 0) +
                         (FLAGS_admin_port > 0);
  if (absl::Status status = AdjustOpenFilesLimit(ReservedFds(threads, ports)); !status.ok()) {
    return FailStart(std::string(status.message()));
  }

  // One listening socket per thread and port, all on the same port (SO_REUSEPORT); a port in use
  // by another process stops the start, with Redis' words and exit code.
  // --port 0 with a TLS port: TLS only, as Redis.
  if (absl::Status status = OpenRespListeners(threads); !status.ok()) {
    return FailStart(absl::StrCat("Warning: ", status.message()));
  }
  // The memcached and admin ports stay on the address they started on (Redis has neither).
  const std::string bind = Bind();
  std::vector<int> memcache_fds, admin_fds;
  for (auto [port, fds] : {std::pair{FLAGS_memcached_port, &memcache_fds},
                           std::pair{FLAGS_admin_port, &admin_fds}}) {
    if (port <= 0) continue;
    absl::StatusOr<std::vector<int>> opened = OpenListenSockets(bind, port, threads);
    if (!opened.ok()) return FailStart(absl::StrCat("Warning: ", opened.status().message()));
    *fds = *std::move(opened);
  }

  // The tls-* parameters serve --tls_port and, when asked, the memcached and admin ports.
  const bool memcached_tls = FLAGS_memcached_tls && !memcache_fds.empty();
  const bool admin_tls = FLAGS_admin_tls && !admin_fds.empty();
  const bool tls = TlsPort() > 0 || memcached_tls || admin_tls;
  if (tls) {
    if (absl::Status status = LoadTls(); !status.ok()) {
      LOG(WARNING) << status.message();
      return FailStart("Failed to configure TLS. Check logs for more info.");
    }
  }

  io::ProactorPool pool(threads);
  if (absl::Status status = pool.Start(); !status.ok()) {
    ExplainIoUringFailure(status);
    return 1;
  }
  shard::ShardSet shards(&pool);
  shard::shard_set = &shards;
  shards.set_periodic_hook([] {
    if (shard::Shard::current()->id() == 0) SaveCron();
    SampleInstantaneousMetrics();
    CloseIdleClients();
    SampleClientBufferPeaks();
    CloseClientsPastSoftOutputLimit();
  });
  shards.set_latency_hook(LatencyMaybeAddEvent);
  shards.Start();
  // The dataset on disk, if any, loads before commands are served; clients that connect meanwhile
  // get -LOADING.
  // With appendonly yes the AOF is the dataset and dbfilename is not read, as in Redis.
  const bool aof = AppendOnlyConfigured();
  const std::string rdb_path = RdbFilename();
  struct stat rdb_stat {};
  const bool rdb_exists = !aof && stat(rdb_path.c_str(), &rdb_stat) == 0;
  if (rdb_exists) BeginLoading(uint64_t(rdb_stat.st_size));
  if (aof) BeginLoading(0);
  Persistence().last_save_time.store(time(nullptr));  // as Redis: at start the dataset is saved
  if (tls) StartTls(pool);
  pool.AwaitOnAll([&](io::Proactor* p) {
    StartRespListeners(p);
    if (!memcache_fds.empty()) {
      StartAccepting(p, memcache_fds[p->index()], Protocol::kMemcache, memcached_tls);
    }
    if (!admin_fds.empty()) StartAccepting(p, admin_fds[p->index()], Protocol::kHttp, admin_tls);
  });
  if (Port() > 0) LOG(INFO) << "ready to accept connections on " << bind << ":" << Port();
  if (TlsPort() > 0) {
    LOG(INFO) << "ready to accept TLS connections on " << bind << ":" << TlsPort();
  }
  if (FLAGS_memcached_port > 0) {
    LOG(INFO) << "memcached protocol on " << bind << ":" << FLAGS_memcached_port;
  }
  if (FLAGS_admin_port > 0) {
    LOG(INFO) << "HTTP (/metrics, /healthz) on " << bind << ":" << FLAGS_admin_port;
  }

  if (rdb_exists || aof) {
    std::future<absl::Status> load = StartInFiber(pool, [rdb_path, aof] {
      if (aof) {
        const absl::Status loaded = LoadAppendOnlyFiles();
        if (!loaded.ok() && !absl::IsNotFound(loaded)) return loaded;
        if (!loaded.ok()) {
          LOG(INFO) << "no append only file in " << AppendDirname() << ": the dataset starts empty";
        }
        // The journals record before the first client is served.
        const absl::Status on = StartAppendOnlyNow(/*files_loaded=*/loaded.ok());
        if (on.ok()) EndLoading();
        return on;
      }
      LoadResult result;
      absl::Status loaded = LoadSnapshot(rdb_path, /*merge=*/false, &result);
      if (loaded.ok()) EndLoading();
      return loaded;
    });
    // SIGTERM or SHUTDOWN while loading: exit at once, saving nothing (the file on disk is the
    // dataset), as Redis does.
    while (load.wait_for(std::chrono::milliseconds(0)) != std::future_status::ready) {
      const timespec tick{0, 20'000'000};
      if (const int sig = sigtimedwait(&signals, nullptr, &tick); sig > 0) {
        LOG(WARNING) << "received " << strsignal(sig) << " while loading; exiting without saving";
        std::_Exit(0);
      }
    }
    const absl::Status loaded = load.get();
    if (absl::IsNotFound(loaded)) EndLoading();  // gone since the stat: nothing to load
    if (!loaded.ok() && !absl::IsNotFound(loaded)) {
      LOG(ERROR) << "Fatal error loading the DB " << (aof ? AppendDirname() : rdb_path) << ": "
                 << loaded.message() << ". Exiting.";
      std::_Exit(1);
    }
  }

  // SIGTERM/SIGINT: save first when a schedule is set (as Redis); a failed save keeps the server
  // running, as Redis does. A SHUTDOWN command has done this already.
  for (;;) {
    int sig = 0;
    sigwait(&signals, &sig);
    LOG(INFO) << "received " << strsignal(sig) << ", shutting down";
    if (ShutdownPrepared()) break;
    if (RunInFiber(pool, [] { return PrepareShutdown({}); }).ok()) break;
    LOG(WARNING) << "SIGTERM received but errors trying to shut down the server, check the logs "
                    "for more information";
  }

  // Stop accepting, let every connection finish what it has read, then stop the threads.
  pool.AwaitOnAll([](io::Proactor*) {
    StopServing();
    KillBusyScriptsForShutdown();  // a script that never ends must not hold the exit
  });
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(FLAGS_shutdown_timeout_ms);
  while (true) {
    std::atomic<size_t> open{0};
    pool.AwaitOnAll([&](io::Proactor*) { open += ConnectionCount(); });
    if (open == 0) break;
    if (std::chrono::steady_clock::now() > deadline) {
      LOG(WARNING) << open << " connection(s) still open after " << FLAGS_shutdown_timeout_ms
                   << " ms; exiting anyway";
      std::_Exit(0);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  shards.Stop();
  pool.Stop();
  LOG(INFO) << "bye";
  return 0;
}

}  // namespace
}  // namespace shardis::server

int main(int argc, char** argv) { return shardis::server::Main(argc, argv); }
