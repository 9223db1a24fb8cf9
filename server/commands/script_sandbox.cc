// The sandbox scripts run in (server/commands/script_sandbox.h).
#include "server/commands/script_sandbox.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <cstring>
#include <iterator>

#include "server/commands/script_convert.h"
#include "server/commands/script_lua.h"

extern "C" {
int luaopen_cjson(lua_State* L);  // Debian's lua-cjson-dev
int luaopen_bit(lua_State* L);    // Debian's lua-bitop-dev
}

namespace shmkv {
namespace cmd {

namespace {

// __index of the globals' proxy: a global that does not exist is an
// error, as in Redis.
int GlobalIndex(lua_State* L) {
  // While a library loads its code sees the load-time globals instead.
  lua_getfield(L, LUA_REGISTRYINDEX, kLoadingLib);
  if (!lua_istable(L, -1)) {
    lua_pop(L, 1);
    lua_getfield(L, LUA_REGISTRYINDEX, kRealGlobals);
  }
  lua_pushvalue(L, 2);
  lua_rawget(L, -2);
  if (!lua_isnil(L, -1)) return 1;
  const char* name = lua_tostring(L, 2);
  return luaL_error(L, "Script attempted to access nonexistent global "
                       "variable '%s'", name == nullptr ? "?" : name);
}

int ReadonlyError(lua_State* L) {
  return luaL_error(L, "Attempt to modify a readonly table");
}

// rawset that refuses the protected tables.
int SafeRawset(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_getfield(L, LUA_REGISTRYINDEX, kProxies);
  lua_pushvalue(L, 1);
  lua_rawget(L, -2);
  if (lua_toboolean(L, -1)) return ReadonlyError(L);
  lua_pop(L, 2);
  luaL_checkany(L, 2);
  luaL_checkany(L, 3);
  lua_settop(L, 3);
  lua_rawset(L, 1);
  return 1;
}

// loadstring / load without precompiled chunks.
int LoadChecked(lua_State* L, const char* s, size_t n, const char* name) {
  if (n > 0 && s[0] == LUA_SIGNATURE[0]) {
    lua_pushnil(L);
    lua_pushliteral(L, "bytecode loading is not allowed");
    return 2;
  }
  if (luaL_loadbuffer(L, s, n, name) != 0) {
    lua_pushnil(L);
    lua_insert(L, -2);
    return 2;
  }
  return 1;
}

int SafeLoadstring(lua_State* L) {
  size_t n = 0;
  const char* s = luaL_checklstring(L, 1, &n);
  const char* name = luaL_optstring(L, 2, s);
  return LoadChecked(L, s, n, name);
}

int SafeLoad(lua_State* L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  const char* name = luaL_optstring(L, 2, "=(load)");
  luaL_Buffer b;
  lua_settop(L, 2);
  luaL_buffinit(L, &b);
  for (;;) {
    lua_pushvalue(L, 1);
    lua_call(L, 0, 1);
    if (lua_isnil(L, -1)) {
      lua_pop(L, 1);
      break;
    }
    if (!lua_isstring(L, -1)) {
      return luaL_error(L, "reader function must return a string");
    }
    size_t len = lua_objlen(L, -1);
    if (len == 0) {
      lua_pop(L, 1);
      break;
    }
    luaL_addvalue(&b);
  }
  luaL_pushresult(&b);
  size_t n = 0;
  const char* s = lua_tolstring(L, -1, &n);
  return LoadChecked(L, s, n, name);
}

// math.random / math.randomseed as Redis's: the POSIX 48-bit generator
// (so math.randomseed(n) draws what Redis draws after it), one sequence
// across the process's scripts, seeded with 0 when the state is made.
unsigned short g_rand[3] = {0x330e, 0, 0};
void SeedRandom(int32_t seed) {
  g_rand[0] = 0x330e;
  g_rand[1] = static_cast<unsigned short>(seed & 0xffff);
  g_rand[2] = static_cast<unsigned short>((static_cast<uint32_t>(seed) >> 16) &
                                          0xffff);
}

int MathRandom(lua_State* L) {
  constexpr double kMax = 2147483647.0;
  double r = static_cast<double>(nrand48(g_rand) % 2147483647L) / kMax;
  switch (lua_gettop(L)) {
    case 0:
      lua_pushnumber(L, r);
      break;
    case 1: {
      int u = luaL_checkint(L, 1);
      luaL_argcheck(L, 1 <= u, 1, "interval is empty");
      lua_pushnumber(L, std::floor(r * u) + 1);
      break;
    }
    case 2: {
      int l = luaL_checkint(L, 1);
      int u = luaL_checkint(L, 2);
      luaL_argcheck(L, l <= u, 2, "interval is empty");
      lua_pushnumber(L, std::floor(r * (u - l + 1)) + l);
      break;
    }
    default:
      return luaL_error(L, "wrong number of arguments");
  }
  return 1;
}

int MathRandomseed(lua_State* L) {
  SeedRandom(luaL_checkint(L, 1));
  return 0;
}

// redis.error_reply(text) / redis.status_reply(text)
int ErrorReply(lua_State* L) {
  if (lua_gettop(L) != 1 || lua_type(L, -1) != LUA_TSTRING) {
    PushError(L, "wrong number or type of arguments");
    return 1;
  }
  size_t n = 0;
  const char* p = lua_tolstring(L, 1, &n);
  std::string text(p, n);
  PushError(L, text[0] == '-' ? text : Dashed(text));
  return 1;
}

int StatusReply(lua_State* L) {
  if (lua_gettop(L) != 1 || lua_type(L, -1) != LUA_TSTRING) {
    PushError(L, "wrong number or type of arguments");
    return 1;
  }
  lua_newtable(L);
  lua_pushvalue(L, 1);
  lua_setfield(L, -2, "ok");
  return 1;
}

// redis.sha1hex(string)
int Sha1HexLua(lua_State* L) {
  if (lua_gettop(L) != 1) RaiseError(L, "wrong number of arguments");
  size_t n = 0;
  const char* p = lua_tolstring(L, 1, &n);
  std::string hex = Sha1Hex(p == nullptr ? std::string_view()
                                         : std::string_view(p, n));
  lua_pushlstring(L, hex.data(), hex.size());
  return 1;
}

// redis.log(level, message, ...): to the worker's log (stderr).
int LogLua(lua_State* L) {
  int argc = lua_gettop(L);
  if (argc < 2) RaiseError(L, "redis.log() requires two arguments or more.");
  if (!lua_isnumber(L, 1)) {
    RaiseError(L, "First argument must be a number (log level).");
  }
  lua_Number level = lua_tonumber(L, 1);
  if (level < 0 || level > 3) RaiseError(L, "Invalid debug level.");
  if (level < 2) return 0;  // below notice: not logged, as Redis's default
  std::string msg;
  for (int j = 2; j <= argc; ++j) {
    size_t n = 0;
    const char* p = lua_tolstring(L, j, &n);
    if (p == nullptr) continue;
    if (!msg.empty()) msg += ' ';
    msg.append(p, n);
  }
  std::fprintf(stderr, "shmkv script: %s\n", msg.c_str());
  return 0;
}

// redis.setresp(2 | 3)
int SetResp(lua_State* L) {
  if (lua_gettop(L) != 1) {
    RaiseError(L, "redis.setresp() requires one argument.");
  }
  lua_Number v = lua_tonumber(L, 1);
  if (v != 2 && v != 3) RaiseError(L, "RESP version must be 2 or 3.");
  LuaScripts::SetScriptProtocol(static_cast<int>(v));
  return 0;
}

int ReturnTrue(lua_State* L) {
  lua_pushboolean(L, 1);
  return 1;
}
int ReturnFalse(lua_State* L) {
  lua_pushboolean(L, 0);
  return 1;
}
int ReturnNothing(lua_State*) { return 0; }

// set_repl(flags): replication is not shmkv's; checked as Redis checks.
int SetRepl(lua_State* L) {
  if (lua_gettop(L) != 1) {
    RaiseError(L, "redis.set_repl() requires one argument.");
  }
  lua_Number v = lua_tonumber(L, 1);
  if (v < 0 || v > 3) {
    RaiseError(L, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, "
                  "REPL_ALL or REPL_NONE.");
  }
  return 0;
}


// __index of the load-time `redis` table: its entries (in the registry),
// and what it lacks is an error.
constexpr const char* kLoadRedis = "shmkv.loadredis";
int LoadRedisIndex(lua_State* L) {
  lua_getfield(L, LUA_REGISTRYINDEX, kLoadRedis);
  lua_pushvalue(L, 2);
  lua_rawget(L, -2);
  if (!lua_isnil(L, -1)) return 1;
  const char* name = lua_tostring(L, 2);
  return luaL_error(L, "Script attempted to access nonexistent global "
                       "variable '%s'", name == nullptr ? "?" : name);
}

// Reads a `flags` table of redis.register_function into *bits.
bool ReadFunctionFlags(lua_State* L, int at, unsigned* bits) {
  *bits = 0;
  lua_pushnil(L);
  while (lua_next(L, at) != 0) {
    size_t n = 0;
    const char* f = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &n)
                                                    : nullptr;
    bool known = false;
    for (unsigned i = 0; f != nullptr && i < std::size(kFunctionFlagNames);
         ++i) {
      if (std::string_view(f, n) == kFunctionFlagNames[i]) {
        *bits |= 1u << i;
        known = true;
      }
    }
    lua_pop(L, 1);
    if (!known) {
      lua_pop(L, 1);
      return false;
    }
  }
  return true;
}

// redis.register_function(name, callback) or
// redis.register_function{function_name=, callback=, flags=, description=}:
// only while FUNCTION LOAD runs a library's code.
int RegisterFunction(lua_State* L) {
  lua_getfield(L, LUA_REGISTRYINDEX, kRegistered);
  const int registered = lua_gettop(L);
  if (!lua_istable(L, registered)) {
    RaiseError(L, "redis.register_function can only be called on FUNCTION "
                  "LOAD command");
  }
  const int argc = registered - 1;
  int name_at = 0, cb_at = 0, desc_at = 0;
  unsigned flags = 0;
  if (argc == 1) {
    if (!lua_istable(L, 1)) {
      RaiseError(L, "calling redis.register_function with a single argument "
                    "is only applicable to Lua table (representing named "
                    "arguments).");
    }
    lua_pushnil(L);
    while (lua_next(L, 1) != 0) {
      if (lua_type(L, -2) != LUA_TSTRING) {
        RaiseError(L, "named argument key given to redis.register_function "
                      "is not a string");
      }
      std::string_view key = lua_tostring(L, -2);
      const int v = lua_gettop(L);
      if (key == "function_name") {
        if (!lua_isstring(L, v)) {
          RaiseError(L, "function_name argument given to "
                        "redis.register_function must be a string");
        }
        name_at = v;
      } else if (key == "description") {
        if (!lua_isstring(L, v)) {
          RaiseError(L, "description argument given to "
                        "redis.register_function must be a string");
        }
        desc_at = v;
      } else if (key == "callback") {
        if (!lua_isfunction(L, v)) {
          RaiseError(L, "callback argument given to redis.register_function "
                        "must be a function");
        }
        cb_at = v;
      } else if (key == "flags") {
        if (!lua_istable(L, v)) {
          RaiseError(L, "flags argument to redis.register_function must be "
                        "a table representing function flags");
        }
        if (!ReadFunctionFlags(L, v, &flags)) {
          RaiseError(L, "unknown flag given");
        }
      } else {
        RaiseError(L, "unknown argument given to redis.register_function");
      }
      lua_pushvalue(L, -2);  // the key, for lua_next; the value stays
    }
    if (name_at == 0) {
      RaiseError(L, "redis.register_function must get a function name "
                    "argument");
    }
    if (cb_at == 0) {
      RaiseError(L, "redis.register_function must get a callback argument");
    }
  } else if (argc == 2) {
    if (!lua_isstring(L, 1)) {
      RaiseError(L, "first argument to redis.register_function must be a "
                    "string");
    }
    if (!lua_isfunction(L, 2)) {
      RaiseError(L, "second argument to redis.register_function must be a "
                    "function");
    }
    name_at = 1;
    cb_at = 2;
  } else {
    RaiseError(L, "wrong number of arguments to redis.register_function");
  }
  size_t n = 0;
  const char* name = lua_tolstring(L, name_at, &n);
  if (!ValidFunctionName(std::string_view(name, n))) {
    RaiseError(L, "Library names can only contain letters, numbers, or "
                  "underscores(_) and must be at least one character long");
  }
  const size_t count = lua_objlen(L, registered);
  for (size_t i = 1; i <= count; ++i) {
    lua_rawgeti(L, registered, static_cast<int>(i));
    lua_getfield(L, -1, "name");
    size_t m = 0;
    const char* other = lua_tolstring(L, -1, &m);
    bool same = other != nullptr && m == n && std::memcmp(other, name, n) == 0;
    lua_pop(L, 2);
    if (same) RaiseError(L, "Function already exists in the library");
  }
  lua_createtable(L, 0, 4);
  lua_pushvalue(L, name_at);
  lua_setfield(L, -2, "name");
  lua_pushvalue(L, cb_at);
  lua_setfield(L, -2, "cb");
  lua_pushnumber(L, flags);
  lua_setfield(L, -2, "flags");
  if (desc_at != 0) {
    lua_pushvalue(L, desc_at);
    lua_setfield(L, -2, "desc");
  }
  lua_rawseti(L, registered, static_cast<int>(count + 1));
  return 0;
}

// Makes a locked proxy of the table at the top (replacing it): reads go
// to the table (`index`: or through this function), writes fail.
void Protect(lua_State* L, lua_CFunction index) {
  int real = lua_gettop(L);
  lua_newtable(L);  // the proxy
  lua_newtable(L);  // its metatable
  if (index != nullptr) {
    lua_pushcfunction(L, index);
  } else {
    lua_pushvalue(L, real);
  }
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, ReadonlyError);
  lua_setfield(L, -2, "__newindex");
  lua_pushboolean(L, 0);
  lua_setfield(L, -2, "__metatable");
  lua_setmetatable(L, -2);
  lua_getfield(L, LUA_REGISTRYINDEX, kProxies);
  lua_pushvalue(L, -2);
  lua_pushboolean(L, 1);
  lua_rawset(L, -3);
  lua_pop(L, 1);
  lua_replace(L, real);
}

void Open(lua_State* L, lua_CFunction f, const char* name) {
  lua_pushcfunction(L, f);
  lua_pushstring(L, name);
  lua_call(L, 1, 0);
}

}  // namespace

void OpenSandbox(lua_State* L, lua_CFunction call, lua_CFunction pcall) {
  Open(L, luaopen_base, "");
  Open(L, luaopen_table, LUA_TABLIBNAME);
  Open(L, luaopen_string, LUA_STRLIBNAME);
  Open(L, luaopen_math, LUA_MATHLIBNAME);
  lua_pushcfunction(L, luaopen_cjson);
  lua_call(L, 0, 1);
  lua_setglobal(L, "cjson");
  lua_pushcfunction(L, luaopen_bit);
  lua_call(L, 0, 0);
  for (const char* name : {"dofile", "loadfile", "print", "getfenv",
                           "setfenv", "newproxy", "module", "require",
                           "package", "io", "os", "debug"}) {
    lua_pushnil(L);
    lua_setglobal(L, name);
  }
  lua_register(L, "loadstring", SafeLoadstring);
  lua_register(L, "load", SafeLoad);
  lua_register(L, "rawset", SafeRawset);
  lua_getglobal(L, "math");
  lua_pushcfunction(L, MathRandom);
  lua_setfield(L, -2, "random");
  lua_pushcfunction(L, MathRandomseed);
  lua_setfield(L, -2, "randomseed");
  lua_pop(L, 1);

  // The redis library.
  lua_newtable(L);
  struct Fn {
    const char* name;
    lua_CFunction f;
  };
  for (const Fn& fn : {Fn{"call", call}, Fn{"pcall", pcall},
                       Fn{"error_reply", ErrorReply},
                       Fn{"status_reply", StatusReply},
                       Fn{"sha1hex", Sha1HexLua}, Fn{"log", LogLua},
                       Fn{"setresp", SetResp}, Fn{"set_repl", SetRepl},
                       Fn{"replicate_commands", ReturnTrue},
                       Fn{"breakpoint", ReturnFalse},
                       Fn{"debug", ReturnNothing}}) {
    lua_pushcfunction(L, fn.f);
    lua_setfield(L, -2, fn.name);
  }
  struct Num {
    const char* name;
    int v;
  };
  for (const Num& n : {Num{"LOG_DEBUG", 0}, Num{"LOG_VERBOSE", 1},
                       Num{"LOG_NOTICE", 2}, Num{"LOG_WARNING", 3},
                       Num{"REPL_NONE", 0}, Num{"REPL_AOF", 1},
                       Num{"REPL_SLAVE", 2}, Num{"REPL_REPLICA", 2},
                       Num{"REPL_ALL", 3},
                       Num{"REDIS_VERSION_NUM", 0x070000}}) {
    lua_pushnumber(L, n.v);
    lua_setfield(L, -2, n.name);
  }
  lua_pushstring(L, "7.0.0");
  lua_setfield(L, -2, "REDIS_VERSION");
  lua_setglobal(L, "redis");

  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, kScripts);
  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, kProxies);
  lua_pushcfunction(L, ErrorHandler);
  lua_setfield(L, LUA_REGISTRYINDEX, kErrorHandler);

  // The load-time `redis` (FUNCTION LOAD): register_function, log and
  // the constants, behind a locked proxy whose missing fields are errors;
  // the load-time globals hold only it.
  lua_getglobal(L, "redis");
  lua_newtable(L);
  lua_pushcfunction(L, RegisterFunction);
  lua_setfield(L, -2, "register_function");
  lua_pushcfunction(L, LogLua);
  lua_setfield(L, -2, "log");
  for (const char* k : {"LOG_DEBUG", "LOG_VERBOSE", "LOG_NOTICE",
                        "LOG_WARNING", "REDIS_VERSION_NUM", "REDIS_VERSION"}) {
    lua_getfield(L, -2, k);
    lua_setfield(L, -2, k);
  }
  lua_remove(L, -2);
  lua_setfield(L, LUA_REGISTRYINDEX, kLoadRedis);
  lua_newtable(L);
  Protect(L, LoadRedisIndex);
  lua_newtable(L);
  lua_insert(L, -2);
  lua_setfield(L, -2, "redis");
  lua_setfield(L, LUA_REGISTRYINDEX, kLoadGlobals);
  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, kFunctions);

  // Every library table behind a proxy, then the globals themselves.
  for (const char* lib : {"string", "table", "math", "coroutine", "cjson",
                          "bit", "redis"}) {
    lua_getglobal(L, lib);
    if (!lua_istable(L, -1)) {
      lua_pop(L, 1);
      continue;
    }
    Protect(L, nullptr);
    lua_setglobal(L, lib);
  }
  // Strings' methods through the string proxy; their metatable hidden.
  lua_pushliteral(L, "");
  if (lua_getmetatable(L, -1)) {
    lua_getglobal(L, "string");
    lua_setfield(L, -2, "__index");
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "__metatable");
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  lua_pushvalue(L, LUA_GLOBALSINDEX);
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, kRealGlobals);
  Protect(L, GlobalIndex);
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, "shmkv.proxy");
  lua_getfield(L, LUA_REGISTRYINDEX, kRealGlobals);
  lua_pushvalue(L, -2);
  lua_setfield(L, -2, "_G");  // _G is the proxy
  lua_pop(L, 1);
  lua_replace(L, LUA_GLOBALSINDEX);  // every function's globals: the proxy
}

bool ValidFunctionName(std::string_view name) {
  if (name.empty()) return false;
  for (char ch : name) {
    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
          (ch >= '0' && ch <= '9') || ch == '_')) {
      return false;
    }
  }
  return true;
}

void ClearProxies(lua_State* L) {
  lua_getfield(L, LUA_REGISTRYINDEX, kProxies);
  lua_pushnil(L);
  while (lua_next(L, -2) != 0) {
    lua_pop(L, 1);
    for (;;) {
      lua_pushnil(L);
      if (lua_next(L, -2) == 0) break;
      lua_pop(L, 1);
      lua_pushnil(L);
      lua_rawset(L, -3);
    }
  }
  lua_pop(L, 1);
}

}  // namespace cmd
}  // namespace shmkv
