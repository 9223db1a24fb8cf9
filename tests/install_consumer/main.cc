#include <shmc/shm_array.h>

#include <cstdio>

int main() {
  shmc::ShmArray<int, shmc::HEAP> a;
  if (!a.InitForWrite("", 16)) return 1;
  a[3] = 42;
  std::printf("consumer ok: %d\n", static_cast<int>(a[3]));
  return a[3] == 42 ? 0 : 1;
}
