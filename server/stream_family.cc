// Stream commands.
#include "server/command.h"

namespace shardis::server {

void RegisterStreamFamily(CommandRegistry* r) { (void)r; }

}  // namespace shardis::server
