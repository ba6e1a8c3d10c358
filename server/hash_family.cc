// Hash commands.
#include "server/command.h"

namespace shardis::server {

void RegisterHashFamily(CommandRegistry* r) { (void)r; }

}  // namespace shardis::server
