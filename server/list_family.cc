// List commands.
#include "server/command.h"

namespace shardis::server {

void RegisterListFamily(CommandRegistry* r) { (void)r; }

}  // namespace shardis::server
