// Geo commands, on sorted sets with Redis' 52-bit geohash scores.
#include "server/command.h"

namespace shardis::server {

void RegisterGeoFamily(CommandRegistry* r) { (void)r; }

}  // namespace shardis::server
