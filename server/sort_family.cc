// SORT and SORT_RO.
#include "server/command.h"

namespace shardis::server {

void RegisterSortFamily(CommandRegistry* r) { (void)r; }

}  // namespace shardis::server
