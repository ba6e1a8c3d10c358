// The aclfile: ACL LOAD / ACL SAVE, and its load at start (Redis' ACLLoadFromFile,
// ACLSaveToFile).
#include "server/acl_file.h"

#include <gflags/gflags.h>
#include <glog/logging.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/string_util.h"
#include "server/acl_users.h"

DEFINE_string(aclfile, "",
              "file of ACL users (ACL LOAD / ACL SAVE), loaded at start; cannot be combined with "
              "user lines in the config file");

namespace shardis::server {

const std::string& AclFile() { return FLAGS_aclfile; }

std::string AclFileLine(const AclUser& user) {
  return core::Concat("user ", user.name, " ", DescribeAclUser(user));
}

namespace {

std::vector<std::vector<std::string>>& ConfigUserLines() {
  static std::vector<std::vector<std::string>> lines;
  return lines;
}

}  // namespace

void AddConfigUserLines(std::vector<std::vector<std::string>> lines) {
  for (auto& line : lines) ConfigUserLines().push_back(std::move(line));
}

std::string LoadAclUsersAtStart() {
  const auto& lines = ConfigUserLines();
  if (!lines.empty() && !FLAGS_aclfile.empty()) {
    return "Configuring Redis with users defined in redis.conf and at the same setting an ACL "
           "file path is invalid. This setup is very likely to lead to configuration errors and "
           "security holes, please define either an ACL file or declare users directly in your "
           "redis.conf, but not both.";
  }
  if (!FLAGS_aclfile.empty()) return LoadAclFile(nullptr);
  for (const std::vector<std::string>& words : lines) {
    if (words.empty()) return "'user' needs a user name";
    // Redis' ACLLoadConfiguredUsers: each user starts from reset (the default user too).
    std::vector<std::string_view> rules = {"reset"};
    rules.insert(rules.end(), words.begin() + 1, words.end());
    if (std::string err = SetAclUser(words[0], rules, nullptr); !err.empty()) {
      return core::Concat("Error loading user '", words[0], "' from the config file: ", err);
    }
  }
  return "";
}

std::string LoadAclFile(ConnContext* ctx) {
  const std::string& path = FLAGS_aclfile;
  std::ifstream in(path);
  if (!in) {
    return core::Concat("Error loading ACLs, opening file '", path, "': ", std::strerror(errno));
  }
  std::vector<AclUser> users;
  std::string errors;
  std::string line;
  for (int linenum = 1; std::getline(in, line); ++linenum) {
    const size_t b = line.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) continue;
    line = line.substr(b, line.find_last_not_of(" \t\r\n") - b + 1);
    const std::vector<std::string_view> words = core::SplitWords(line);
    if (words.size() < 2 || words[0] != "user") {
      core::Append(&errors, path, ":", linenum,
                   " should start with user keyword followed by the username. ");
      continue;
    }
    const bool duplicate = std::any_of(users.begin(), users.end(),
                                       [&](const AclUser& u) { return u.name == words[1]; });
    if (duplicate) {
      core::Append(&errors, "WARNING: Duplicate user '", words[1], "' found on line ", linenum,
                   ". ");
      continue;
    }
    AclUser user{std::string(words[1])};
    const std::string err =
        ApplyAclRules(&user, std::span<const std::string_view>(words).subspan(2));
    if (!err.empty()) {
      core::Append(&errors, path, ":", linenum, ": ", err, ". ");
      continue;
    }
    users.push_back(std::move(user));
  }
  if (!errors.empty()) {
    return errors +
           "WARNING: ACL errors detected, no change to the previously active ACL rules was "
           "performed";
  }
  ReplaceAclUsers(std::move(users), ctx);
  return "";
}

bool SaveAclFile() {
  std::string text;
  for (const AclUserPtr& u : AllAclUsers()) core::Append(&text, AclFileLine(*u), "\n");
  const std::string tmp = FLAGS_aclfile + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      LOG(WARNING) << "Opening temp ACL file for ACL SAVE: " << std::strerror(errno);
      return false;
    }
  }
  if (std::rename(tmp.c_str(), FLAGS_aclfile.c_str()) != 0) {
    LOG(WARNING) << "Renaming ACL file for ACL SAVE: " << std::strerror(errno);
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace shardis::server
