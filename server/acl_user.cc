// ACL rules: parsing (Redis' ACLSetUser/ACLSetSelector), canonical text (ACLDescribeUser) and the
// command check (ACLCheckAllUserCommandPerm). See acl_user.h.
#include "server/acl_user.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <optional>

#include <gflags/gflags.h>
#include <glog/logging.h>

#include "core/glob.h"
#include "core/sha256.h"
#include "core/string_util.h"
#include "server/command_keys.h"
#include "server/command_stats.h"
#include "server/subcommand.h"

DEFINE_string(acl_pubsub_default, "resetchannels",
              "channels a new ACL user (and 'reset') starts with: resetchannels (none) or "
              "allchannels, as Redis' acl-pubsub-default");

namespace shardis::server {

namespace {

// acl-pubsub-default: whether new selectors allow every channel (Redis' server.acl_pubsub_default).
// Read only while rules are applied, never by a command check.
std::atomic<bool> g_new_selectors_allow_channels{false};

constexpr std::string_view kCategories[] = {
    "keyspace", "read",     "write",       "set",        "sortedset",   "list",     "hash",
    "string",   "bitmap",   "hyperloglog", "geo",        "stream",      "pubsub",   "admin",
    "fast",     "slow",     "blocking",    "dangerous",  "connection",  "transaction",
    "scripting"};

uint32_t CategoryBits(std::string_view words) {
  uint32_t bits = 0;
  for (std::string_view w : core::SplitWords(words)) bits |= AclCategoryBit(w);
  return bits;
}

// What the rules need to know of every command and subcommand, by command id.
struct AclCommandInfo {
  std::string full_name;  // "get", "config|get"
  uint32_t categories = 0;
  bool is_sub = false;
  std::vector<uint32_t> subs;  // a container's subcommands' ids
  // What the command's first key and its other keys need (PermsOfKeyFlags of its key specs'
  // flags), found once here rather than on every call; no value for a NOT_KEY spec. SET and
  // BITFIELD (`per_call_key_flags`) decide per call, from their arguments (KeyFlagsOf).
  std::optional<uint8_t> first_key_perms, other_key_perms;
  bool per_call_key_flags = false;
};

// The permissions a key needs, from Redis' key spec flags: read (ACCESS) and/or write (INSERT,
// DELETE, UPDATE); none for a NOT_KEY spec (SPUBLISH's and SSUBSCRIBE's shard channels), which
// Redis' ACL key check skips (getKeysFromCommandWithSpecs without GET_KEYSPEC_INCLUDE_NOT_KEYS).
// Word by word without a vector: SET's flags are read on every call.
std::optional<uint8_t> PermsOfKeyFlags(std::string_view flags) {
  uint8_t perms = 0;
  while (!flags.empty()) {
    const size_t space = flags.find(' ');
    const std::string_view f = flags.substr(0, space);
    flags.remove_prefix(space == std::string_view::npos ? flags.size() : space + 1);
    if (core::EqualsIgnoreCase(f, "not_key")) return std::nullopt;
    if (core::EqualsIgnoreCase(f, "access")) perms |= kAclKeyRead;
    if (core::EqualsIgnoreCase(f, "insert") || core::EqualsIgnoreCase(f, "delete") ||
        core::EqualsIgnoreCase(f, "update")) {
      perms |= kAclKeyWrite;
    }
  }
  return perms;
}

void SetKeyPerms(const CommandSpec& spec, AclCommandInfo* info) {
  info->per_call_key_flags = spec.name == "set" || spec.name == "bitfield";
  info->first_key_perms = PermsOfKeyFlags(spec.docs.key_flags);
  info->other_key_perms = spec.docs.other_key_flags.empty()
                              ? info->first_key_perms
                              : PermsOfKeyFlags(spec.docs.other_key_flags);
}

struct AclCommandTable {
  std::vector<AclCommandInfo> by_id;
  std::vector<uint32_t> top_level;  // ids of the commands (not subcommands)
};

// Built at first use, after every family registered its commands (rules are applied only once
// the server runs or its config is read, both after registration).
const AclCommandTable& Table() {
  static const AclCommandTable table = [] {
    CHECK_GT(NumCommandStatsIds(), 0u) << "ACL rules applied before the commands were registered";
    AclCommandTable t;
    t.by_id.resize(NumCommandStatsIds());
    for (const auto& [name, spec] : Registry().all()) {
      const uint32_t id = StatsIdOf(spec, nullptr);
      AclCommandInfo& info = t.by_id[id];
      info.full_name = std::string(spec.name);
      info.categories = CategoryBits(spec.acl_categories);
      SetKeyPerms(spec, &info);
      t.top_level.push_back(id);
      if (spec.container == nullptr) continue;
      for (const SubCommand& sub : spec.container->subs) {
        const uint32_t sub_id = StatsIdOf(spec, &sub);
        AclCommandInfo& s = t.by_id[sub_id];
        s.full_name = core::Concat(spec.name, "|", sub.name);
        s.categories = CategoryBits(sub.acl_categories);
        s.is_sub = true;
        SetKeyPerms(spec, &s);  // the key flags are the command's (KeyFlagsOf)
        info.subs.push_back(sub_id);
      }
    }
    std::sort(t.top_level.begin(), t.top_level.end());
    return t;
  }();
  return table;
}

// ACLLookupCommand: "get" or "config|get"; nullopt-like -1 when there is no such command.
int64_t LookupCommandId(std::string_view name) {
  const size_t bar = name.find('|');
  const CommandSpec* spec = Registry().Find(name.substr(0, bar));
  if (spec == nullptr) return -1;
  if (bar == std::string_view::npos) return StatsIdOf(*spec, nullptr);
  if (spec->container == nullptr) return -1;
  const SubCommand* sub = FindSub(*spec->container, name.substr(bar + 1));
  // Not a conditional expression: its common type with StatsIdOf's uint32_t would turn -1 into
  // 4294967295, a "found" id past the table (an unknown subcommand crashed ACL SETUSER).
  if (sub == nullptr) return -1;
  return StatsIdOf(*spec, sub);
}

// Errors of a rule, as Redis' ACLSetUserStringError words them.
enum class RuleError { kNone, kUnknownName, kSyntax, kKeyAfterAll, kChannelAfterAll, kNoSuchPass,
                       kBadHash, kFirstArgOfSub };

std::string_view RuleErrorText(RuleError e) {
  switch (e) {
    case RuleError::kUnknownName: return "Unknown command or category name in ACL";
    case RuleError::kSyntax: return "Syntax error";
    case RuleError::kKeyAfterAll:
      return "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does "
             "not have any effect. Try 'resetkeys' to start with an empty list of patterns";
    case RuleError::kChannelAfterAll:
      return "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and "
             "does not have any effect. Try 'resetchannels' to start with an empty list of "
             "channels";
    case RuleError::kNoSuchPass:
      return "The password you are trying to remove from the user does not exist";
    case RuleError::kBadHash:
      return "The password hash must be exactly 64 characters and contain only lowercase "
             "hexadecimal characters";
    case RuleError::kFirstArgOfSub: return "Allowing first-arg of a subcommand is not supported";
    case RuleError::kNone: break;
  }
  return "Wrong format";
}

bool ValidHash(std::string_view h) {
  return h.size() == 64 && std::all_of(h.begin(), h.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

void SetBit(AclSelector* s, uint32_t id, bool value) {
  if (value) {
    s->allowed[id / 64] |= uint64_t(1) << (id % 64);
  } else {
    s->allowed[id / 64] &= ~(uint64_t(1) << (id % 64));
    s->all_commands = false;
  }
}

// ACLChangeSelectorPerm: the command, and a container's subcommands with it.
void ChangePerm(AclSelector* s, uint32_t id, bool allow) {
  SetBit(s, id, allow);
  std::erase_if(s->first_args, [&](const auto& fa) { return fa.first == id; });
  for (uint32_t sub : Table().by_id[id].subs) SetBit(s, sub, allow);
}

// ACLUpdateCommandRules: a rule replaces an earlier one on the same command (and a command's
// rule those on its subcommands), then goes last.
void UpdateCommandRules(AclSelector* s, std::string_view rule, bool allow) {
  const std::string name = core::ToLower(rule);
  std::string kept;
  for (std::string_view existing : core::SplitWords(s->command_rules)) {
    const std::string_view body = existing.substr(1);
    const bool same = body == name || (body.size() > name.size() &&
                                       body.substr(0, name.size()) == name &&
                                       body[name.size()] == '|');
    if (same) continue;
    if (!kept.empty()) kept += ' ';
    kept += existing;
  }
  if (!kept.empty()) kept += ' ';
  core::Append(&kept, allow ? "+" : "-", name);
  s->command_rules = std::move(kept);
}

void SetAllCommands(AclSelector* s, bool allow) {
  std::fill(s->allowed.begin(), s->allowed.end(), allow ? ~uint64_t(0) : 0);
  s->all_commands = allow;
  s->future_commands = allow;
  s->command_rules.clear();
  s->first_args.clear();
}

RuleError ApplyCategory(AclSelector* s, std::string_view rule, bool allow) {
  const uint32_t bit = AclCategoryBit(rule.substr(2));
  if (bit == 0) return RuleError::kUnknownName;
  UpdateCommandRules(s, rule.substr(1), allow);
  const AclCommandTable& t = Table();
  for (uint32_t id : t.top_level) {
    if (t.by_id[id].categories & bit) ChangePerm(s, id, allow);
    for (uint32_t sub : t.by_id[id].subs) {
      if (t.by_id[sub].categories & bit) ChangePerm(s, sub, allow);
    }
  }
  return RuleError::kNone;
}

// +cmd, +cmd|sub, +cmd|firstarg.
RuleError AllowCommand(AclSelector* s, std::string_view name) {
  const size_t bar = name.rfind('|');
  if (bar == std::string_view::npos) {
    const int64_t id = LookupCommandId(name);
    if (id < 0) return RuleError::kUnknownName;
    ChangePerm(s, uint32_t(id), true);
    UpdateCommandRules(s, Table().by_id[id].full_name, true);
    return RuleError::kNone;
  }
  const int64_t base = LookupCommandId(name.substr(0, bar));
  if (base < 0) return RuleError::kUnknownName;
  const AclCommandInfo& info = Table().by_id[base];
  if (info.is_sub) return RuleError::kFirstArgOfSub;
  const std::string_view first = name.substr(bar + 1);
  if (first.empty()) return RuleError::kSyntax;
  if (!info.subs.empty()) {
    const int64_t id = LookupCommandId(name);
    if (id < 0) return RuleError::kUnknownName;
    ChangePerm(s, uint32_t(id), true);
  } else {
    // Redis' allowed_firstargs (deprecated there, kept for SELECT|0 and the like).
    auto it = std::find_if(s->first_args.begin(), s->first_args.end(),
                           [&](const auto& fa) { return fa.first == uint32_t(base); });
    if (it == s->first_args.end()) it = s->first_args.insert(s->first_args.end(), {uint32_t(base), {}});
    const bool known = std::any_of(it->second.begin(), it->second.end(), [&](const std::string& a) {
      return core::EqualsIgnoreCase(a, first);
    });
    if (!known) it->second.emplace_back(first);
  }
  UpdateCommandRules(s, name, true);
  return RuleError::kNone;
}

// ACLSetSelector: the rules a selector takes.
RuleError ApplySelectorRule(AclSelector* s, std::string_view op) {
  auto is = [&](std::string_view word) { return core::EqualsIgnoreCase(op, word); };
  if (is("allkeys") || is("~*")) {
    s->all_keys = true;
    s->keys.clear();
  } else if (is("resetkeys")) {
    s->all_keys = false;
    s->keys.clear();
  } else if (is("allchannels") || is("&*")) {
    s->all_channels = true;
    s->channels.clear();
  } else if (is("resetchannels")) {
    s->all_channels = false;
    s->channels.clear();
  } else if (is("allcommands") || is("+@all")) {
    SetAllCommands(s, true);
  } else if (is("nocommands") || is("-@all")) {
    SetAllCommands(s, false);
  } else if (op[0] == '~' || op[0] == '%') {
    if (s->all_keys) return RuleError::kKeyAfterAll;
    uint8_t perms = kAclKeyReadWrite;
    size_t offset = 1;
    if (op[0] == '%') {
      perms = 0;
      bool tilde = false;
      for (; offset < op.size() && !tilde; ++offset) {
        const char c = char(std::toupper(static_cast<unsigned char>(op[offset])));
        if (c == 'R' && !(perms & kAclKeyRead)) {
          perms |= kAclKeyRead;
        } else if (c == 'W' && !(perms & kAclKeyWrite)) {
          perms |= kAclKeyWrite;
        } else if (op[offset] == '~') {
          tilde = true;
        } else {
          return RuleError::kSyntax;
        }
      }
      // Redis accepts "%R" and "%~x" and then cannot print them; both are refused here.
      if (!tilde || perms == 0) return RuleError::kSyntax;
    }
    const std::string_view pattern = op.substr(offset);
    if (AclHasSpaces(pattern)) return RuleError::kSyntax;
    auto it = std::find_if(s->keys.begin(), s->keys.end(),
                           [&](const AclKeyPattern& k) { return k.pattern == pattern; });
    if (it == s->keys.end()) {
      s->keys.push_back({std::string(pattern), perms});
    } else {
      it->perms |= perms;
    }
    s->all_keys = false;
  } else if (op[0] == '&') {
    if (s->all_channels) return RuleError::kChannelAfterAll;
    const std::string_view pattern = op.substr(1);
    if (AclHasSpaces(pattern)) return RuleError::kSyntax;
    if (std::find(s->channels.begin(), s->channels.end(), pattern) == s->channels.end()) {
      s->channels.emplace_back(pattern);
    }
  } else if (op.size() > 1 && (op[0] == '+' || op[0] == '-') && op[1] == '@') {
    return ApplyCategory(s, op, op[0] == '+');
  } else if (op[0] == '+') {
    return AllowCommand(s, op.substr(1));
  } else if (op[0] == '-') {
    const int64_t id = LookupCommandId(op.substr(1));
    if (id < 0) return RuleError::kUnknownName;
    ChangePerm(s, uint32_t(id), false);
    UpdateCommandRules(s, Table().by_id[id].full_name, false);
  } else {
    return RuleError::kSyntax;
  }
  return RuleError::kNone;
}

// Redis' ACLCreateSelector: no permissions, but every channel under acl-pubsub-default
// allchannels.
AclSelector NewSelector() {
  AclSelector s;
  s.allowed.assign((Table().by_id.size() + 63) / 64, 0);
  s.all_channels = AclNewUsersAllowAllChannels();
  return s;
}

// ACLSetUser: one rule of a user.
RuleError ApplyUserRule(AclUser* u, std::string_view op) {
  if (op.empty()) return RuleError::kNone;
  auto is = [&](std::string_view word) { return core::EqualsIgnoreCase(op, word); };
  if (is("on")) {
    u->enabled = true;
  } else if (is("off")) {
    u->enabled = false;
  } else if (is("skip-sanitize-payload")) {
    u->sanitize_payload = false;
  } else if (is("sanitize-payload")) {
    u->sanitize_payload = true;
  } else if (is("nopass")) {
    u->nopass = true;
    u->passwords.clear();
  } else if (is("resetpass")) {
    u->nopass = false;
    u->passwords.clear();
  } else if (op[0] == '>' || op[0] == '#') {
    std::string hash = op[0] == '>' ? core::Sha256Hex(op.substr(1)) : std::string(op.substr(1));
    if (op[0] == '#' && !ValidHash(hash)) return RuleError::kBadHash;
    if (std::find(u->passwords.begin(), u->passwords.end(), hash) == u->passwords.end()) {
      u->passwords.push_back(std::move(hash));
    }
    u->nopass = false;
  } else if (op[0] == '<' || op[0] == '!') {
    const std::string hash =
        op[0] == '<' ? core::Sha256Hex(op.substr(1)) : std::string(op.substr(1));
    if (op[0] == '!' && !ValidHash(hash)) return RuleError::kBadHash;
    auto it = std::find(u->passwords.begin(), u->passwords.end(), hash);
    if (it == u->passwords.end()) return RuleError::kNoSuchPass;
    u->passwords.erase(it);
  } else if (op.size() >= 2 && op.front() == '(' && op.back() == ')') {
    AclSelector s = NewSelector();
    for (std::string_view rule : core::SplitWords(op.substr(1, op.size() - 2))) {
      if (RuleError e = ApplySelectorRule(&s, rule); e != RuleError::kNone) return e;
    }
    u->selectors.push_back(std::move(s));
  } else if (is("clearselectors")) {
    u->selectors.resize(1);
  } else if (is("reset")) {
    ApplyUserRule(u, "resetpass");
    ApplySelectorRule(&u->selectors[0], "resetkeys");
    ApplySelectorRule(&u->selectors[0],
                      AclNewUsersAllowAllChannels() ? "allchannels" : "resetchannels");
    u->enabled = false;
    u->sanitize_payload = true;
    u->selectors.resize(1);
    ApplySelectorRule(&u->selectors[0], "-@all");
  } else {
    return ApplySelectorRule(&u->selectors[0], op);
  }
  return RuleError::kNone;
}

void AppendKeyPattern(std::string* out, const AclKeyPattern& k) {
  core::Append(out, k.perms == kAclKeyReadWrite ? "~" : k.perms == kAclKeyRead ? "%R~" : "%W~",
               k.pattern);
}

// ACLDescribeSelector: keys, channels, commands.
std::string DescribeSelector(const AclSelector& s) {
  std::string out;
  if (s.all_keys) {
    out = "~* ";
  } else {
    for (const AclKeyPattern& k : s.keys) {
      AppendKeyPattern(&out, k);
      out += ' ';
    }
  }
  if (s.all_channels) {
    out += "&* ";
  } else {
    out += "resetchannels ";
    for (const std::string& c : s.channels) core::Append(&out, "&", c, " ");
  }
  out += DescribeAclCommands(s);
  return out;
}

bool SelectorAllowsKey(const AclSelector& s, std::string_view key, uint8_t perms) {
  if (s.all_keys) return true;
  return std::any_of(s.keys.begin(), s.keys.end(), [&](const AclKeyPattern& k) {
    return (k.perms & perms) == perms && core::GlobMatch(k.pattern, key);
  });
}

bool SelectorAllowsChannel(const AclSelector& s, std::string_view channel, bool is_pattern) {
  if (s.all_channels) return true;
  return std::any_of(s.channels.begin(), s.channels.end(), [&](const std::string& p) {
    return is_pattern ? p == channel : core::GlobMatch(p, channel);
  });
}

// The channels a command line names that ACL checks (Redis' channel specs with the PUBLISH or
// SUBSCRIBE flag): first argument index, last (exclusive), and whether they are patterns.
struct ChannelArgs {
  size_t first = 0, end = 0;
  bool patterns = false;
};
ChannelArgs ChannelArgsOf(const CommandSpec& spec, ArgSlice args) {
  const std::string_view n = spec.name;
  if (n == "publish" || n == "spublish") return {1, 2, false};
  if (n == "subscribe" || n == "ssubscribe") return {1, args.size(), false};
  if (n == "psubscribe") return {1, args.size(), true};
  return {};
}

// ACLSelectorCheckCmd.
AclCheck CheckSelector(const AclSelector& s, const CommandSpec& spec, const SubCommand* sub,
                       uint32_t id, ArgSlice args, const std::vector<int>* keys) {
  if (!s.all_commands && !(spec.flags & kNoAuth) && !s.Allows(id)) {
    const size_t arg = sub != nullptr ? 2 : 1;
    auto it = std::find_if(s.first_args.begin(), s.first_args.end(),
                           [&](const auto& fa) { return fa.first == id; });
    const bool allowed_first =
        it != s.first_args.end() && args.size() > arg &&
        std::any_of(it->second.begin(), it->second.end(),
                    [&](const std::string& a) { return core::EqualsIgnoreCase(a, args[arg]); });
    if (!allowed_first) return {AclDenial::kCommand, 0};
  }
  if (!s.all_keys && keys != nullptr) {
    for (size_t k = 0; k < keys->size(); ++k) {
      const int pos = (*keys)[k];
      const AclCommandInfo& info = Table().by_id[id];
      const std::optional<uint8_t> perms =
          info.per_call_key_flags ? PermsOfKeyFlags(KeyFlagsOf(spec, args, k))
                                  : (k == 0 ? info.first_key_perms : info.other_key_perms);
      if (perms.has_value() && !SelectorAllowsKey(s, args[pos], *perms)) {
        return {AclDenial::kKey, pos};
      }
    }
  }
  if (!s.all_channels) {
    const ChannelArgs ch = ChannelArgsOf(spec, args);
    for (size_t i = ch.first; i < ch.end; ++i) {
      if (!SelectorAllowsChannel(s, args[i], ch.patterns)) return {AclDenial::kChannel, int(i)};
    }
  }
  return {};
}

}  // namespace

bool AclNewUsersAllowAllChannels() {
  return g_new_selectors_allow_channels.load(std::memory_order_relaxed);
}

void SetAclNewUsersAllowAllChannels(bool all) {
  g_new_selectors_allow_channels.store(all, std::memory_order_relaxed);
}

AclUser::AclUser(std::string user_name) : name(std::move(user_name)) {
  selectors.push_back(NewSelector());
}

void AclUser::Seal() {
  const AclSelector& root = selectors[0];
  unrestricted = root.all_commands && root.all_keys && root.all_channels;
}

bool AclHasSpaces(std::string_view s) {
  return std::any_of(s.begin(), s.end(),
                     [](char c) { return c == '\0' || std::isspace(static_cast<unsigned char>(c)); });
}

std::span<const std::string_view> AclCategories() { return kCategories; }

uint32_t AclCategoryBit(std::string_view name) {
  for (size_t i = 0; i < std::size(kCategories); ++i) {
    if (core::EqualsIgnoreCase(kCategories[i], name)) return uint32_t(1) << i;
  }
  return 0;
}

std::string ApplyAclRules(AclUser* user, std::span<const std::string_view> rules) {
  // ACLMergeSelectorArguments: "(" ... ")" spread over several arguments is one rule.
  std::vector<std::string> merged;
  std::string open;
  size_t open_at = 0;
  bool in_selector = false;
  for (size_t i = 0; i < rules.size(); ++i) {
    const std::string_view op = rules[i];
    if (!in_selector && !op.empty() && op.front() == '(' && op.back() != ')') {
      open = std::string(op);
      open_at = i;
      in_selector = true;
      continue;
    }
    if (in_selector) {
      core::Append(&open, " ", op);
      if (!op.empty() && op.back() == ')') {
        merged.push_back(std::move(open));
        in_selector = false;
      }
      continue;
    }
    merged.emplace_back(op);
  }
  if (in_selector) {
    return core::Concat("Unmatched parenthesis in acl selector starting at '", rules[open_at],
                        "'.");
  }
  for (const std::string& op : merged) {
    if (RuleError e = ApplyUserRule(user, op); e != RuleError::kNone) {
      return core::Concat("Error in ACL SETUSER modifier '", op, "': ", RuleErrorText(e));
    }
  }
  user->Seal();
  return "";
}

std::string DescribeAclCommands(const AclSelector& s) {
  std::string out = s.future_commands ? "+@all" : "-@all";
  if (!s.command_rules.empty()) core::Append(&out, " ", s.command_rules);
  return out;
}

std::string DescribeAclKeys(const AclSelector& s) {
  if (s.all_keys) return "~*";
  std::string out;
  for (const AclKeyPattern& k : s.keys) {
    if (!out.empty()) out += ' ';
    AppendKeyPattern(&out, k);
  }
  return out;
}

std::string DescribeAclChannels(const AclSelector& s) {
  if (s.all_channels) return "&*";
  std::string out;
  for (const std::string& c : s.channels) {
    if (!out.empty()) out += ' ';
    core::Append(&out, "&", c);
  }
  return out;
}

std::string DescribeAclUser(const AclUser& u) {
  std::string out = u.enabled ? "on " : "off ";
  if (u.nopass) out += "nopass ";
  out += u.sanitize_payload ? "sanitize-payload " : "skip-sanitize-payload ";
  for (const std::string& p : u.passwords) core::Append(&out, "#", p, " ");
  out += DescribeSelector(u.selectors[0]);
  for (size_t i = 1; i < u.selectors.size(); ++i) {
    core::Append(&out, " (", DescribeSelector(u.selectors[i]), ")");
  }
  return out;
}

AclCheck CheckAclCommand(const AclUser& user, const CommandSpec& spec, const SubCommand* sub,
                         ArgSlice args) {
  const uint32_t id = StatsIdOf(spec, sub);
  // The key positions are found once for all selectors, and only when one needs them, into a
  // vector each thread reuses (no allocation per command; nothing below calls back here).
  thread_local std::vector<int> keys;
  keys.clear();
  bool keys_found = false, keys_ok = false;
  AclCheck relevant{AclDenial::kCommand, 0};
  for (const AclSelector& s : user.selectors) {
    if (!s.all_keys && !keys_found) {
      keys_found = true;
      keys_ok = CommandKeyPositions(spec, args, &keys);
    }
    const AclCheck c = CheckSelector(s, spec, sub, id, args, keys_ok ? &keys : nullptr);
    if (c.denial == AclDenial::kNone) return c;
    if (c.denial > relevant.denial || (c.denial == relevant.denial && c.arg > relevant.arg)) {
      relevant = c;
    }
  }
  return relevant;
}

bool AclAllowsKey(const AclUser& user, std::string_view key, uint8_t perms) {
  return std::any_of(user.selectors.begin(), user.selectors.end(),
                     [&](const AclSelector& s) { return SelectorAllowsKey(s, key, perms); });
}

bool AclAllowsChannel(const AclUser& user, std::string_view channel, bool is_pattern) {
  return std::any_of(user.selectors.begin(), user.selectors.end(), [&](const AclSelector& s) {
    return SelectorAllowsChannel(s, channel, is_pattern);
  });
}

std::string_view AclCommandName(const CommandSpec& spec, const SubCommand* sub) {
  return Table().by_id[StatsIdOf(spec, sub)].full_name;
}

std::string AclDenialMessage(const AclUser& user, const AclCheck& check, const CommandSpec& spec,
                             const SubCommand* sub, ArgSlice args, bool verbose) {
  switch (check.denial) {
    case AclDenial::kKey:
      if (!verbose) return "No permissions to access a key";
      return core::Concat("User ", user.name, " has no permissions to access the '",
                          args[check.arg], "' key");
    case AclDenial::kChannel:
      if (!verbose) return "No permissions to access a channel";
      return core::Concat("User ", user.name, " has no permissions to access the '",
                          args[check.arg], "' channel");
    default:
      return core::Concat("User ", user.name, " has no permissions to run the '",
                          AclCommandName(spec, sub), "' command");
  }
}

}  // namespace shardis::server
