// ConnectionState: what commands may read and change about their client (the Connection class
// owns it and runs the fiber). Lives on the connection's thread.
#pragma once

#include <cstdint>
#include <string>

namespace shardis::server {

struct ConnectionState {
  uint64_t id = 0;       // CLIENT ID: unique in the process, increasing
  unsigned thread = 0;   // the proactor the connection lives on
  int fd = -1;
  std::string addr;      // peer "ip:port"
  std::string laddr;     // local "ip:port"
  std::string name;      // CLIENT SETNAME
  int db = 0;            // SELECT
  bool resp3 = false;    // HELLO 3
  bool close_after_reply = false;  // QUIT, protocol errors
  int64_t created_ms = 0;
  int64_t last_interaction_ms = 0;
  std::string last_command;  // lower-case name, for CLIENT LIST's cmd=
  std::string lib_name, lib_ver;  // CLIENT SETINFO / HELLO SETNAME
};

}  // namespace shardis::server
