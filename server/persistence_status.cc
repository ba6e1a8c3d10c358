#include "server/persistence_status.h"

namespace shardis::server {

PersistenceStatus g_persistence_status;

}  // namespace shardis::server
