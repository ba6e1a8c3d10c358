// Bit commands on strings: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD.
#include "server/command.h"

namespace shardis::server {

void RegisterBitopsFamily(CommandRegistry* r) { (void)r; }

}  // namespace shardis::server
