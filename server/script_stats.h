// What INFO reports of scripting, per thread (script_run.cc, script_family.cc): a header of its
// own so that the metrics code does not include the scripting machinery.
#pragma once

#include <cstddef>

namespace shardis::server {

// The bytes this thread's Lua heap uses (0 before the thread's first script).
size_t ThreadLuaMemory();

// This thread's script cache (EVAL's) and function libraries: every thread holds the same ones.
struct ScriptCacheStats {
  size_t scripts = 0;
  size_t script_bytes = 0;  // bodies and names
  size_t functions = 0;
  size_t libraries = 0;
  size_t library_bytes = 0;  // the libraries' code and names
};
ScriptCacheStats ThreadScriptCacheStats();

}  // namespace shardis::server
