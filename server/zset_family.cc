// Sorted-set commands.
#include "server/command.h"

namespace shardis::server {

void RegisterZSetFamily(CommandRegistry* r) { (void)r; }

}  // namespace shardis::server
