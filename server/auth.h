// AUTH and the default user (auth.cc): --requirepass, AUTH, ACL WHOAMI/LIST/USERS/CAT.
//
// There is one user, "default". With an empty password it is "nopass" and every client starts
// authenticated; with a password, a client starts unauthenticated and may only run the commands
// flagged kNoAuth (AUTH, HELLO, QUIT, RESET) until AUTH succeeds. The connection checks
// ConnectionState::authenticated first, so an authenticated client (the common case) pays
// nothing; only an unauthenticated one reads AuthRequired().
#pragma once

#include <string>
#include <string_view>

namespace shardis::server {

// The password of the default user ("" = nopass). Safe from any thread: CONFIG GET/SET
// requirepass call these. Changing it does not log out clients that are authenticated already,
// as in Redis.
std::string RequirePass();
void SetRequirePass(std::string_view password);

// Whether a client that has not authenticated must do so now (a password is set). One relaxed
// atomic load.
bool AuthRequired();

// Whether user/password authenticate as the default user (in constant time for the password).
bool CheckPassword(std::string_view user, std::string_view password);

// Redis' error texts.
inline constexpr std::string_view kWrongPassErr =
    "WRONGPASS invalid username-password pair or user is disabled.";

}  // namespace shardis::server
