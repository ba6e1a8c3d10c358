// Loading the AOF at start (aof.h): the manifest, the base snapshot, then every incr file's
// commands replayed through the command table, as Redis' loader replays them with a fake client.
#include <fcntl.h>
#include <glog/logging.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "core/aof_manifest.h"
#include "core/aof_reader.h"
#include "core/string_util.h"
#include "io/proactor.h"
#include "server/aof.h"
#include "server/command.h"
#include "server/connection_state.h"
#include "server/file_source.h"
#include "server/persistence_status.h"
#include "server/rdb_load.h"
#include "shard/shard_set.h"

namespace shardis::server {

namespace {

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return absl::NotFoundError(path);
    return absl::InternalError(core::Concat("can't open ", path, ": ", strerror(errno)));
  }
  std::string text(FileSize(path), '\0');
  const int got = io::Proactor::current()->ReadAt(fd, text.data(), text.size(), 0);
  close(fd);
  if (got < 0) return absl::InternalError(core::Concat("can't read ", path, ": ", strerror(-got)));
  text.resize(size_t(got));
  return text;
}

// Runs the commands of an AOF as a client would, without replies: the journal is off while
// loading, so nothing is recorded again. SELECT is the replayer's own (it is the fake client's
// database); MULTI queues until EXEC, whose commands then run one after the other (nothing else
// runs during the load, so that is atomic enough).
//
// Single-key commands wait in a batch per shard, and each batch runs in one hop, the shards in
// parallel: commands on different shards commute and each shard keeps the file's order, so the
// result is the file's. A hop per command would make the load as slow as a thread switch per
// command (and much slower on a busy machine). Any other command runs after every batched one.
class Replayer {
 public:
  Replayer() : batches_(shard::shard_set->size()) {}

  absl::Status Run(core::AofCommand& cmd) {
    const std::string name = core::ToLower(cmd.args[0]);
    if (name == "multi") {
      in_multi_ = true;
      queued_.clear();
      return absl::OkStatus();
    }
    if (name == "exec") {
      in_multi_ = false;
      for (std::vector<std::string>& q : queued_) {
        if (absl::Status s = Execute(std::move(q), cmd.offset); !s.ok()) return s;
      }
      queued_.clear();
      return absl::OkStatus();
    }
    if (in_multi_) {
      queued_.push_back(std::move(cmd.args));
      return absl::OkStatus();
    }
    return Execute(std::move(cmd.args), cmd.offset);
  }

  // Runs every batched command (at the end of a file, and before any command that is not one).
  void Flush() {
    if (batched_ == 0) return;
    std::vector<unsigned> sids;
    for (unsigned sid = 0; sid < batches_.size(); ++sid) {
      if (!batches_[sid].empty()) sids.push_back(sid);
    }
    shard::shard_set->AwaitShards(sids, [this](shard::Shard& s) {
      std::string reply;
      core::ReplyBuilder rb;
      rb.set_output(&reply);
      for (Batched& b : batches_[s.id()]) {
        std::vector<std::string_view> args(b.args.begin(), b.args.end());
        reply.clear();
        ShardContext ctx{s, s.db(b.db), rb, shard::NowMs(), core::HashBytes(args[1])};
        RunShardCommand(*b.spec, args, ctx);
        LogFailure(reply, b.offset);
      }
      batches_[s.id()].clear();
    });
    batched_ = 0;
  }

 private:
  struct Batched {
    const CommandSpec* spec;
    int db;
    std::vector<std::string> args;
    uint64_t offset;
  };
  static constexpr size_t kBatch = 1024;  // commands batched before they run

  static void LogFailure(const std::string& reply, uint64_t offset) {
    if (!reply.empty() && reply[0] == '-') {
      // Redis goes on after a command that fails; so does shardis, and says so.
      LOG(WARNING) << "the command at byte " << offset << " of the append only file failed: "
                   << reply.substr(1, reply.find('\r') - 1);
    }
  }

  absl::Status Execute(std::vector<std::string> strings, uint64_t offset) {
    const CommandSpec* spec = Registry().Find(strings[0]);
    if (spec == nullptr) {
      return absl::DataLossError(core::Concat("at byte ", offset, ": Unknown command '", strings[0],
                                              "' reading the append only file"));
    }
    if (spec->name == "select") {
      int64_t db = -1;
      if (strings.size() != 2 || !core::ParseInt64(strings[1], &db) || db < 0 ||
          db >= shard::Shard::kNumDbs) {
        return absl::DataLossError(core::Concat("at byte ", offset, ": invalid SELECT in the append only file"));
      }
      conn_.db = int(db);
      return absl::OkStatus();
    }
    if (spec->on_shard != nullptr) {
      if (strings.size() < 2) return absl::OkStatus();
      const unsigned sid = shard::shard_set->ShardOf(strings[1]);
      batches_[sid].push_back({spec, conn_.db, std::move(strings), offset});
      if (++batched_ >= kBatch) Flush();
      return absl::OkStatus();
    }
    Flush();
    if (spec->on_conn != nullptr) {
      std::vector<std::string_view> args(strings.begin(), strings.end());
      std::string reply;
      core::ReplyBuilder rb;
      rb.set_output(&reply);
      ConnContext ctx{conn_, rb};
      spec->on_conn(args, ctx);
      LogFailure(reply, offset);
    }
    return absl::OkStatus();
  }

  ConnectionState conn_;
  bool in_multi_ = false;
  std::vector<std::vector<std::string>> queued_;
  std::vector<std::vector<Batched>> batches_;  // per shard, in the file's order
  size_t batched_ = 0;
};

// Replays one AOF file (an incr file, or a base in AOF format); `last`: it is the last file of
// the manifest, the only one aof-load-truncated may cut.
absl::Status ReplayFile(const std::string& path, bool last, Replayer* replayer, uint64_t* commands) {
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return absl::InternalError(core::Concat("can't open the append only file ", path, ": ", strerror(errno)));
  FileSource source(fd, 0);
  core::AofReader reader(&source);
  core::AofCommand cmd;
  absl::Status status;
  for (;;) {
    absl::StatusOr<bool> more = reader.Next(&cmd);
    if (!more.ok()) {
      status = more.status();
      break;
    }
    if (!*more) break;
    status = replayer->Run(cmd);
    if (!status.ok()) break;
    ++*commands;
  }
  replayer->Flush();
  if (status.ok() && reader.end() == core::AofReader::End::kTruncated) {
    if (!last || !AofLoadTruncated()) {
      status = absl::DataLossError(core::Concat(reader.truncation(), " (", path,
                                                "; aof-load-truncated is ", AofLoadTruncated() ? "yes" : "no",
                                                last ? ")" : ", and it is not the last file)"));
    } else {
      LOG(WARNING) << "!!! Warning: short read while loading the AOF file " << path << "!!! "
                   << reader.truncation();
      LOG(WARNING) << "AOF " << path << " loaded anyway because aof-load-truncated is enabled; "
                   << "truncating it to " << reader.valid_up_to() << " bytes";
      if (ftruncate(fd, off_t(reader.valid_up_to())) != 0) {
        status = absl::InternalError(core::Concat("can't truncate ", path, ": ", strerror(errno)));
      }
    }
  }
  close(fd);
  if (!status.ok()) return absl::DataLossError(core::Concat(path, ": ", status.message()));
  return absl::OkStatus();
}

}  // namespace

absl::Status LoadAppendOnlyFiles() {
  const std::string dir = AppendDirname();
  const std::string manifest_path = core::Concat(dir, "/", core::AofManifestName(AppendFilename()));
  absl::StatusOr<std::string> text = ReadWholeFile(manifest_path);
  if (!text.ok()) return text.status();
  absl::StatusOr<core::AofManifest> manifest = core::ParseAofManifest(*text);
  if (!manifest.ok()) {
    return absl::DataLossError(core::Concat("the AOF manifest ", manifest_path, ": ", manifest.status().message()));
  }
  const auto start = std::chrono::steady_clock::now();
  uint64_t total = 0;
  for (const core::AofFileInfo& f : manifest->incrs) total += FileSize(core::Concat(dir, "/", f.name));
  uint64_t base_size = 0;
  if (manifest->base) base_size = FileSize(core::Concat(dir, "/", manifest->base->name));
  BeginLoading(base_size + total);
  Replayer replayer;
  uint64_t commands = 0;
  if (manifest->base) {
    const std::string path = core::Concat(dir, "/", manifest->base->name);
    if (manifest->base->name.ends_with(core::kAofRdbFormatSuffix)) {
      LoadResult result;
      if (absl::Status s = LoadSnapshot(path, /*merge=*/false, &result); !s.ok()) return s;
      LOG(INFO) << "DB loaded from base file " << manifest->base->name << ": " << result.keys << " keys";
    } else if (absl::Status s = ReplayFile(path, /*last=*/false, &replayer, &commands); !s.ok()) {
      return s;
    }
  }
  for (size_t i = 0; i < manifest->incrs.size(); ++i) {
    const std::string path = core::Concat(dir, "/", manifest->incrs[i].name);
    if (absl::Status s = ReplayFile(path, i + 1 == manifest->incrs.size(), &replayer, &commands); !s.ok()) {
      return s;
    }
  }
  // The loading state stays until the journals record (main: StartAppendOnlyNow), so that no
  // write slips in between unjournaled.
  uint64_t size = base_size;
  for (const core::AofFileInfo& f : manifest->incrs) size += FileSize(core::Concat(dir, "/", f.name));
  LoadedAppendOnlyManifest(*std::move(manifest), base_size, size);
  LOG(INFO) << "DB loaded from append only file: " << commands << " commands in "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << " seconds";
  return absl::OkStatus();
}

}  // namespace shardis::server
