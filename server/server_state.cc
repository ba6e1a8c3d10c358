#include "server/server_state.h"

#include <atomic>

namespace shardis::server {

namespace {
ServerInfo g_info;
thread_local ServerThreadState tl_state;
std::atomic<uint64_t> g_next_client_id{1};
}  // namespace

const ServerInfo& Info() { return g_info; }
ServerInfo& MutableInfo() { return g_info; }
ServerThreadState& ServerThreadState::current() { return tl_state; }
uint64_t NextClientId() { return g_next_client_id.fetch_add(1, std::memory_order_relaxed); }

}  // namespace shardis::server
