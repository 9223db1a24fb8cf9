// The sandbox scripts run in (docs/server.md, "Scripts"): the libraries
// a script sees, Redis's `redis` library, and the locked proxies that
// keep one script from changing what the next one runs.
#pragma once

#include <lua5.1/lua.hpp>

namespace shmkv {
namespace cmd {

// Registry fields of the Lua state.
constexpr const char* kScripts = "shmkv.scripts";  // sha -> function
constexpr const char* kRealGlobals = "shmkv.globals";
constexpr const char* kProxies = "shmkv.proxies";  // proxy -> true
constexpr const char* kErrorHandler = "shmkv.errh";

// Opens the libraries, the redis library (its call and pcall given), the
// registry's fields, and makes every library table and the globals
// themselves locked proxies: the state's globals from here on.
void OpenSandbox(lua_State* L, lua_CFunction call, lua_CFunction pcall);
// Empties every proxy (a script may have written one raw).
void ClearProxies(lua_State* L);

}  // namespace cmd
}  // namespace shmkv
