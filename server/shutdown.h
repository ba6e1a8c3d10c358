// The last steps before the process exits on SHUTDOWN or SIGTERM, as Redis' finishShutdown: stop
// a background save, and save the dataset when asked or when a `save` schedule is set.
#pragma once

#include <absl/status/status.h>

namespace shardis::server {

struct ShutdownOptions {
  bool save = false;    // SHUTDOWN SAVE: save even without a schedule
  bool nosave = false;  // SHUTDOWN NOSAVE: never save
  bool force = false;   // SHUTDOWN FORCE: exit even when the save fails
};

// Saves if the options or the schedule ask for it. Call from a fiber on a proactor thread. OK
// when the process may exit; the save's error otherwise (the server then goes on serving).
absl::Status PrepareShutdown(const ShutdownOptions& options);

// SHUTDOWN has prepared (and saved) and raised SIGTERM: the signal path must not save again.
void MarkShutdownPrepared();
bool ShutdownPrepared();

}  // namespace shardis::server
