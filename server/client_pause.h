// CLIENT PAUSE / UNPAUSE (client_pause.cc): delays clients' commands until a deadline.
//
// The pause is two process-wide atomics (deadline and type) that CLIENT PAUSE writes; the
// connection reads the deadline with one relaxed load per command (PauseMaybeActive) and only
// when it is set looks further. A paused command's fiber sleeps on its own thread until the
// deadline in steps of at most 10 ms, so that it notices an UNPAUSE or a CLIENT KILL soon without
// anyone having to find and wake it.
#pragma once

#include <atomic>
#include <cstdint>

#include "server/command.h"
#include "server/connection_state.h"

namespace shardis::server {

enum class PauseType : int { kWrite = 1, kAll = 2 };

namespace internal {
// Unix ms at which the pause ends; 0: no pause (also reset lazily once the deadline passes).
extern std::atomic<int64_t> g_pause_end_ms;
}  // namespace internal

// Cheap test for the command path: false means no pause is set.
inline bool PauseMaybeActive() {
  return internal::g_pause_end_ms.load(std::memory_order_relaxed) != 0;
}

// Sleeps the calling connection fiber while a pause applies to `spec` (ALL: every command;
// WRITE: writes, and the commands Redis counts as "may replicate": PUBLISH, PFCOUNT, EXEC of a
// transaction with one of those, ...). sub_name is args[1], which names a container's
// subcommand (XGROUP CREATE is a write). Returns false when the client was killed meanwhile (the
// command must not run).
bool WaitWhilePaused(const ConnectionState& conn, const CommandSpec& spec,
                     std::string_view sub_name);

// Redis' pauseClients: the type is replaced, the deadline only ever extended.
void PauseClients(int64_t end_ms, PauseType type);
// Ends the pause; paused clients go on within 10 ms.
void UnpauseClients();

}  // namespace shardis::server
