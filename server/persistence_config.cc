// TEMPORARY STUB (replaced by the pconfig branch)
#include "server/persistence_config.h"
#include <cstdlib>
namespace shardis::server {
std::string RdbFilename() { return "dump.rdb"; }
std::vector<SaveRule> SaveRules() { const char* e = getenv("STUB_SAVE"); if (e && *e=='0') return {}; return {{3600,1},{300,100},{60,10000}}; }
bool RdbCompression() { return true; }
bool RdbChecksum() { return true; }
bool StopWritesOnBgsaveError() { return true; }
int64_t RdbKeySaveDelayUs() { const char* e = getenv("STUB_DELAY"); return e ? atoll(e) : 0; }
}
