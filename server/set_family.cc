// Set commands.
#include "server/command.h"

namespace shardis::server {

void RegisterSetFamily(CommandRegistry* r) { (void)r; }

}  // namespace shardis::server
