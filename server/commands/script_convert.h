// Values between Lua and replies, as Redis 7 converts them (docs/
// server.md, "Scripts"): a command's RESP2 reply into a Lua value for
// redis.call, a script's result into a reply, and Redis's error tables.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "server/commands/reply.h"

struct lua_State;

namespace shmkv {
namespace cmd {

// Pushes Redis's error table {err = "CODE message"}: a text beginning
// with '-' takes its first word as the code, any other gets ERR.
void PushError(lua_State* L, std::string_view text);
// "-" and `text` (an error reply's text with its code).
std::string Dashed(std::string_view text);
// The same, raised as a Lua error.
[[noreturn]] void RaiseError(lua_State* L, std::string_view text);
// A number as redis.call passes it: 17 significant digits.
std::string NumberArg(double n);
// One RESP2 reply read into a Lua value: the bytes it took, 0 when it
// does not parse (or nests past 64 levels).
size_t PushReply(lua_State* L, std::string_view s, int depth);
// The Lua value at the top of the stack as a reply, in r's protocol;
// script_resp is the script's own (redis.setresp), which decides what a
// boolean is.
void ToReply(lua_State* L, int script_resp, Reply* r);
// The error handler scripts run under: Redis's error table, with the
// source and line the error was raised at.
int ErrorHandler(lua_State* L);

}  // namespace cmd
}  // namespace shmkv
