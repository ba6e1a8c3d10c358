// One ACL user's rules, compiled into the form a command check reads (Redis 7.2's acl.c is the
// spec: its rules, their canonical text for ACL LIST, and its error texts).
//
// An AclUser is built by applying rules ("on", ">pass", "+@read", "~key*", "(...)" selectors) to
// a copy of the current one, and is immutable once published (acl_users.h): connections keep a
// shared_ptr to their user's and read it on their own thread without a lock.
//
// Commands are identified by their statistics id (command_stats.h): every command and subcommand
// has a dense one, so a selector's allowed commands are a bitmap indexed by it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/acl_denial.h"
#include "server/command.h"

namespace shardis::server {

struct SubCommand;

// The permissions of a key pattern: ~ (both), %R~, %W~, %RW~.
enum AclKeyPerm : uint8_t { kAclKeyRead = 1, kAclKeyWrite = 2, kAclKeyReadWrite = 3 };

struct AclKeyPattern {
  std::string pattern;
  uint8_t perms = kAclKeyReadWrite;
};

// The permissions of one selector: the user's root one, or a "(...)" one; a command is allowed
// when any selector allows it with all its keys and channels.
struct AclSelector {
  bool all_keys = false;      // ~* / allkeys
  bool all_channels = false;  // &* / allchannels
  bool all_commands = false;  // Redis' ALLCOMMANDS flag: +@all and nothing removed since
  bool future_commands = false;  // based on +@all (Redis' reserved bit): ACL LIST's first rule
  std::vector<uint64_t> allowed;  // one bit per command id
  // +cmd|arg for a command without subcommands (+select|0): the first arguments allowed.
  std::vector<std::pair<uint32_t, std::vector<std::string>>> first_args;
  std::vector<AclKeyPattern> keys;
  std::vector<std::string> channels;
  // The command rules applied since the last +@all/-@all, deduplicated as Redis does
  // (ACLUpdateCommandRules): what ACL LIST shows after the +@all/-@all.
  std::string command_rules;

  bool Allows(uint32_t id) const { return (allowed[id / 64] >> (id % 64)) & 1; }
};

struct AclUser {
  std::string name;
  bool enabled = false;           // on/off
  bool nopass = false;
  bool sanitize_payload = true;   // sanitize-payload / skip-sanitize-payload
  std::vector<std::string> passwords;  // SHA-256 hex digests, in the order added
  std::vector<AclSelector> selectors;  // [0] is the root selector
  // Set by Seal(): the root selector allows every command, key and channel (the default user's
  // +@all ~* &*), so a connection skips the check with one branch.
  bool unrestricted = false;

  // A new user as ACL SETUSER creates it: off, no passwords, no permissions.
  explicit AclUser(std::string user_name);
  void Seal();
};

struct AclCheck {
  AclDenial denial = AclDenial::kNone;
  int arg = 0;  // the argument (key or channel) refused; 0 for the command itself
};

// acl-pubsub-default: whether a new user, a new selector and 'reset' allow every channel
// (allchannels) or none (resetchannels, the default).
bool AclNewUsersAllowAllChannels();
void SetAclNewUsersAllowAllChannels(bool all);

// Applies ACL SETUSER's rules to *user in order; Redis merges "(" ... ")" arguments into one
// selector first. Returns "" or Redis' error (without "ERR "): on error *user is partly changed,
// so callers apply to a copy.
std::string ApplyAclRules(AclUser* user, std::span<const std::string_view> rules);

// ACL LIST's text of a user after "user <name> " (Redis' ACLDescribeUser).
std::string DescribeAclUser(const AclUser& user);
// ACL GETUSER's "commands", "keys" and "channels" of one selector.
std::string DescribeAclCommands(const AclSelector& selector);
std::string DescribeAclKeys(const AclSelector& selector);
std::string DescribeAclChannels(const AclSelector& selector);

// Whether the user may run this command line (args[0] is the command, `sub` its resolved
// subcommand or null). Redis' ACLCheckAllUserCommandPerm.
AclCheck CheckAclCommand(const AclUser& user, const CommandSpec& spec, const SubCommand* sub,
                         ArgSlice args);
// Whether the user may read/write this key (%R~/%W~ as asked), or use this channel (a PSUBSCRIBE
// pattern is compared literally). For commands whose keys or channels are found while running.
bool AclAllowsKey(const AclUser& user, std::string_view key, uint8_t perms);
bool AclAllowsChannel(const AclUser& user, std::string_view channel, bool is_pattern);

// The command's full name ("get", "config|get"), for the error texts and ACL LOG.
std::string_view AclCommandName(const CommandSpec& spec, const SubCommand* sub);

// Redis 7.2's -NOPERM texts (without "NOPERM "): the short form the command gets, and the verbose
// one ACL DRYRUN answers.
std::string AclDenialMessage(const AclUser& user, const AclCheck& check, const CommandSpec& spec,
                             const SubCommand* sub, ArgSlice args, bool verbose);

// Whether a user name or pattern has whitespace or NUL, which rules refuse (ACLStringHasSpaces).
bool AclHasSpaces(std::string_view s);

// The 21 ACL categories, in Redis' order (ACL CAT).
std::span<const std::string_view> AclCategories();
// The bit of a category name (case-insensitive), or 0 when there is none.
uint32_t AclCategoryBit(std::string_view name);

}  // namespace shardis::server
