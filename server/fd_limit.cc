#include "server/fd_limit.h"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <absl/strings/str_cat.h>
#include <glog/logging.h>

#include "server/admission.h"

namespace shardis::server {

namespace {

// Redis' CONFIG_MIN_RESERVED_FDS.
constexpr size_t kMinReservedFds = 32;

// Written once at start, before the threads that read it (CONFIG SET) exist.
size_t g_reserved_fds = kMinReservedFds;

// Raises the soft RLIMIT_NOFILE to `want` if it is lower: past the hard limit only with the
// privilege to raise that too, otherwise as far as the hard limit goes. Returns the soft limit in
// force afterwards; *err is the errno of the attempt that fell short (0 if none did).
rlim_t RaiseNoFileLimit(rlim_t want, int* err) {
  *err = 0;
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) {
    *err = errno;
    return 1024;  // what Redis assumes when it cannot read the limit
  }
  if (lim.rlim_cur >= want) return lim.rlim_cur;
  rlimit raised{want, std::max(want, lim.rlim_max)};
  if (setrlimit(RLIMIT_NOFILE, &raised) == 0) return want;
  *err = errno;
  raised = {lim.rlim_max, lim.rlim_max};
  if (lim.rlim_max > lim.rlim_cur && setrlimit(RLIMIT_NOFILE, &raised) == 0) return lim.rlim_max;
  return lim.rlim_cur;
}

}  // namespace

size_t ReservedFds(unsigned threads, unsigned ports) {
  return kMinReservedFds + size_t(threads) * (2 + ports);
}

absl::Status AdjustOpenFilesLimit(size_t reserved) {
  g_reserved_fds = reserved;
  const size_t requested = MaxClients();
  const rlim_t want = requested + reserved;
  rlimit before{};
  getrlimit(RLIMIT_NOFILE, &before);
  int err = 0;
  const rlim_t limit = RaiseNoFileLimit(want, &err);
  if (limit >= want) {
    if (before.rlim_cur < want) {
      LOG(INFO) << "Increased maximum number of open files to " << want
                << " (it was originally set to " << before.rlim_cur << ").";
    }
    return absl::OkStatus();
  }
  if (limit <= reserved) {
    return absl::FailedPreconditionError(absl::StrCat(
        "Your current 'ulimit -n' of ", limit, " is not enough for the server to start. Please ",
        "increase your open file limit to at least ", want, ". Exiting."));
  }
  SetMaxClients(limit - reserved);
  LOG(WARNING) << "You requested maxclients of " << requested << " requiring at least " << want
               << " max file descriptors.";
  LOG(WARNING) << "Server can't set maximum open files to " << want
               << " because of OS error: " << strerror(err) << ".";
  LOG(WARNING) << "Current maximum open files is " << limit << ". maxclients has been reduced to "
               << MaxClients() << " to compensate for low ulimit. If you need higher maxclients "
               << "increase 'ulimit -n'.";
  return absl::OkStatus();
}

absl::Status CheckMaxClients(size_t n) {
  const rlim_t want = n + g_reserved_fds;
  int err = 0;
  const rlim_t limit = RaiseNoFileLimit(want, &err);
  if (limit >= want) return absl::OkStatus();
  const size_t possible = limit > g_reserved_fds ? limit - g_reserved_fds : 0;
  return absl::FailedPreconditionError(absl::StrCat(
      "The operating system is not able to handle the specified number of clients, try with ",
      possible));
}

}  // namespace shardis::server
