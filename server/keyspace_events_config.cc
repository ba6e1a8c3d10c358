// notify-keyspace-events: the CONFIG parameter (and --notify_keyspace_events flag) that selects
// which keyspace notifications are published (shard/keyspace_events.h).
#include <gflags/gflags.h>

#include "server/config_registry.h"
#include "shard/keyspace_events.h"

DEFINE_string(notify_keyspace_events, "",
              "keyspace notification classes to publish, as Redis' notify-keyspace-events "
              "(K, E, g, $, l, s, h, z, x, e, t, m, d, n, A; empty: none)");

namespace shardis::server {

void RegisterKeyspaceEventsParam(ConfigRegistry& r) {
  ConfigParam p = MutableString(
      "notify-keyspace-events", "notify_keyspace_events",
      [] { return shard::FormatKeyspaceEvents(shard::KeyspaceEvents()); },
      [](std::string_view v) { shard::SetKeyspaceEvents(*shard::ParseKeyspaceEvents(v)); });
  p.validate = [](std::string_view v) {
    if (shard::ParseKeyspaceEvents(v)) return absl::OkStatus();
    return absl::InvalidArgumentError("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.");
  };
  r.Add(std::move(p));
}

}  // namespace shardis::server
