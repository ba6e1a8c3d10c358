// The config-file parser (server::LoadConfigText, what `shardis /etc/shardis.conf` reads) on
// arbitrary file text: besides memory errors and UB, every value it accepts for a CONFIG
// parameter must be one that parameter reads back (CONFIG GET, CONFIG REWRITE and the start-up's
// ApplyConfigFlags all parse it again). The process keeps the flags a file set between inputs,
// as a second file on the command line would find them.
#include <gflags/gflags.h>

#include <cstdlib>
#include <string>

#include "server/config_registry.h"
#include "server/startup_config.h"

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  shardis::server::RegisterConfigParams(shardis::server::Config());
  shardis::server::Config().SnapshotDefaults();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace server = shardis::server;
  const std::string text(reinterpret_cast<const char*>(data), size);
  server::ConfigSources sources;
  if (!server::LoadConfigText(text, "fuzz.conf", &sources).ok()) return 0;
  for (const auto& [flag, source] : sources) {
    const server::ConfigParam* p = server::Config().FindByFlag(flag);
    std::string value;
    if (p == nullptr || !gflags::GetCommandLineOption(flag.c_str(), &value)) continue;
    if (!server::ConfigRegistry::Parse(*p, value).ok()) abort();
  }
  return 0;
}
