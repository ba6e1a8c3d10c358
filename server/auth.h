// AUTH (auth.cc) and what the connection layer asks about authentication; the users themselves
// are in acl_users.h.
//
// A client starts as the default user, authenticated unless the default user has a password or
// is off (AuthRequired); until then it may only run the commands flagged kNoAuth (AUTH, HELLO,
// QUIT, RESET). The connection checks ConnectionState::authenticated first, so an authenticated
// client (the common case) pays nothing.
#pragma once

#include <string_view>

#include "server/acl_users.h"

namespace shardis::server {

// Redis' error texts.
inline constexpr std::string_view kWrongPassErr =
    "WRONGPASS invalid username-password pair or user is disabled.";

}  // namespace shardis::server
