// CLUSTER, ASKING, READONLY, READWRITE as a Redis 7.2 with cluster-enabled no answers them: every
// subcommand of CLUSTER is known (COMMAND lists and documents them, arity and unknown names are
// checked as for any container) and answers "This instance has cluster support disabled", as do
// the three connection commands (Redis' clusterCommand, askingCommand, readonlyCommand). Cluster
// clients call CLUSTER INFO or CLUSTER SLOTS to find out which mode a server runs in.
#include <string_view>

#include "server/command.h"
#include "server/connection_state.h"
#include "server/subcommand.h"

namespace shardis::server {

namespace {

void ClusterDisabled(ArgSlice, ConnContext& ctx) {
  ctx.rb.Error("ERR This instance has cluster support disabled");
}

// Redis' flags of the subcommands that change the cluster, and the ACL categories it derives for
// admin ones (and for the others: slow).
constexpr uint32_t kChange = kNoAsyncLoading | kAdmin | kStale;
constexpr std::string_view kAdminAcl = "admin slow dangerous";

constexpr SubCommand Sub(std::string_view name, int arity, uint32_t flags, std::string_view since,
                         std::string_view complexity, std::string_view summary,
                         std::string_view tips = {}) {
  return {.name = name, .arity = arity, .flags = flags,
          .acl_categories = (flags & kAdmin) != 0 ? kAdminAcl : "slow",
          .handler = ClusterDisabled,
          .docs = {.group = "cluster", .since = since, .complexity = complexity,
                   .summary = summary, .tips = tips}};
}

constexpr std::string_view kNondeterministic = "nondeterministic_output";

// Redis 7.2's subcommands (src/commands/cluster-*.json), in name order.
constexpr SubCommand kClusterSubs[] = {
    Sub("addslots", -3, kChange, "3.0.0",
        "O(N) where N is the total number of hash slot arguments",
        "Assigns new hash slots to a node."),
    Sub("addslotsrange", -4, kChange, "7.0.0",
        "O(N) where N is the total number of the slots between the start slot and end slot "
        "arguments.",
        "Assigns new hash slot ranges to a node."),
    Sub("bumpepoch", 2, kChange, "3.0.0", "O(1)", "Advances the cluster config epoch.",
        kNondeterministic),
    Sub("count-failure-reports", 3, kAdmin | kStale, "3.0.0",
        "O(N) where N is the number of failure reports",
        "Returns the number of active failure reports active for a node.", kNondeterministic),
    Sub("countkeysinslot", 3, kStale, "3.0.0", "O(1)",
        "Returns the number of keys in a hash slot."),
    Sub("delslots", -3, kChange, "3.0.0",
        "O(N) where N is the total number of hash slot arguments",
        "Sets hash slots as unbound for a node."),
    Sub("delslotsrange", -4, kChange, "7.0.0",
        "O(N) where N is the total number of the slots between the start slot and end slot "
        "arguments.",
        "Sets hash slot ranges as unbound for a node."),
    Sub("failover", -2, kChange, "3.0.0", "O(1)",
        "Forces a replica to perform a manual failover of its master."),
    Sub("flushslots", 2, kChange, "3.0.0", "O(1)", "Deletes all slots information from a node."),
    Sub("forget", 3, kChange, "3.0.0", "O(1)", "Removes a node from the nodes table."),
    Sub("getkeysinslot", 4, kStale, "3.0.0", "O(N) where N is the number of requested keys",
        "Returns the key names in a hash slot.", kNondeterministic),
    Sub("help", 2, kLoading | kStale, "5.0.0", "O(1)",
        "Returns helpful text about the different subcommands."),
    Sub("info", 2, kStale, "3.0.0", "O(1)", "Returns information about the state of a node.",
        kNondeterministic),
    Sub("keyslot", 3, kStale, "3.0.0", "O(N) where N is the number of bytes in the key",
        "Returns the hash slot for a key."),
    Sub("links", 2, kStale, "7.0.0", "O(N) where N is the total number of Cluster nodes",
        "Returns a list of all TCP links to and from peer nodes.", kNondeterministic),
    Sub("meet", -4, kChange, "3.0.0", "O(1)", "Forces a node to handshake with another node."),
    Sub("myid", 2, kStale, "3.0.0", "O(1)", "Returns the ID of a node."),
    Sub("myshardid", 2, kStale, "7.2.0", "O(1)", "Returns the shard ID of a node.",
        kNondeterministic),
    Sub("nodes", 2, kStale, "3.0.0", "O(N) where N is the total number of Cluster nodes",
        "Returns the cluster configuration for a node.", kNondeterministic),
    Sub("replicas", 3, kAdmin | kStale, "5.0.0", "O(N) where N is the number of replicas.",
        "Lists the replica nodes of a master node.", kNondeterministic),
    Sub("replicate", 3, kChange, "3.0.0", "O(1)",
        "Configure a node as replica of a master node."),
    Sub("reset", -2, kAdmin | kStale | kNoScript, "3.0.0",
        "O(N) where N is the number of known nodes. The command may execute a FLUSHALL as a side "
        "effect.",
        "Resets a node."),
    Sub("saveconfig", 2, kChange, "3.0.0", "O(1)",
        "Forces a node to save the cluster configuration to disk."),
    Sub("set-config-epoch", 3, kChange, "3.0.0", "O(1)",
        "Sets the configuration epoch for a new node."),
    Sub("setslot", -4, kChange, "3.0.0", "O(1)", "Binds a hash slot to a node."),
    Sub("shards", 2, kLoading | kStale, "7.0.0",
        "O(N) where N is the total number of cluster nodes",
        "Returns the mapping of cluster slots to shards.", kNondeterministic),
    Sub("slaves", 3, kAdmin | kStale, "3.0.0", "O(N) where N is the number of replicas.",
        "Lists the replica nodes of a master node.", kNondeterministic),
    Sub("slots", 2, kLoading | kStale, "3.0.0",
        "O(N) where N is the total number of Cluster nodes",
        "Returns the mapping of cluster slots to nodes.", kNondeterministic),
};

constexpr Container kCluster = {"cluster", kClusterSubs};

void CmdCluster(ArgSlice args, ConnContext& ctx) { DispatchSub(kCluster, args, ctx); }

}  // namespace

void RegisterClusterFamily(CommandRegistry* r) {
  r->Register({.name = "cluster", .arity = -2, .flags = 0, .keys = kNoKeys,
               .acl_categories = "slow", .on_conn = CmdCluster,
               .docs = {.group = "cluster", .since = "3.0.0",
                        .complexity = "Depends on subcommand.",
                        .summary = "A container for Redis Cluster commands."},
               .container = &kCluster});
  r->Register({.name = "asking", .arity = 1, .flags = kFast, .keys = kNoKeys,
               .acl_categories = "fast connection", .on_conn = ClusterDisabled,
               .docs = {.group = "cluster", .since = "3.0.0", .complexity = "O(1)",
                        .summary = "Signals that a cluster client is following an -ASK "
                                   "redirect."}});
  r->Register({.name = "readonly", .arity = 1, .flags = kFast | kLoading | kStale,
               .keys = kNoKeys, .acl_categories = "fast connection", .on_conn = ClusterDisabled,
               .docs = {.group = "cluster", .since = "3.0.0", .complexity = "O(1)",
                        .summary = "Enables read-only queries for a connection to a Redis "
                                   "Cluster replica node."}});
  // Redis' summary, typo included ("Reids"), as COMMAND DOCS shows it.
  r->Register({.name = "readwrite", .arity = 1, .flags = kFast | kLoading | kStale,
               .keys = kNoKeys, .acl_categories = "fast connection", .on_conn = ClusterDisabled,
               .docs = {.group = "cluster", .since = "3.0.0", .complexity = "O(1)",
                        .summary = "Enables read-write queries for a connection to a Reids "
                                   "Cluster replica node."}});
}

}  // namespace shardis::server
