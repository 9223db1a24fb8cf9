// The sandbox scripts run in (docs/server.md, "Scripts"): the libraries
// a script sees, Redis's `redis` library, and the locked proxies that
// keep one script from changing what the next one runs.
#pragma once

#include <lua5.1/lua.hpp>

#include <string_view>

namespace shmkv {
namespace cmd {

// Registry fields of the Lua state.
constexpr const char* kScripts = "shmkv.scripts";  // sha -> function
constexpr const char* kRealGlobals = "shmkv.globals";
constexpr const char* kProxies = "shmkv.proxies";  // proxy -> true
constexpr const char* kErrorHandler = "shmkv.errh";
// Function libraries (server/commands/function_family.cc): the
// callbacks by lower-case function name; while a library loads, the
// globals its code sees (only `redis`, of register_function, log and the
// constants, as in Redis), and what it registered so far: an array of
// {name, cb, flags, desc}; kRegistered exists only while the code runs
// (redis.register_function is refused whenever it is absent), the last
// load's array waits under kLoaded until it is adopted or forgotten.
constexpr const char* kFunctions = "shmkv.functions";
constexpr const char* kLoadingLib = "shmkv.loading";
constexpr const char* kLoadGlobals = "shmkv.loadglobals";
constexpr const char* kRegistered = "shmkv.registered";
constexpr const char* kLoaded = "shmkv.loaded";

// A function's flags (redis.register_function's `flags`), in the order
// FUNCTION LIST names them.
constexpr const char* kFunctionFlagNames[] = {
    "no-writes", "allow-oom", "allow-stale", "no-cluster",
    "allow-cross-slot-keys"};
constexpr unsigned kFunctionNoWrites = 1;
// Whether `name` is a library's or function's name Redis accepts:
// letters, digits and underscores, at least one.
bool ValidFunctionName(std::string_view name);

// Opens the libraries, the redis library (its call and pcall given), the
// registry's fields, and makes every library table and the globals
// themselves locked proxies: the state's globals from here on.
void OpenSandbox(lua_State* L, lua_CFunction call, lua_CFunction pcall);
// Empties every proxy (a script may have written one raw).
void ClearProxies(lua_State* L);

}  // namespace cmd
}  // namespace shmkv
