#include "server/function_registry.h"

#include <absl/functional/function_ref.h>

#include <algorithm>
#include <cctype>

#include "core/resp_parser.h"
#include "server/script_run.h"
#include "shard/shard_set.h"

namespace shardis::server {

namespace {

constexpr std::string_view kBadNameErr =
    "Library names can only contain letters, numbers, or underscores(_) and must be at least one "
    "character long";

// What the first line of a library says: "#!<engine> name=<name>".
struct LibraryMetadata {
  std::string engine;
  std::string name;
  std::string_view code;  // from the first line's newline on (line numbers stay the file's)
};

// Redis' functionExtractLibMetaData.
bool ParseMetadata(std::string_view payload, LibraryMetadata* md, std::string* error) {
  if (!payload.starts_with("#!")) {
    *error = "Missing library metadata";
    return false;
  }
  const size_t eol = payload.find('\n');
  if (eol == std::string_view::npos) {
    *error = "Invalid library metadata";
    return false;
  }
  // Split as Redis splits it (sdssplitargs): name="foo" is name=foo.
  std::vector<std::string> parts;
  if (!core::SplitArgs(payload.substr(0, eol), &parts) || parts.empty()) {
    *error = "Invalid library metadata";
    return false;
  }
  md->engine = std::string(parts[0].substr(std::min<size_t>(2, parts[0].size())));
  bool named = false;
  for (size_t i = 1; i < parts.size(); ++i) {
    if (parts[i].size() >= 5 && core::EqualsIgnoreCase(parts[i].substr(0, 5), "name=")) {
      if (named) {
        *error = "Invalid metadata value, name argument was given multiple times";
        return false;
      }
      md->name = parts[i].substr(5);
      named = true;
      continue;
    }
    *error = core::Concat("Invalid metadata value given: ", parts[i]);
    return false;
  }
  if (!named) {
    *error = "Library name was not given";
    return false;
  }
  md->code = payload.substr(eol);
  return true;
}

bool ValidLibraryName(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// Where a library's redis.log goes while its code runs; nothing else of a host is used then.
class LoadLogHost : public core::ScriptHost {
 public:
  CallResult Call(std::span<const std::string_view>, CallOptions, std::string* reply) override {
    *reply = "-ERR not allowed at load time\r\n";  // unreachable: no redis.call at load time
    return CallResult::kReplied;
  }
  void Log(int level, std::string_view message) override { LogFromScript(level, message); }
  int CheckCommandPermission(std::span<const std::string_view>) override { return -1; }
};

// Checks, parses and runs a library's code. exists: whether the set it joins has the name.
// log: whether redis.log writes (a library's code runs on every thread, and once more on the
// calling thread first: only that run logs, so a message is logged once, as in Redis).
bool PrepareLibrary(std::string_view code, int64_t timeout_ms, bool log,
                    absl::FunctionRef<bool(std::string_view)> exists, std::string* name,
                    std::vector<core::LuaFunctionInfo>* functions, std::string* error) {
  LibraryMetadata md;
  if (!ParseMetadata(code, &md, error)) return false;
  if (!ValidLibraryName(md.name)) {
    *error = std::string(kBadNameErr);
    return false;
  }
  if (!core::EqualsIgnoreCase(md.engine, "lua")) {
    *error = core::Concat("Engine '", md.engine, "' not found");
    return false;
  }
  if (exists(md.name)) {
    *error = core::Concat("Library '", md.name, "' already exists");
    return false;
  }
  LoadLogHost log_host;
  core::LuaInterpreter& lua = ThreadLua();
  if (!lua.LoadLibrary(md.name, md.code, timeout_ms, log ? &log_host : nullptr, functions,
                       error)) {
    return false;
  }
  if (functions->empty()) {
    lua.DiscardLibrary(md.name);
    *error = "No functions registered";
    return false;
  }
  *name = std::move(md.name);
  return true;
}

}  // namespace

FunctionRegistry& FunctionRegistry::current() {
  static thread_local FunctionRegistry registry;
  return registry;
}

std::string FunctionRegistry::Collision(std::span<const Candidate> candidates,
                                        std::span<const std::string> replaced) const {
  for (const Candidate& c : candidates) {
    for (const core::LuaFunctionInfo& f : c.library.functions) {
      auto it = functions_.find(core::ToLower(f.name));
      if (it == functions_.end()) continue;
      if (std::find(replaced.begin(), replaced.end(), it->second.library) != replaced.end()) {
        continue;
      }
      return core::Concat("Function ", f.name, " already exists");
    }
  }
  return {};
}

bool FunctionRegistry::Load(std::string_view code, bool replace, bool commit, int64_t timeout_ms,
                            std::string* name, std::string* error) {
  Candidate c;
  c.library.code = std::string(code);
  const bool ok = PrepareLibrary(
      code, timeout_ms, /*log=*/!commit,
      [&](std::string_view lib) { return !replace && libraries_.contains(lib); }, &c.name,
      &c.library.functions, error);
  if (!ok) {
    *error = core::Concat("ERR ", *error);
    return false;
  }
  const std::string replaced[] = {c.name};
  if (std::string collision = Collision({&c, 1}, replaced); !collision.empty()) {
    ThreadLua().DiscardLibrary(c.name);
    *error = core::Concat("ERR ", collision);
    return false;
  }
  *name = c.name;
  if (!commit) {
    ThreadLua().DiscardLibrary(c.name);
    return true;
  }
  if (libraries_.contains(c.name)) Unlink(c.name);
  Link(std::move(c));
  return true;
}

bool FunctionRegistry::Restore(std::span<const std::string> codes, RestorePolicy policy,
                               bool commit, std::string* error) {
  std::vector<Candidate> fresh;
  auto discard = [&] {
    for (const Candidate& c : fresh) ThreadLua().DiscardLibrary(c.name);
  };
  auto fail = [&](std::string_view message) {
    discard();
    *error = core::Concat("ERR ", message);
    return false;
  };
  // The payload's libraries as a set of their own (Redis loads them into a new context).
  absl::flat_hash_map<std::string, std::string> fresh_functions;  // lower-case name -> library
  for (const std::string& code : codes) {
    Candidate c;
    c.library.code = code;
    std::string message;
    auto in_fresh = [&](std::string_view lib) {
      return std::any_of(fresh.begin(), fresh.end(),
                         [&](const Candidate& f) { return f.name == lib; });
    };
    if (!PrepareLibrary(code, 0, /*log=*/!commit, in_fresh, &c.name, &c.library.functions,
                        &message)) {
      return fail(message);
    }
    for (const core::LuaFunctionInfo& f : c.library.functions) {
      if (fresh_functions.contains(core::ToLower(f.name))) {
        ThreadLua().DiscardLibrary(c.name);
        return fail(core::Concat("Function ", f.name, " already exists"));
      }
    }
    for (const core::LuaFunctionInfo& f : c.library.functions) {
      fresh_functions.emplace(core::ToLower(f.name), c.name);
    }
    fresh.push_back(std::move(c));
  }
  std::vector<std::string> replaced;
  if (policy == RestorePolicy::kFlush) {
    for (const auto& [name, lib] : libraries_) replaced.push_back(name);
  } else {
    for (const Candidate& c : fresh) {
      if (!libraries_.contains(c.name)) continue;
      if (policy == RestorePolicy::kAppend) {
        return fail(core::Concat("Library ", c.name, " already exists"));
      }
      replaced.push_back(c.name);
    }
  }
  if (std::string collision = Collision(fresh, replaced); !collision.empty()) {
    return fail(collision);
  }
  if (!commit) {
    discard();
    return true;
  }
  for (const std::string& name : replaced) Unlink(name);
  for (Candidate& c : fresh) Link(std::move(c));
  return true;
}

bool FunctionRegistry::Delete(std::string_view library) {
  auto it = libraries_.find(library);
  if (it == libraries_.end()) return false;
  Unlink(it->first);
  return true;
}

void FunctionRegistry::Flush() {
  while (!libraries_.empty()) Unlink(libraries_.begin()->first);
}

FunctionRegistry::Function* FunctionRegistry::Find(std::string_view name) {
  auto it = functions_.find(core::ToLower(name));
  return it == functions_.end() ? nullptr : &it->second;
}

std::vector<std::string> FunctionRegistry::Codes() const {
  std::vector<std::string> codes;
  for (const auto& [name, lib] : libraries_) codes.push_back(lib.code);
  return codes;
}

void FunctionRegistry::Unlink(const std::string& library) {
  const std::string name = library;  // `library` may be a key of the map erased below
  auto it = libraries_.find(name);
  if (it == libraries_.end()) return;
  for (const core::LuaFunctionInfo& f : it->second.functions) {
    auto fn = functions_.find(core::ToLower(f.name));
    if (fn != functions_.end() && fn->second.library == name) functions_.erase(fn);
  }
  libraries_.erase(it);
  ThreadLua().DeleteLibrary(name);
}

void FunctionRegistry::Link(Candidate c) {
  ThreadLua().CommitLibrary(c.name);
  for (const core::LuaFunctionInfo& f : c.library.functions) {
    // Two names of one library that differ only in case: the first one is found (as in Redis).
    functions_.try_emplace(core::ToLower(f.name), Function{c.name, f});
  }
  libraries_[c.name] = std::move(c.library);
}

absl::Status LoadFunctionLibraries(std::span<const std::string> codes) {
  if (codes.empty()) return absl::OkStatus();
  std::string error;
  if (!FunctionRegistry::current().Restore(codes, RestorePolicy::kReplace, false, &error)) {
    return absl::InvalidArgumentError(core::Concat("Failed loading the functions: ", error));
  }
  shard::shard_set->AwaitAll([&](shard::Shard&) {
    std::string e;
    FunctionRegistry::current().Restore(codes, RestorePolicy::kReplace, true, &e);
  });
  return absl::OkStatus();
}

}  // namespace shardis::server
