// tawsim: placeholder main until the topology loader lands.
#include <cstdio>
int main() {
  std::puts("tawsim " TAWPIPE_VERSION);
  return 0;
}
