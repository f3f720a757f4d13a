/* A statically linked program that leaves a mark when it runs (argv[0] +
 * ".ran"): `coload run --dry-run` must list it without running it, which
 * LD_TRACE_LOADED_OBJECTS alone would not do for a program without a loader. */
#include <stdio.h>
#include <string.h>

int main(int argc, char** argv) {
  (void)argc;
  char path[4096];
  snprintf(path, sizeof path, "%s.ran", argv[0]);
  FILE* mark = fopen(path, "w");
  if (!mark) return 1;
  fclose(mark);
  return 0;
}
