#include "server/persistence_status.h"

namespace shardis::server {

PersistenceStatus& Persistence() {
  static PersistenceStatus status;
  return status;
}

}  // namespace shardis::server
