// The value that holds a store's function libraries (server/commands/
// function_family.cc): read and written here, checked by the tests.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "server/store/store.h"

namespace shmkv {
namespace cmd {

struct Library {
  std::string name;
  std::string code;  // whole, shebang included
};

// False when `v` is not a functions value (every length is checked
// against what is left); an empty value is no library, generation 0.
bool ParseLibraries(std::string_view v, uint64_t* generation,
                    std::vector<Library>* libs);
std::string SerializeLibraries(uint64_t generation,
                               const std::vector<Library>& libs);
// The code of every library `store` holds (RDB files save them): false
// with *why when the value cannot be read.
bool StoredLibraryCodes(Store* store, std::vector<std::string>* codes,
                        std::string* why);

}  // namespace cmd
}  // namespace shmkv
